"""A real single-node Slurm cluster (Debian's slurm-wlm) for the tests.

Starts munged (unless one already answers), slurmctld and slurmd with a
private configuration named by SLURM_CONF, waits for the node to be idle,
and stops what it started.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

NODE_NAME = "localhost"
READY_TIMEOUT_S = 60
MUNGE_SOCKET_DIR = Path("/run/munge")

CONFIG = """\
ClusterName=lockstudy-test
SlurmctldHost={node}
SlurmUser=root
AuthType=auth/munge
StateSaveLocation={state}/state
SlurmdSpoolDir={state}/spool
SlurmctldPidFile={state}/slurmctld.pid
SlurmdPidFile={state}/slurmd.pid
SlurmctldLogFile={state}/slurmctld.log
SlurmdLogFile={state}/slurmd.log
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={state}/jobcomp.log
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
KillWait=5
MinJobAge=5
NodeName={node} CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


class SlurmUnavailable(RuntimeError):
    pass


def munge_answers() -> bool:
    if not shutil.which("munge"):
        return False
    encode = subprocess.run(["munge", "-n"], capture_output=True)
    if encode.returncode != 0:
        return False
    decode = subprocess.run(["unmunge"], input=encode.stdout, capture_output=True)
    return decode.returncode == 0


def start_munge() -> subprocess.Popen[bytes] | None:
    if munge_answers():
        return None
    MUNGE_SOCKET_DIR.mkdir(parents=True, exist_ok=True)
    shutil.chown(MUNGE_SOCKET_DIR, "munge", "munge")
    subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged"], check=True)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not munge_answers():
        if time.monotonic() > deadline:
            raise SlurmUnavailable("munged started but does not answer")
        time.sleep(0.2)
    return None


def total_memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    raise SlurmUnavailable("no MemTotal in /proc/meminfo")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def node_state(env: dict[str, str]) -> str:
    result = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=env)
    return result.stdout.strip()


@contextmanager
def slurm_cluster(workdir: Path) -> Iterator[dict[str, str]]:
    """Yield the environment (SLURM_CONF) under which Slurm commands reach the cluster."""
    if os.geteuid() != 0:
        raise SlurmUnavailable("starting slurmctld/slurmd needs root")
    for tool in ("slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo"):
        if not shutil.which(tool):
            raise SlurmUnavailable(f"{tool} not found: run ./run.sh setup")
    state = workdir / "slurm"
    for sub in ("state", "spool"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    config = state / "slurm.conf"
    config.write_text(
        CONFIG.format(
            node=NODE_NAME,
            state=state,
            cpus=os.cpu_count() or 1,
            memory_mb=total_memory_mb(),
            ctld_port=free_port(),
            d_port=free_port(),
        )
    )
    env = dict(os.environ, SLURM_CONF=str(config))
    start_munge()
    subprocess.run(["/usr/sbin/slurmctld", "-i"], env=env, check=True)
    try:
        subprocess.run(["/usr/sbin/slurmd", "-N", NODE_NAME], env=env, check=True)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while node_state(env) != "idle":
            if time.monotonic() > deadline:
                log = (state / "slurmctld.log").read_text()[-2000:] if (state / "slurmctld.log").exists() else ""
                raise SlurmUnavailable(f"node not idle after {READY_TIMEOUT_S} s (state {node_state(env)!r}); slurmctld log tail:\n{log}")
            time.sleep(0.3)
        yield env
    finally:
        for pidfile in ("slurmd.pid", "slurmctld.pid"):
            path = state / pidfile
            if path.exists():
                try:
                    os.kill(int(path.read_text().strip()), 15)
                except (ProcessLookupError, ValueError):
                    pass
        time.sleep(1)
