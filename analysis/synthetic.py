"""Synthetic gem5 outputs of realistic size, for tests and the benchmark.

Not gem5's output: the layout of each line follows gem5 v24.0.0.1's text
writer (src/base/stats/text.cc, see analysis/gem5_output/stats_reader.py) with its
default `spaces` and `desc` (src/python/m5/stats/__init__.py:136-153), and
the stat names and counts follow the stat declarations of the objects our
machines build (caches: src/mem/cache/base.cc:2041-2460; crossbars:
src/mem/xbar.cc, src/mem/coherent_xbar.cc; Ruby controllers:
src/mem/slicc/symbols/StateMachine.py:928-968; Ruby network:
src/mem/ruby/network/simple/{SimpleNetwork,Switch,Throttle}.cc). Values are
random but consistent where tests check them (a vector's total is the sum
of its elements).

Each generator also returns the `expected` values it printed, so tests can
check the reader against what was written.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.gem5_output.stats_reader import BEGIN_MARKER, END_MARKER

NAME_WIDTH = 40  # text.cc:253-256 (spaces on)
VALUE_WIDTH = 12
PERCENT_WIDTH = 10
BLANK_PERCENT = " " * PERCENT_WIDTH

# gem5 names the per-command cache groups after MemCmd (base.cc:2041-2043);
# these are the commands a PIII-like L1/L2 sees.
L1_COMMANDS = ("ReadReq", "WriteReq", "LockedRMWReadReq", "LockedRMWWriteReq", "ReadExReq", "UpgradeReq", "ReadSharedReq", "InvalidateReq")
L2_COMMANDS = ("ReadExReq", "ReadSharedReq", "ReadCleanReq", "UpgradeReq", "InvalidateReq", "WritebackDirty", "CleanEvict")
CACHE_CMD_STATS = ("hits", "misses", "hitLatency", "missLatency", "accesses", "missRate", "avgMissLatency", "mshrHits", "mshrMisses", "mshrMissLatency", "mshrMissRate", "avgMshrMissLatency")
CACHE_WHOLE_STATS = ("demandHits", "overallHits", "demandHitLatency", "overallHitLatency", "demandMisses", "overallMisses", "demandMissLatency", "overallMissLatency", "demandAccesses", "overallAccesses", "demandMissRate", "overallMissRate", "demandAvgMissLatency", "overallAvgMissLatency", "writebacks", "demandMshrHits", "overallMshrHits", "demandMshrMisses", "overallMshrMisses", "demandMshrMissLatency", "overallMshrMissLatency", "demandMshrMissRate", "overallMshrMissRate", "demandAvgMshrMissLatency", "overallAvgMshrMissLatency")
XBAR_COMMANDS = ("ReadReq", "ReadResp", "WriteReq", "WriteResp", "WritebackDirty", "CleanEvict", "UpgradeReq", "UpgradeResp", "ReadExReq", "ReadExResp", "ReadSharedReq", "InvalidateReq", "InvalidateResp")
# A sample of gem5's OpClass names (src/cpu/FuncUnit.py OpClass): the CPU's
# per-op-class vectors print one line per class.
OP_CLASSES = tuple(
    "No_OpClass IntAlu IntMult IntDiv FloatAdd FloatCmp FloatCvt FloatMult FloatMultAcc FloatDiv FloatMisc "
    "FloatSqrt SimdAdd SimdAddAcc SimdAlu SimdCmp SimdCvt SimdMisc SimdMult SimdMultAcc SimdShift SimdShiftAcc "
    "SimdDiv SimdSqrt SimdFloatAdd SimdFloatAlu SimdFloatCmp SimdFloatCvt SimdFloatDiv SimdFloatMisc SimdFloatMult "
    "SimdFloatMultAcc SimdFloatSqrt SimdReduceAdd SimdReduceAlu SimdReduceCmp SimdFloatReduceAdd "
    "SimdFloatReduceCmp SimdAes SimdAesMix SimdSha1Hash SimdSha1Hash2 SimdSha256Hash SimdSha256Hash2 "
    "SimdShaSigma2 SimdShaSigma3 SimdPredAlu MemRead MemWrite FloatMemRead FloatMemWrite IprAccess "
    "InstPrefetch".split()
)
CPU_SCALARS = ("numCycles", "numWorkItemsStarted", "numWorkItemsCompleted", "cpi", "ipc", "idleCycles", "tickCycles", "numInsts", "numOps", "committedInsts", "committedOps", "numIntAluAccesses", "numFpAluAccesses", "numCallsReturns", "numCondCtrlInsts", "numIntInsts", "numFpInsts", "numIntRegReads", "numIntRegWrites", "numMemRefs", "numLoadInsts", "numStoreInsts", "numIdleCycles", "numBusyCycles", "notIdleFraction", "idleFraction", "numBranches", "numPredictedTaken", "numMispredicted", "fetchStats0.numInsts", "fetchStats0.numOps", "fetchStats0.fetchRate", "fetchStats0.numBranches", "fetchStats0.branchRate", "fetchStats0.icacheStallCycles", "fetchStats0.numFetchSuspends", "executeStats0.numInsts", "executeStats0.numNop", "executeStats0.numBranches", "executeStats0.numLoadInsts", "executeStats0.numStoreInsts", "executeStats0.instRate", "executeStats0.dcacheStallCycles", "executeStats0.numCCRegReads", "executeStats0.numCCRegWrites", "executeStats0.numIntRegReads", "executeStats0.numIntRegWrites", "executeStats0.numMiscRegReads", "executeStats0.numMiscRegWrites", "executeStats0.numDiscardedOps", "commitStats0.numInsts", "commitStats0.numOps", "commitStats0.numInstsNotNOP", "commitStats0.numOpsNotNOP", "commitStats0.cpi", "commitStats0.ipc", "commitStats0.numMemRefs", "commitStats0.numFpInsts", "commitStats0.numIntInsts", "commitStats0.numLoadInsts", "commitStats0.numStoreInsts", "commitStats0.numVecInsts", "mmu.dtb.rdAccesses", "mmu.dtb.wrAccesses", "mmu.dtb.rdMisses", "mmu.dtb.wrMisses", "mmu.itb.rdAccesses", "mmu.itb.wrAccesses", "mmu.itb.rdMisses", "mmu.itb.wrMisses", "mmu.dtb.walker.walks", "mmu.itb.walker.walks", "thread_0.numInsts", "thread_0.numOps", "thread_0.numMemRefs", "power_state.pwrStateResidencyTicks::ON")
# Units gem5 v24 prints for CPU stats that are not counts (checked against
# tests/fixtures/gem5/altix-numa-2-kbench/stats.txt); the rest are Count.
CPU_UNITS = {
    "numCycles": "Cycle",
    "cpi": "(Cycle/Count)",
    "ipc": "(Count/Cycle)",
    "fetchStats0.fetchRate": "(Count/Cycle)",
    "fetchStats0.branchRate": "Ratio",
    "executeStats0.instRate": "(Count/Cycle)",
    "commitStats0.cpi": "(Cycle/Count)",
    "commitStats0.ipc": "(Count/Cycle)",
    "power_state.pwrStateResidencyTicks::ON": "Tick",
}
# Ruby cache-memory stats are declared without a unit (Unspecified).
RUBY_CACHE_UNITS = {"m_demand_hits": "Unspecified", "m_demand_misses": "Unspecified", "m_demand_accesses": "Unspecified"}
BUFFER_UNITS = {"m_buf_msgs": "(Count/Tick)", "m_stall_time": "Tick", "m_avg_stall_time": "(Tick/Count)"}
MEMORY_SCALARS = ("bytesRead::total", "bytesWritten::total", "bytesInstRead::total", "numReads::total", "numWrites::total", "bwRead::total", "bwWrite::total", "bwTotal::total", "readReqs", "writeReqs", "readBursts", "writeBursts", "servicedByWrQ", "mergedWrBursts", "neitherReadNorWriteReqs", "avgRdQLen", "avgWrQLen", "numRdRetry", "numWrRetry", "readPktSize::6", "writePktSize::6", "bytesReadWrQ", "bytesReadSys", "bytesWrittenSys", "avgRdBWSys", "avgWrBWSys", "totGap", "avgGap", "requestorReadBytes::total", "requestorWriteBytes::total", "dram.bytesRead::total", "dram.bytesWritten::total", "dram.readBursts", "dram.writeBursts", "dram.totQLat", "dram.totMemAccLat", "dram.avgQLat", "dram.avgMemAccLat", "dram.readRowHits", "dram.writeRowHits", "dram.readRowHitRate", "dram.writeRowHitRate", "dram.pageHitRate", "dram.rank0.actEnergy", "dram.rank0.preEnergy", "dram.rank0.readEnergy", "dram.rank0.writeEnergy", "dram.rank0.totalEnergy", "dram.rank0.averagePower", "dram.rank0.totalIdleTime")
MESSAGE_TYPES = ("Control", "Request_Control", "Response_Data", "Response_Control", "Writeback_Data", "Writeback_Control")
VIRTUAL_NETWORKS = 3
RUBY_BUFFERS = ("requestFromL1Cache", "responseFromL1Cache", "unblockFromL1Cache", "requestToL1Cache", "responseToL1Cache", "mandatoryQueue", "optionalQueue")
BUFFER_STATS = ("m_msg_count", "m_buf_msgs", "m_stall_time", "m_stall_count", "m_avg_stall_time", "m_occupancy")


def indexed(name: str, index: int, count: int) -> str:
    """A SimObjectVector element's stat name: no index when the vector has one element
    (src/python/m5/stats/__init__.py:280-285)."""
    return f"{name}{index}" if count > 1 else name


def value_text(value: float, precision: int = -1) -> str:
    """gem5's ValueToString (text.cc:180-199)."""
    if value != value:
        return "nan"
    if precision == -1 and value == int(value):
        return f"{value:.0f}"
    return f"{value:.{6 if precision == -1 else precision}f}"


