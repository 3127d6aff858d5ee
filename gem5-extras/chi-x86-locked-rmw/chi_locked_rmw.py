"""CHI with x86 locked read-modify-writes kept atomic: the protocol files, generated from the user's gem5 tree.

Why. An x86 locked instruction (lock xadd, lock cmpxchg, xchg) reaches
Ruby as two requests, Locked_RMW_Read and then Locked_RMW_Write. gem5's
Sequencer makes the pair atomic by asking the first-level controller to
hold every other message for that line until the write arrives
(Sequencer.cc: `m_controller->blockOnQueue(address, m_mandatory_q_ptr)`
after the read, `unblock(address)` after the write). A SLICC controller
honours that hold only in the in_ports whose `peek` says `block_on`:
MESI_Two_Level, MOESI_CMP_directory, MOESI_hammer and the rest do; gem5
v24.0's CHI says it nowhere. So on CHI a snoop that arrives between the
read and the write takes the line away, the write lands on a line that
another CPU has changed meanwhile, and the other CPU's update is lost.
Measured on gem5 v24.0.0.1 (results/calibration, cal_contend): 4 threads
adding to one counter on two nodes end 16 % short.

What. The same CHI protocol, with `block_on="addr"` on the two in_ports of
the cache controller that carry snoops: new snoops (snpInPort) and snoops
that already hold a snoop TBE and wait to run (snpRdyPort; a snoop that
waited on the read's own transaction is released into this port when the
read completes). The hold lasts from the read's completion to the write's,
a few cycles of the CPU's own execution, as the other Ruby protocols do.

How. This module is plain Python with no gem5 import: SConsopts runs it at
configure time to copy the CHI protocol files of the gem5 tree being built
into the build directory with that one change, and puts that directory
first on the protocol path. gem5's own files are not touched, and no gem5
code is kept in this project.
"""

from __future__ import annotations

import re
from pathlib import Path

EXTRA_NAME = "chi-x86-locked-rmw"
PORTS_FILE = "CHI-cache-ports.sm"
PROTOCOL_FILE = "CHI.slicc"
# The cache controller's in_ports that deliver snoops (CHI-cache-ports.sm).
SNOOP_PORTS = ("snpInPort", "snpRdyPort")
# The snoop message's line address field (CHIRequestMsg.addr, CHI-msg.sm).
ADDRESS_FIELD = "addr"
COPIED_SUFFIXES = (".sm", ".slicc")


class ProtocolLayoutError(RuntimeError):
    """The gem5 tree's CHI files are not laid out as this extra expects."""


def _peek_pattern(port: str) -> re.Pattern[str]:
    return re.compile(rf"peek\(\s*{port}\s*,\s*CHIRequestMsg\s*(?P<pairs>,[^)]*)?\)")


def block_snoops_on_locked_lines(ports_text: str, source: str = PORTS_FILE) -> str:
    """`ports_text` with every snoop in_port's peek holding messages for a line the Sequencer blocked."""
    for port in SNOOP_PORTS:
        pattern = _peek_pattern(port)
        matches = list(pattern.finditer(ports_text))
        if len(matches) != 1:
            raise ProtocolLayoutError(
                f"{source}: expected exactly one `peek({port}, CHIRequestMsg)`, found {len(matches)}; "
                f"this extra knows gem5 v24.0's CHI layout"
            )
        pairs = matches[0].group("pairs") or ""
        if "block_on" in pairs:
            if f'block_on="{ADDRESS_FIELD}"' not in pairs.replace(" ", ""):
                raise ProtocolLayoutError(f"{source}: `peek({port}, ...)` already blocks on another field: {pairs!r}")
            continue
        replacement = f'peek({port}, CHIRequestMsg{pairs}, block_on="{ADDRESS_FIELD}")'
        ports_text = ports_text[: matches[0].start()] + replacement + ports_text[matches[0].end() :]
    return ports_text


def protocol_files(chi_dir: Path) -> dict[str, str]:
    """The extra's protocol files, by name: the tree's CHI files, the ports file changed."""
    if not (chi_dir / PROTOCOL_FILE).is_file() or not (chi_dir / PORTS_FILE).is_file():
        raise ProtocolLayoutError(f"{chi_dir}: not gem5's CHI protocol folder (no {PROTOCOL_FILE} or {PORTS_FILE})")
    files = {
        path.name: path.read_text()
        for path in sorted(chi_dir.iterdir())
        if path.is_file() and path.suffix in COPIED_SUFFIXES
    }
    files[PORTS_FILE] = block_snoops_on_locked_lines(files[PORTS_FILE], str(chi_dir / PORTS_FILE))
    return files


def write_protocol(chi_dir: Path, out_dir: Path) -> list[str]:
    """Write the extra's protocol files into `out_dir`; the names written (a file already as it should be is left untouched)."""
    files = protocol_files(chi_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in sorted(files.items()):
        target = out_dir / name
        if not target.is_file() or target.read_text() != text:
            target.write_text(text)
            written.append(name)
    for stale in out_dir.iterdir():
        if stale.suffix in COPIED_SUFFIXES and stale.name not in files:
            stale.unlink()
    return written
