"""The hot-line profile of a traced ROI, like `perf c2c` but exact: every cache line of the ROI.

- `scan.py`: one streaming pass over roi.trace.gz, transitions counted per
  ROI, line, controller, event and state change;
- `rules.py` + `analysis/data/hotlines.toml`: what each protocol's
  transitions count as (requests, invalidations, messages to the home);
- `topology.py`: each controller's node and each line's home, from config.json;
- `profile.py`: per line requests, invalidations and node crossings;
- `symbols.py`: a line's kernel symbol + offset (System.map), registered
  lock names, else "unknown (heap)";
- `device_space.py` + `analysis/data/device_spaces.toml`: a line in gem5
  X86's device address spaces (`io:local APIC [cpu N]` and its registers);
- `fields.py`: a slab line's members, from the run's kernel build's struct
  layouts (lockstudy/kernel/layout/);
- `traces.py`: every traced run read in a pool of processes, its profiles cached per trace;
- `table.py`: hotlines.csv's rows, named, and each study's lines summed;
- `section.py`: the report's "Hot lines".
"""
