"""Message sequence charts of one lock hand-off, drawn from a gem5 run's coherence trace.

A hand-off is the time from the lock holder's releasing store to the next
holder's successful acquire (`handoff_finder.py` says how both are found
in the CPU requests of the trace). Everything the caches said to each
other about the lock's line in that time is drawn as a message sequence
chart: one lane per controller, one arrow per message, the line's state
at each end, time in ticks and ns, every crossing between NUMA nodes
marked. Ruby traces print transitions, not messages: `messages.py`
turns them back into messages with a protocol's rules
(`data/<protocol>.toml`: MESI_Two_Level, CHI); a classic (piii-smp) trace prints packets at
the caches and the bus, read by `classic_trace.py`.

Modules, in the order the command uses them:

| module | what |
|---|---|
| `errors.py` | the one-line errors of bad input |
| `run_input.py` | a run folder: lock registry, machine, trace; the lock's line read from the trace |
| `classic_trace.py` | piii-smp: the classic debug trace's lines on the line -> CPU requests and messages |
| `cpu_requests.py` | the CPUs' requests on the lock's line (sequencer Begin/Done pairs, locked RMW pairs) |
| `handoff_finder.py` | the hand-offs and the one to draw (median by message count, or by index or tick) |
| `protocol_rules.py` + `data/*.toml` | which controller event is which message, sent by which transitions |
| `messages.py` | transitions -> messages (sender, receiver, ticks, states at both ends) |
| `line_wiring.py` | who each controller is for the line (kind, CPU cluster, node; the line's home and memory; least transit), from config_reader |
| `topology.py` | the lanes: each controller with its CPU and NUMA node, from config_reader's facts |
| `chart.py` | the chart of one hand-off, independent of how it is drawn |
| `text_chart.py`, `layout.py`, `svg_chart.py`, `png_chart.py` | the chart as plain text, SVG (written as text) and PNG (matplotlib) |
| `draw.py` | the whole path from a run folder to the three files |
"""
