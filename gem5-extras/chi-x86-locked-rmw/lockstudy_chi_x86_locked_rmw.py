"""Marker of lockstudy's chi-x86-locked-rmw extra, embedded in a CHI gem5 built with it.

lockstudy's gem5 probe imports this module: a binary that has it compiled
CHI with snoops held while an x86 locked read-modify-write is under way
(chi_locked_rmw.py beside this file says why and how).
"""

NAME = "chi-x86-locked-rmw"
VERSION = 1