def percent_text(ratio: float) -> str:
    return f"{ratio * 100.0:.2f}%"


@dataclass
class StatsWriter:
    """Writes lines the way text.cc does and remembers what it wrote."""

    lines: list[str] = field(default_factory=list)
    expected: dict[tuple[str, str], float] = field(default_factory=dict)

    def _remember(self, name: str, value: float) -> None:
        stat, _, sub = name.partition("::")
        self.expected[(stat, sub)] = float(value_text(value))

    def scalar(self, name: str, value: float, desc: str, unit: str = "Count", *, nozero: bool = False, precision: int = -1, pdf: str = "", cdf: str = "") -> None:
        if nozero and value == 0:
            return
        tail = f" # {desc}" if desc else ""
        unit_text = f" ({unit})" if unit else ""
        self.lines.append(
            f"{name:<{NAME_WIDTH}} {value_text(value, precision):>{VALUE_WIDTH}} {pdf:>{PERCENT_WIDTH}} {cdf:>{PERCENT_WIDTH}}{tail}{unit_text}"
        )
        self._remember(name, value)

    def vector(self, name: str, values: dict[str, float], desc: str, unit: str = "Count", *, total: bool = True, nozero: bool = False, pdf: bool = False) -> None:
        """VectorPrint (text.cc:336-406), not oneline."""
        whole = sum(values.values())
        if not nozero or whole != 0:
            cumulative = 0.0
            for sub, value in values.items():
                pdf_text = cdf_text = ""
                if pdf and whole:
                    cumulative += value / whole
                    pdf_text, cdf_text = percent_text(value / whole), percent_text(cumulative)
                self.scalar(f"{name}::{sub}", value, desc, unit, nozero=nozero, pdf=pdf_text, cdf=cdf_text)
        if total:
            self.scalar(f"{name}::total", whole, desc, unit, nozero=nozero)

    def oneline_vector(self, name: str, values: list[float], desc: str, unit: str = "Unspecified") -> None:
        """Ruby's controller vectors: pdf|total|oneline|nozero (StateMachine.py:946-947)."""
        whole = sum(values)
        if whole == 0:
            return
        if len(values) == 1:
            self.scalar(name, values[0], desc, unit, nozero=True)
            return
        parts, cumulative = [], 0.0
        for index, value in enumerate(values):
            cumulative += value / whole
            parts.append(f" |{value_text(value):>{VALUE_WIDTH}} {percent_text(value / whole):>{PERCENT_WIDTH}} {percent_text(cumulative):>{PERCENT_WIDTH}}")
            self._remember(f"{name}::{index}", value)
        tail = f" # {desc}" if desc else ""
        self.lines.append(f"{name:<{NAME_WIDTH}}{''.join(parts)}{tail} ({unit})")
        self.scalar(f"{name}::total", whole, desc, unit, nozero=True)

    def distribution(self, name: str, samples: list[int], low: int, high: int, bucket: int, desc: str, unit: str = "Count") -> None:
        """A Dist (DistPrint, text.cc:456-584) with under/overflow and min/max value."""
        counts = [0] * ((high - low) // bucket + 1)
        under = over = 0
        for sample in samples:
            if sample < low:
                under += 1
            elif sample > high:
                over += 1
            else:
                counts[(sample - low) // bucket] += 1
        n = len(samples)
        mean = sum(samples) / n if n else float("nan")
        stdev = (sum((s - mean) ** 2 for s in samples) / (n - 1)) ** 0.5 if n > 1 else float("nan")
        self.scalar(f"{name}::samples", n, desc, unit)
        self.scalar(f"{name}::mean", mean, desc, unit)
        self.scalar(f"{name}::stdev", stdev, desc, unit)
        total = n
        cumulative = 0.0

        def share(value: int) -> tuple[str, str]:
            nonlocal cumulative
            if not total:
                return "", ""
            cumulative += value / total
            return percent_text(value / total), percent_text(cumulative)

        pdf, cdf = share(under)
        self.scalar(f"{name}::underflows", under, desc, unit, pdf=pdf, cdf=cdf)
        for index, count in enumerate(counts):
            lo = index * bucket + low
            hi = min(lo + bucket - 1, high)
            label = f"{lo:g}" + (f"-{hi:g}" if lo < hi else "")
            pdf, cdf = share(count)
            self.scalar(f"{name}::{label}", count, desc, unit, pdf=pdf, cdf=cdf)
        pdf, cdf = share(over)
        self.scalar(f"{name}::overflows", over, desc, unit, pdf=pdf, cdf=cdf)
        self.scalar(f"{name}::min_value", min(samples) if samples else float("nan"), desc, unit)
        self.scalar(f"{name}::max_value", max(samples) if samples else float("nan"), desc, unit)
        self.scalar(f"{name}::total", total, desc, unit)

    def oneline_histogram(self, name: str, counts: list[int], bucket: int, desc: str = "", unit: str = "Unspecified") -> None:
        """A Histogram with pdf|oneline|nozero (Profiler.cc:125-160; DistPrint oneline branch)."""
        samples = sum(counts)
        if samples == 0:
            return
        self.scalar(f"{name}::bucket_size", bucket, desc, unit)
        self.scalar(f"{name}::min_bucket", 0, desc, unit)
        self.scalar(f"{name}::max_bucket", bucket * len(counts) - 1, desc, unit)
        self.scalar(f"{name}::samples", samples, desc, unit)
        self.scalar(f"{name}::mean", sum((i * bucket + bucket / 2) * c for i, c in enumerate(counts)) / samples, desc, unit)
        self.scalar(f"{name}::gmean", 1.5 * bucket, desc, unit)
        self.scalar(f"{name}::stdev", float(bucket), desc, unit)
        parts, cumulative = [], 0.0
        for index, count in enumerate(counts):
            cumulative += count / samples
            parts.append(f" |{value_text(count):>{VALUE_WIDTH}} {percent_text(count / samples):>{PERCENT_WIDTH}} {percent_text(cumulative):>{PERCENT_WIDTH}}")
            lo = index * bucket
            hi = lo + bucket - 1
            self._remember(f"{name}::{lo:g}" + (f"-{hi:g}" if lo < hi else ""), count)
        tail = f" # {desc}" if desc else ""
        self.lines.append(f"{name:<{NAME_WIDTH}}{''.join(parts)}{tail} ({unit})")
        self.scalar(f"{name}::total", samples, desc, unit)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _root_stats(out: StatsWriter, rng: random.Random, ticks: int) -> None:
    out.scalar("simSeconds", ticks / 1e12, "Number of seconds simulated", "Second")
    out.scalar("simTicks", ticks, "Number of ticks simulated", "Tick")
    out.scalar("finalTick", ticks * 7, "Number of ticks from beginning of simulation (restored from checkpoints and never reset)", "Tick")
    out.scalar("simFreq", 1e12, "The number of ticks per simulated second", "(Tick/Second)")
    out.scalar("hostSeconds", round(rng.uniform(10, 500), 2), "Real time elapsed on the host", "Second", precision=2)
    out.scalar("hostTickRate", rng.randint(10**6, 10**9), "The number of ticks simulated per host second (ticks/s)", "(Tick/Second)")
    out.scalar("hostMemory", rng.randint(10**6, 10**7), "Number of bytes of host memory used", "Byte")
    out.scalar("simInsts", rng.randint(10**6, 10**8), "Number of instructions simulated", "Count")
    out.scalar("simOps", rng.randint(10**6, 10**8), "Number of ops (including micro ops) simulated", "Count")
    out.scalar("hostInstRate", rng.randint(10**4, 10**6), "Simulator instruction rate (inst/s)", "(Count/Second)")
    out.scalar("hostOpRate", rng.randint(10**4, 10**6), "Simulator op (including micro ops) rate (op/s)", "(Count/Second)")


def _cpu_stats(out: StatsWriter, rng: random.Random, prefix: str, active: bool) -> None:
    for stat in CPU_SCALARS:
        value = rng.randint(1, 10**7) if active else 0
        out.scalar(f"{prefix}.{stat}", value, f"{stat.rsplit('.', 1)[-1]} of the core", CPU_UNITS.get(stat, "Count"))
    classes = {name: (rng.randint(0, 10**6) if active and rng.random() < 0.3 else 0) for name in OP_CLASSES}
    out.vector(f"{prefix}.commitStats0.committedInstType", classes, "Class of committed instruction.", "Count")
    out.vector(f"{prefix}.executeStats0.instType", classes, "Class of executed instruction.", "Count")


def _requestors(cpus: int) -> list[str]:
    names = []
    for i in range(cpus):
        names += [f"board.processor.{indexed('roi', i, cpus)}.core.{part}" for part in ("inst", "data", "mmu.dtb.walker")]
    return names


def cache_unit(stat: str) -> str:
    """The unit gem5 v24 prints for a classic cache stat (checked against
    tests/fixtures/gem5/piii-smp-2-kbench/stats.txt): rates are ratios,
    averages ticks per access, latencies ticks, the rest counts."""
    if stat.endswith("Rate"):
        return "Ratio"
    if stat.startswith("avg") or "Avg" in stat:
        return "(Tick/Count)"
    if "Latency" in stat:
        return "Tick"
    return "Count"


def _cache_stats(out: StatsWriter, rng: random.Random, cache: str, commands: tuple[str, ...], requestors: list[str]) -> None:
    for command in commands:
        counts = {r: rng.randint(0, 10**5) for r in requestors}
        for stat in CACHE_CMD_STATS:
            if stat.endswith("Rate") or stat.startswith("avg"):
                values = {r: rng.random() for r in requestors if counts[r]}
            else:
                values = {r: (counts[r] * rng.randint(1, 30) if "Latency" in stat else counts[r]) for r in requestors}
            out.vector(f"{cache}.{command}.{stat}", values, f"number of {command} {stat}", cache_unit(stat), nozero=True)
    for stat in CACHE_WHOLE_STATS:
        values = {r: rng.randint(0, 10**6) for r in requestors}
        out.vector(f"{cache}.{stat}", values, f"number of {stat}", cache_unit(stat), nozero=True)
    out.scalar(f"{cache}.replacements", rng.randint(0, 10**5), "number of replacements", "Count")
    out.vector(f"{cache}.blockedCycles", {"no_mshrs": rng.randint(0, 99), "no_targets": 0}, "number of cycles access was blocked", "Cycle", total=False)
    out.scalar(f"{cache}.tags.tagsInUse", rng.uniform(1, 500), "Average ticks per tags in use", "(Tick/Count)")
    out.scalar(f"{cache}.tags.totalRefs", rng.randint(1, 10**6), "Total number of references to valid blocks.", "Count")
    out.scalar(f"{cache}.tags.sampledRefs", rng.randint(1, 10**6), "Sample count of references to valid blocks.", "Count")
    out.scalar(f"{cache}.tags.tagAccesses", rng.randint(1, 10**6), "Number of tag accesses", "Count")
    out.scalar(f"{cache}.tags.dataAccesses", rng.randint(1, 10**6), "Number of data accesses", "Count")
    out.scalar(f"{cache}.power_state.pwrStateResidencyTicks::UNDEFINED", rng.randint(1, 10**9), "Cumulative time (in ticks) in various power states", "Tick")


def _xbar_stats(out: StatsWriter, rng: random.Random, xbar: str, up: list[str], down: list[str], snoopers: int) -> None:
    out.vector(f"{xbar}.transDist", {c: (rng.randint(0, 10**5) if rng.random() < 0.8 else 0) for c in XBAR_COMMANDS}, "Transaction distribution", "Count", total=False, nozero=True)
    for kind, unit in (("pktCount", "Count"), ("pktSize", "Byte")):
        grand = 0
        for source in up:
            row = {target: rng.randint(0, 10**5) for target in down}
            grand += sum(row.values())
            out.vector(f"{xbar}.{kind}_{source}", row, "Packet count per connected requestor and responder", unit, nozero=True)
        out.scalar(f"{xbar}.{kind}::total", grand, "Packet count per connected requestor and responder", unit, nozero=True)
    out.scalar(f"{xbar}.snoops", rng.randint(0, 10**6), "Total snoops", "Count")
    out.scalar(f"{xbar}.snoopTraffic", rng.randint(0, 10**7), "Total snoop traffic", "Byte")
    out.distribution(f"{xbar}.snoopFanout", [rng.randint(0, snoopers) for _ in range(50)], 0, snoopers, 1, "Request fanout histogram")
    for layer in ("reqLayer0", "respLayer0", "respLayer1"):
        out.scalar(f"{xbar}.{layer}.occupancy", rng.randint(1, 10**9), "Layer occupancy (ticks)", "Tick", nozero=True)
        out.scalar(f"{xbar}.{layer}.utilization", rng.random(), "Layer utilization", "Ratio", nozero=True)


def _memory_stats(out: StatsWriter, rng: random.Random, ctrl: str) -> None:
    for stat in MEMORY_SCALARS:
        out.scalar(f"{ctrl}.{stat}", rng.randint(0, 10**6), stat.split("::")[0], "Count")
    out.vector(f"{ctrl}.rdQLenPdf", {str(i): rng.randint(0, 1000) for i in range(32)}, "What read queue length does an incoming req see", "Count", total=False)
    out.vector(f"{ctrl}.wrQLenPdf", {str(i): rng.randint(0, 1000) for i in range(64)}, "What write queue length does an incoming req see", "Count", total=False)
    out.distribution(f"{ctrl}.dram.bytesPerActivate", [rng.randint(0, 1000) for _ in range(40)], 0, 1023, 128, "Bytes accessed per row activation", "Byte")


def piii_smp(cpus: int, rng: random.Random, ticks: int) -> StatsWriter:
    """One dump of a piii-smp-like machine (gem5-configs/components/classic_fsb.py names)."""
    out = StatsWriter()
    _root_stats(out, rng, ticks)
    for slot in ("boot", "roi"):
        for i in range(cpus):
            _cpu_stats(out, rng, f"board.processor.{indexed(slot, i, cpus)}.core", active=slot == "roi")
    requestors = _requestors(cpus)
    h = "board.cache_hierarchy"
    for i in range(cpus):
        mine = requestors[3 * i : 3 * i + 3]
        _cache_stats(out, rng, f"{h}.l2-cache-{i}", L2_COMMANDS, mine)
        _cache_stats(out, rng, f"{h}.l1d-cache-{i}", L1_COMMANDS, mine[1:2])
        _cache_stats(out, rng, f"{h}.l1i-cache-{i}", ("ReadReq", "InvalidateReq"), mine[0:1])
        _xbar_stats(out, rng, f"{h}.{indexed('l2buses', i, cpus)}", [f"{h}.l1i-cache-{i}.mem_side", f"{h}.l1d-cache-{i}.mem_side"], [f"{h}.l2-cache-{i}.cpu_side"], 1)
    l2_ports = [f"{h}.l2-cache-{i}.mem_side" for i in range(cpus)]
    _xbar_stats(out, rng, f"{h}.fsbs", l2_ports, [f"{h}.membus.cpu_side_ports"], cpus)
    _xbar_stats(out, rng, f"{h}.membus", [f"{h}.fsbs.mem_side_ports", "board.pc.south_bridge.ide.dma", f"{h}.iocache.mem_side"], ["board.memory.mem_ctrl.port", "board.bridge.cpu_side_port"], cpus + 1)
    _cache_stats(out, rng, f"{h}.iocache", ("ReadReq", "WriteLineReq"), ["board.pc.south_bridge.ide.dma"])
    _memory_stats(out, rng, "board.memory.mem_ctrl")
    return out


def altix_numa(nodes: int, rng: random.Random, ticks: int, cpus_per_node: int = 2) -> StatsWriter:
    """One dump of an altix-numa-like Ruby machine (gem5-configs/components/ruby_numa.py names)."""
    out = StatsWriter()
    cpus = nodes * cpus_per_node
    _root_stats(out, rng, ticks)
    for slot in ("boot", "roi"):
        for i in range(cpus):
            _cpu_stats(out, rng, f"board.processor.{indexed(slot, i, cpus)}.core", active=slot == "roi")
    ruby = "board.cache_hierarchy.ruby_system"
    machines = {
        "L1Cache": (cpus, ("Load", "Ifetch", "Store", "Inv", "L1_Replacement", "Fwd_GETX", "Fwd_GETS", "Data", "Data_Exclusive", "DataS_fromL1", "Data_all_Acks", "Ack", "Ack_all", "WB_Ack"), ("NP", "I", "S", "E", "M", "IS", "IM", "SM", "IS_I", "M_I")),
        "L2Cache": (nodes, ("L1_GETS", "L1_GETX", "L1_UPGRADE", "L1_PUTX", "L2_Replacement", "L2_Replacement_clean", "Mem_Data", "Mem_Ack", "WB_Data", "WB_Data_clean", "Ack", "Ack_all", "Unblock", "Exclusive_Unblock"), ("NP", "SS", "M", "MT", "M_I", "MT_I", "MCT_I", "I_I", "S_I", "ISS", "IS", "IM", "SS_MB", "MT_MB")),
        "Directory": (nodes, ("Fetch", "Data", "Memory_Data", "Memory_Ack"), ("I", "ID", "ID_W", "M", "IM", "MI")),
    }
    for machine, (count, events, states) in machines.items():
        for event in events:
            out.oneline_vector(f"{ruby}.{machine}_Controller.{event}", [rng.randint(0, 10**5) for _ in range(count)], "")
        for state in states:
            for event in events:
                if rng.random() < 0.3:
                    out.oneline_vector(f"{ruby}.{machine}_Controller.{state}.{event}", [rng.randint(0, 10**4) for _ in range(count)], "")
    for stat in ("delayHistogram", "m_latencyHistSeqr", "m_hitLatencyHistSeqr", "m_missLatencyHistSeqr", "m_outstandReqHistSeqr"):
        out.oneline_histogram(f"{ruby}.{stat}", [rng.randint(0, 1000) for _ in range(10)], rng.choice((1, 2, 4, 8)), "delay histogram for all message" if stat == "delayHistogram" else "")
    for mtype in MESSAGE_TYPES:
        count = rng.randint(0, 10**6)
        out.scalar(f"{ruby}.network.msg_count.{mtype}", count, "", "Unspecified", nozero=True)
        out.scalar(f"{ruby}.network.msg_byte.{mtype}", count * 8, "", "Unspecified", nozero=True)
    routers = 2 * nodes - 1
    for router in range(routers):
        r = f"{ruby}.network.{indexed('routers', router, routers)}"
        out.scalar(f"{r}.percent_links_utilized", rng.random() * 100, "", "Unspecified")
        for mtype in MESSAGE_TYPES:
            count = rng.randint(0, 10**5)
            out.scalar(f"{r}.msg_count.{mtype}", count, "", "Unspecified", nozero=True)
            out.scalar(f"{r}.msg_bytes.{mtype}", count * 8, "", "Unspecified", nozero=True)
        for link in range(cpus_per_node + 3):
            t = f"{r}.throttle{link:02d}"
            for stat in ("acc_link_utilization", "link_utilization", "total_msg_count", "total_msg_bytes", "total_data_msg_bytes", "total_msg_wait_time", "total_stall_cy", "total_bw_sat_cy", "avg_msg_wait_time", "avg_bandwidth", "avg_useful_bandwidth"):
                out.scalar(f"{t}.{stat}", rng.uniform(0, 1000), stat, "Count")
            for mtype in MESSAGE_TYPES:
                vnets = {str(v): (rng.randint(0, 10**4) if rng.random() < 0.5 else 0) for v in range(VIRTUAL_NETWORKS)}
                out.vector(f"{t}.msg_count.{mtype}", vnets, "", "Unspecified", total=False, nozero=True)
                out.vector(f"{t}.msg_bytes.{mtype}", {k: v * 8 for k, v in vnets.items()}, "", "Unspecified", total=False, nozero=True)
    for kind, count in (("l1_controllers", cpus), ("l2_controllers", nodes), ("directory_controllers", nodes)):
        for i in range(count):
            c = f"{ruby}.{indexed(kind, i, count)}"
            for cache in (("L1Dcache", "L1Icache") if kind == "l1_controllers" else ("L2cache",) if kind == "l2_controllers" else ()):
                for stat in ("m_demand_hits", "m_demand_misses", "m_demand_accesses", "m_prefetch_hits", "m_prefetch_misses", "m_prefetch_accesses", "numDataArrayReads", "numDataArrayWrites", "numTagArrayReads", "numTagArrayWrites"):
                    out.scalar(f"{c}.{cache}.{stat}", rng.randint(0, 10**6), stat, RUBY_CACHE_UNITS.get(stat, "Count"))
            for buffer in RUBY_BUFFERS:
                for stat in BUFFER_STATS:
                    out.scalar(f"{c}.{buffer}.{stat}", rng.randint(0, 10**6), stat, BUFFER_UNITS.get(stat, "Count"))
            out.oneline_histogram(f"{c}.outTransLatHist.Load", [rng.randint(0, 100) for _ in range(5)], 2)
    _memory_stats(out, rng, "board.memory.mem_ctrl")
    return out


def stats_text(dumps: list[StatsWriter]) -> str:
    """A stats.txt holding these dumps (Text::begin/end, text.cc:130-140)."""
    return "".join(f"\n{BEGIN_MARKER}\n\n{d.text()}\n{END_MARKER}\n" for d in dumps)


def _cpu_objects(slot: str, cpus: int, cpu_type: str, switched_out: bool) -> list[dict[str, Any]]:
    return [
        {
            "type": cpu_type,
            "name": "core",
            "path": f"board.processor.{indexed(slot, i, cpus)}.core",
            "cpu_id": i,
            "switched_out": switched_out,
            "numThreads": 1,
            "clk_domain": "board.clk_domain",
        }
        for i in range(cpus)
    ]


def config_tree(machine: str, count: int, line_bytes: int = 32) -> dict[str, Any]:
    """A config.json shaped like gem5's (SimObject.get_config_as_dict), with what the reader uses."""
    board: dict[str, Any] = {
        "type": "LockstudyX86Board",
        "name": "board",
        "path": "board",
        "cache_line_size": line_bytes,
        "mem_ranges": ["0:1073741824"],
        "clk_domain": {"type": "SrcClockDomain", "name": "clk_domain", "path": "board.clk_domain", "clock": [1428]},
    }
    if machine == "piii-smp":
        cpus = count
        caches = []
        for i in range(cpus):
            for level, size, assoc in (("l1i", 16384, 4), ("l1d", 16384, 4), ("l2", 1048576, 8)):
                caches.append({"type": "Cache", "name": f"{level}-cache-{i}", "path": f"board.cache_hierarchy.{level}-cache-{i}", "size": size, "assoc": assoc})
        board["cache_hierarchy"] = {"type": "PiiiFsbCacheHierarchy", "name": "cache_hierarchy", "path": "board.cache_hierarchy", "caches": caches}
    else:
        cpus = count * 2
        ruby = "board.cache_hierarchy.ruby_system"
        l1s = [
            {
                "type": "L1Cache_Controller",
                "name": f"l1_controllers{i}",
                "path": f"{ruby}.l1_controllers{i}",
                "l2_select_num_bits": 0,
                "L1Icache": {"type": "RubyCache", "name": "L1Icache", "path": f"{ruby}.l1_controllers{i}.L1Icache", "size": 16384, "assoc": 4},
                "L1Dcache": {"type": "RubyCache", "name": "L1Dcache", "path": f"{ruby}.l1_controllers{i}.L1Dcache", "size": 16384, "assoc": 4},
            }
            for i in range(cpus)
        ]
        l2s = [{"type": "L2Cache_Controller", "name": f"l2_controllers{i}", "path": f"{ruby}.l2_controllers{i}", "L2cache": {"type": "RubyCache", "name": "L2cache", "path": f"{ruby}.l2_controllers{i}.L2cache", "size": 2097152, "assoc": 8}} for i in range(count)]
        dirs = [{"type": "Directory_Controller", "name": f"directory_controllers{i}", "path": f"{ruby}.directory_controllers{i}"} for i in range(count)]
        board["cache_hierarchy"] = {
            "type": "NumaMESITwoLevelHierarchy",
            "name": "cache_hierarchy",
            "path": "board.cache_hierarchy",
            "ruby_system": {"type": "RubySystem", "name": "ruby_system", "path": ruby, "block_size_bytes": line_bytes, "l1_controllers": l1s, "l2_controllers": l2s, "directory_controllers": dirs},
        }
    board["processor"] = {
        "type": "FastForwardProcessor",
        "name": "processor",
        "path": "board.processor",
        "boot": _cpu_objects("boot", cpus, "X86AtomicSimpleCPU", False),
        "roi": _cpu_objects("roi", cpus, "X86TimingSimpleCPU", True),
    }
    return {"type": "Root", "name": "root", "path": "root", "board": board}


def synthetic_kbench(cpus: int, roi: int) -> dict[str, Any]:
    acquisitions = 1000 * (roi + 1) * cpus
    handoffs = acquisitions - 1 if cpus > 1 else 0
    return {
        "testcase": "kbench",
        "ops": acquisitions,
        "ops_per_s": acquisitions / 0.02,
        "copies": cpus,
        "params": {"variant": "ticket"},
        "counters": {"handoffs": handoffs, "handoffs_local": handoffs, "handoffs_remote": 0},
        "metrics": {"runs": [{"acquisitions": acquisitions}]},
    }


def result_json(machine: str, count: int, rois: int, status: str = "ok", run_spec: str = "kbench:duration_ms=10") -> dict[str, Any]:
    """A result.json shaped like gem5-configs/run.py's (provenance + roi_ticks)."""
    cpus = count if machine == "piii-smp" else count * 2
    return {
        "status": status,
        "reason": "" if status == "ok" else "the run ended with kernel panic: synthetic",
        "provenance": {
            "gem5_version": "24.0.0.1",
            "command": ["gem5.opt", "run.py"],
            "machine": {"name": machine, "kind": "classic-smp" if machine == "piii-smp" else "ruby-numa", "cpus": cpus, "nodes": 1 if machine == "piii-smp" else count, "line_bytes": 32, "sha256": "0" * 64},
            "kernel": {"sha256": "1" * 64},
            "image": {},
            "boot_args": ["lockstudy.spinlock=ticket"],
            "run_spec": run_spec,
            "roi_cpu": "timing",
            "trace": "off",
        },
        "roi_ticks": [[1000 * (i + 1), 1000 * (i + 1) + 500] for i in range(rois)],
        # One kbench result per ROI, shaped like the guest's (workloads/tc_kbench.c).
        "guest": {"results": [{"testcase": "kbench", "result": synthetic_kbench(cpus, i), "locks": []} for i in range(rois)]},
        "simulated_seconds": 0.5,
        "host_seconds": 100.0,
    }


def write_run(run_dir: Path, machine: str, count: int, rois: int = 1, seed: int = 0, status: str = "ok") -> list[StatsWriter]:
    """stats.txt, config.json and result.json of one synthetic run; returns the dumps written."""
    rng = random.Random(seed)
    make = piii_smp if machine == "piii-smp" else altix_numa
    dumps = [make(count, rng, 10**9 + roi) for roi in range(rois)]
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "stats.txt").write_text(stats_text(dumps))
    (run_dir / "config.json").write_text(json.dumps(config_tree(machine, count), indent=4))
    (run_dir / "result.json").write_text(json.dumps(result_json(machine, count, rois, status), indent=2))
    return dumps
