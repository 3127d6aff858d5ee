"""lockstudy's gem5 components, composed like the gem5 standard library.

These modules import `m5` and `gem5`: only gem5's own Python can load them.
"""
