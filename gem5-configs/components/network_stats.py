"""Reset the statistics of Ruby's SimpleNetwork switches with everything else.

gem5 v24's stats reset walks the SimObject tree and calls each object's
resetStats(). A SimpleNetwork Switch overrides it to clear only its
PerfectSwitch (src/mem/ruby/network/simple/Switch.cc, Switch::resetStats)
and does not pass the call on to its statistics groups: its throttles
(msg_count, total_msg_count, ...: one per outgoing link) and its port
buffers. Those counters therefore run on from the start of the simulation
(or from the checkpoint restore) while every other statistic restarts at
each ROI, and so do the network-wide formulas built from them
(network.msg_count.*, network.msg_byte.*).

Seen in a real altix-numa run: an ROI of 179 us whose controllers sent
24,976 messages had 5,398,394 throttle transmissions in its block, the
guest's set-up since the restore included.

`reset_switch_stats` resets every statistics group of every Switch (their
groups do not override resetStats), so that a stats block holds one ROI
for the network as for the caches. The link buffers
(network.int_links*.buffers*) belong to the links, not the switches, and
were always reset.
"""

from __future__ import annotations


def simple_network_switches(root) -> list:
    """Every SimpleNetwork Switch under `root` (none on a classic-cache machine)."""
    from m5.objects import Switch

    return [obj for obj in root.descendants() if isinstance(obj, Switch)]


def reset_switch_stats(switches: list) -> None:
    """Reset the statistics groups a Switch's own resetStats leaves alone."""
    for switch in switches:
        for group in switch.getCCObject().getStatGroups().values():
            group.resetStats()
