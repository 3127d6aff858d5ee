"""The lockstudy kernel: Linux 6.1 + our patch series, built per kernel/builds.toml.

Modules:
- `specs`: the builds (kernel/builds.toml) and spinlock variants (kernel/variants.toml).
- `source`: the base source tarball, unpacked once, and the patched tree.
- `kconfig`: config fragments, merging with merge_config.sh, verification.
- `build`: building one build into build/kernel/<name>/ with build-info.json.
- `target`: the `./run.sh build kernel` target and the setup step.
- `initramfs`: tiny throwaway initramfs images (busybox + an /init script).
- `locktorture`: the locktorture boot harness and console parser.
"""
