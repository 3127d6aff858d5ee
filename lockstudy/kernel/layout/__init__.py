"""Struct layouts of a kernel build: which field of a slab object or kernel variable a hot cache line holds.

Our kernels carry no debug information (turning it on would change every
build id, and with it every run's provenance). The layouts are read
instead from one small probe compiled with `-g` against the build's own
configured object tree, with kbuild's external-module rules (`M=`): the
probe defines one variable of each type that lockstudy/data/struct_layouts.toml
names, so the compiler describes exactly the layout the build's vmlinux has.
A kernel variable's type is taken with typeof() in a unit of the probe
that includes the variable's defining file whole (probe.py).

- `requests.py`: the data file (slab cache -> C type and its header;
  variable -> the file defining it).
- `probe.py`: writes and compiles the probe in a build's object tree.
- `dwarf.py`: the probe's DWARF -> each type's members, nested.
- `store.py`: `struct-layouts.json` beside the build's outputs, and the
  query the hot-line profile asks (the fields on a range of an object).
- `make.py`: produces the file after a kernel build, or when it is missing
  or older than the data file, without touching the build's outputs.
"""
