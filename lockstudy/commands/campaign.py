"""`run.sh campaign`: declare a matrix, run it locally, on Slurm or under QEMU; resume after any failure."""

from __future__ import annotations

import argparse
import dataclasses
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Callable

from lockstudy.archive import command as archive_command
from lockstudy.archive.settings import ArchiveError
from lockstudy.campaign import disk_guard, drain
from lockstudy.campaign.all_backends import BACKENDS
from lockstudy.campaign.deadline import Deadline, DeadlineError, parse_deadline
from lockstudy.campaign.drain import DrainError
from lockstudy.campaign.executors import make_executor, parallel_slots, slurm_queued
from lockstudy.campaign.launcher import HELD_BY_DEADLINE, CampaignBusy, run_campaign
from lockstudy.campaign.loader import Campaign, CampaignError, load_campaign
from lockstudy.campaign.progress import study_lines
from lockstudy.campaign.spec import RunSpec, digest
from lockstudy.campaign.staleness import stale_lines, stale_runs
from lockstudy.campaign.store import CampaignStore, State
from lockstudy.campaign.worker import run_one
from lockstudy.console import error
from lockstudy.costmodel.fitted import fitted_model, slurm_resources
from lockstudy.costmodel.plan import CampaignCost
from lockstudy.costmodel.render import cost_lines
from lockstudy.validation.problems import InputError

EXECUTORS = ("local", "slurm", "qemu")
ACTIONS = ("status", "archive", "restore", "drain")
USAGE = """\
run.sh campaign FILE [--dry-run] [--executor local|slurm|qemu] [options]
       run.sh campaign status FILE
       run.sh campaign drain FILE [--results DIR]   (a running local launch starts no more runs)
       run.sh campaign archive FILE [--results DIR] [--archive DIR]
       run.sh campaign restore FILE [--results DIR] [--archive DIR] [--include-stale]
       run.sh campaign --backend gem5|qemu run-one CAMPAIGN_DIR RUN_ID   (used by the executors)"""


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "campaign",
        help="run a campaign matrix locally, on Slurm or under QEMU; resumable",
        usage=USAGE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Expand a campaign file (campaigns/*.toml) into runs and execute them.\n"
            "Runs already done are skipped; failed runs are retried up to the campaign's\n"
            "max_attempts; runs whose worker died or was killed are redone. A run stopped\n"
            "as stuck after its ROI is not retried (gem5 is deterministic) unless its\n"
            "study now allows more simulated time after the ROI ([study.resources]\n"
            "after_roi_ms) than it was stopped under. A run counts only when its\n"
            "result.json says ok. A gem5 run is stopped when the free space under its\n"
            "outputs falls below a floor (lockstudy/data/campaign.toml [disk];\n"
            "a traced ROI writes tens of MiB per simulated ms): the next launch redoes it.\n\n"
            "executors: local (default; a pool sized to the cores, gem5 runs),\n"
            "           slurm (sbatch job arrays, gem5 runs unless --backend qemu),\n"
            "           qemu  (a local pool running the same specs functionally under\n"
            "                  QEMU TCG: no coherence statistics; validates a campaign\n"
            "                  before spending simulation hours).\n\n"
            "The run archive (results/archive/, lockstudy/archive/): `archive` packs every\n"
            "done gem5 run, without its trace, into the repository (commit it), so that a\n"
            "lost machine loses no simulated hour; a gem5 launch packs each run as it\n"
            "finishes (--no-archive: it does not). A launch first restores the archived\n"
            "runs its results folder lacks (not those made with another machine file,\n"
            "kernel build, disk image or gem5 extra); `restore` does only that.\n\n"
            "`drain` asks the local launch running FILE to start no more runs: the runs\n"
            "under way finish (killing the launcher would lose them), the others stay\n"
            "pending for the next launch, and the launch exits 3."
        ),
    )
    parser.add_argument("words", nargs="+", metavar="FILE", help="the campaign file, or `status|archive|restore|drain FILE`")
    parser.add_argument("--dry-run", action="store_true",
                        help="list the runs, the boot checkpoints they share and what they will cost (host hours, memory; "
                        "with --executor slurm the sbatch resources); run nothing")
    parser.add_argument("--executor", choices=EXECUTORS, default="local", help="where runs execute (default: local)")
    parser.add_argument("--backend", choices=("gem5", "qemu"), help="what a run executes (default: qemu for the qemu executor, gem5 otherwise)")
    parser.add_argument("--jobs", "-j", type=int, help="local runs at once (default: cores / the widest run's host_cpus)")
    parser.add_argument("--no-wait", action="store_true", help="slurm: submit and return; `campaign status` follows the jobs")
    parser.add_argument("--partition", help="slurm: the partition to submit to")
    parser.add_argument("--results", type=Path, help="results root (default: $LOCKSTUDY_RESULTS or results/raw)")
    parser.add_argument("--only-study", action="append", default=[], metavar="STUDY",
                        help="run only this study's runs (repeatable: the studies run in the order given): a chunk of a long campaign")
    parser.add_argument("--skip-study", action="append", default=[], metavar="STUDY",
                        help="leave this study's runs for a later launch (repeatable), e.g. runs longer than what is left of a session")
    parser.add_argument("--only-boot", action="append", default=[], metavar="ARG",
                        help="run only the runs whose boot line has this argument (repeatable: any of them), "
                        "e.g. lockstudy.spinlock=tas for a baseline curve before its variants")
    parser.add_argument("--only-size", action="append", type=int, default=[], metavar="N",
                        help="run only the runs of this size (repeatable: any of them), in each study's own unit (CPUs, "
                        "or nodes where the study gives nodes), e.g. the size a seed's claims are compared at first")
    parser.add_argument("--first-repeats", type=int, metavar="N",
                        help="run only each configuration's first N repeats: a first look at every size before the full statistics")
    parser.add_argument("--deadline", metavar="WHEN",
                        help="local gem5 launch: start no run that the cost model predicts to end after WHEN (with the Slurm "
                        "margin, and its boot when its checkpoint is not built), e.g. before a reserved machine is taken back: "
                        "2h30m, 95m, 17:50 or 2026-11-26T17:50. A study whose runs take longer than predicted has its later "
                        "runs asked for that much more. Runs held back stay pending for the next launch; "
                        f"the launch exits {HELD_BY_DEADLINE} when they are all that is left")
    parser.add_argument("--archive", type=Path, metavar="DIR",
                        help="the run archive's folder (default: lockstudy/data/campaign.toml [archive], results/archive)")
    parser.add_argument("--include-stale", action="store_true",
                        help="restore: also the runs made with another machine file, kernel build, disk image or gem5 extra")
    parser.add_argument("--no-restore", action="store_true",
                        help="launch without restoring archived runs first (they are then simulated again)")
    parser.add_argument("--no-archive", action="store_true",
                        help="gem5 launch: do not pack each run into the run archive as it finishes (by default a run "
                        "is packed at once, so that a machine lost in the middle of a launch loses none it finished; "
                        "commit the archive's folder to keep them)")
    parser.set_defaults(func=run_campaign_command, parser=parser)


def run_campaign_command(args: argparse.Namespace) -> int:
    words: list[str] = args.words
    if words[0] == "run-one":
        if len(words) != 3 or not args.backend:
            args.parser.error("run-one takes --backend and CAMPAIGN_DIR RUN_ID")
        return run_one(Path(words[1]), words[2], args.backend)
    action = words[0] if words[0] in ACTIONS else None
    files = words[1:] if action else words
    if len(files) != 1:
        args.parser.error("name one campaign file")
    try:
        campaign = load_campaign(Path(files[0]))
    except CampaignError as exc:
        error(str(exc))
        return 2
    store = CampaignStore(campaign.name, args.results)
    if action == "status":
        return print_status(campaign, store, args.archive)
    if action == "archive":
        return archive_command.archive(campaign, store, args.archive)
    if action == "restore":
        return archive_command.restore(campaign, store, args.archive, args.include_stale)
    if action == "drain":
        try:
            print(drain.request(store))
        except DrainError as exc:
            error(str(exc))
            return 1
        return 0
    whole = campaign
    try:
        campaign = select_studies(campaign, args.only_study, args.skip_study)
        campaign = select_boots(campaign, args.only_boot)
        campaign = select_sizes(campaign, args.only_size)
        campaign = select_first_repeats(campaign, args.first_repeats)
    except CampaignError as exc:
        error(str(exc))
        return 2
    backend = args.backend or ("qemu" if args.executor == "qemu" else "gem5")
    deadline_at = None
    if args.deadline is not None:
        if args.executor != "local" or backend != "gem5":
            error("--deadline: only for a local gem5 launch (the cost model predicts gem5 runs; "
                  "a Slurm task has its own --time from the model)")  # fmt: skip
            return 2
        try:
            deadline_at = parse_deadline(args.deadline, datetime.now().astimezone())
        except DeadlineError as exc:
            error(str(exc))
            return 2
    if args.dry_run:
        status = print_dry_run(campaign, len(whole.runs), store, slurm=args.executor == "slurm" and backend == "gem5", jobs=args.jobs,
                               deadline_at=deadline_at)  # fmt: skip
        archived = archive_command.archived_count(campaign, args.archive)
        if archived and backend == "gem5" and not args.no_restore:
            print(f"\nnote: the run archive holds {archived} of these runs: a launch restores those not done here "
                  f"(and not stale) before it simulates anything; the costs above count them as to do")  # fmt: skip
        return status
    if backend not in BACKENDS:
        error(f"backend {backend} is not available in this version")
        return 1
    if backend == "gem5" and not args.no_restore:
        try:
            archive_command.restore_before_launch(whole, store, args.archive)
        except ArchiveError as exc:
            error(f"{exc} (or launch with --no-restore)")
            return 1
    slots = parallel_slots(campaign.runs, args.jobs)
    resources = None
    if backend == "gem5" and args.executor == "local":
        for line in launch_disk_lines(campaign, store, slots):
            print(line, flush=True)
    if args.executor == "slurm" and backend == "gem5":
        # Each array task's --time and --mem from the cost model, with its margin.
        resources = slurm_resources(fitted_model().cost(campaign.runs, done_in(campaign, store)))
    deadline = None
    if deadline_at is not None:
        fitted = fitted_model()
        deadline = Deadline(deadline_at, fitted.cost(campaign.runs, done_in(campaign, store)), fitted.settings.margin,
                            done_in_now(campaign, store))  # fmt: skip
        print(deadline.describe(), flush=True)
    executor = make_executor(args.executor, slots, not args.no_wait, args.partition, resources, deadline)
    try:
        packing = archive_command.archive_as_runs_finish(whole, store, args.archive) if backend == "gem5" and not args.no_archive else None
        status = run_campaign(campaign, store, executor, backend, slots, deadline, packing)
    except (CampaignBusy, RuntimeError) as exc:
        error(str(exc))
        return 1
    if campaign is not whole and executor.wait:
        store.write_index(whole.runs, whole.max_attempts)  # the index covers the whole campaign, not the chunk
    if backend == "gem5" and executor.wait:
        for line in archive_command.unarchived_lines(whole, store, args.archive):
            print(line, flush=True)
    return status


def select_studies(campaign: Campaign, only: list[str], skip: list[str]) -> Campaign:
    """The campaign with only the runs of the chosen studies (the others stay as they are in the store).

    Chosen studies run in the order they are given (each study's runs in the file's order): one launch
    can take a session's chunk in the order that matters most, and its pool never waits between them."""
    known = {spec.study for spec in campaign.runs}
    unknown = sorted(set(only + skip) - known)
    if unknown:
        raise CampaignError(f"{campaign.path}: no study {', '.join(map(repr, unknown))} (studies: {', '.join(sorted(known))})")
    runs = [spec for spec in campaign.runs if (not only or spec.study in only) and spec.study not in skip]
    if only:
        order = {study: index for index, study in enumerate(dict.fromkeys(only))}
        runs.sort(key=lambda spec: order[spec.study])  # stable: a study's runs keep the file's order
    return dataclasses.replace(campaign, runs=runs)


def select_boots(campaign: Campaign, only: list[str]) -> Campaign:
    """The campaign with only the runs that boot with one of these arguments (none given: all of them)."""
    if not only:
        return campaign
    known = {argument for spec in campaign.runs for argument in spec.boot}
    unknown = sorted(set(only) - known)
    if unknown:
        raise CampaignError(
            f"{campaign.path}: no run of the chosen studies boots with {', '.join(map(repr, unknown))} "
            f"(boot arguments: {', '.join(sorted(known)) or 'none'})"
        )
    runs = [spec for spec in campaign.runs if set(only) & set(spec.boot)]
    return dataclasses.replace(campaign, runs=runs)


def select_sizes(campaign: Campaign, only: list[int]) -> Campaign:
    """The campaign with only the runs of these sizes, each in its study's unit (none given: all of them)."""
    if not only:
        return campaign
    known = {(spec.size, spec.size_unit) for spec in campaign.runs}
    unknown = sorted(set(only) - {size for size, _unit in known})
    if unknown:
        sizes = ", ".join(f"{size} {unit}" for size, unit in sorted(known)) or "none"
        raise CampaignError(f"{campaign.path}: no run of the chosen studies has size {', '.join(map(str, unknown))} (sizes: {sizes})")
    return dataclasses.replace(campaign, runs=[spec for spec in campaign.runs if spec.size in only])


def select_first_repeats(campaign: Campaign, count: int | None) -> Campaign:
    """The campaign with only each configuration's first `count` repeats (None: all of them)."""
    if count is None:
        return campaign
    if count < 1:
        raise CampaignError(f"--first-repeats {count}: give a count of 1 or more")
    return dataclasses.replace(campaign, runs=[spec for spec in campaign.runs if spec.repeat < count])


def done_in_now(campaign: Campaign, store: CampaignStore) -> Callable[[RunSpec], bool]:
    """A test of whether a run is done in the store at the moment it is asked (a run of this launch)."""
    return lambda spec: store.run_dir(spec.run_id).status(campaign.max_attempts).state == State.DONE


def done_in(campaign: Campaign, store: CampaignStore):  # type: ignore[no-untyped-def]
    """A test of whether a run of the campaign is done in the store (resume: not counted again)."""
    done = {status.run_id for status in store.statuses(campaign.runs, campaign.max_attempts) if status.state == State.DONE}
    return lambda spec: spec.run_id in done


def print_dry_run(campaign: Campaign, whole_count: int, store: CampaignStore, slurm: bool = False, jobs: int | None = None,
                  deadline_at: datetime | None = None) -> int:  # fmt: skip
    """The runs (of the chosen studies), the boot checkpoints they share, and what they will cost."""
    runs = campaign.runs
    chosen = "" if len(runs) == whole_count else f" of {whole_count} (the chosen studies)"
    print(f"campaign {campaign.name}: {len(runs)} run(s){chosen}")
    study_width = max([len("study"), *(len(spec.study) for spec in runs)])
    machine_width = max([len("machine"), *(len(spec.machine) for spec in runs)])
    kernel_width = max([len("kernel"), *(len(spec.kernel_build) for spec in runs)])
    print(f"{'run id':<17} {'study':<{study_width}} {'machine':<{machine_width}} {'size':<9} {'kernel':<{kernel_width}} {'cpu':<7} boot / run")
    for spec in runs:
        size = f"{spec.size} {spec.size_unit}"
        print(
            f"{spec.run_id:<17} {spec.study:<{study_width}} {spec.machine:<{machine_width}} {size:<9} "
            f"{spec.kernel_build:<{kernel_width}} {spec.cpu_model:<7} {' '.join(spec.boot) or '-'} / {spec.run}"
        )
    checkpoints: dict[str, list[str]] = {}
    for spec in runs:
        checkpoints.setdefault(digest(spec.boot_identity()), []).append(spec.run_id)
    # Not the checkpoint folders' names: those also digest the built kernel, image and gem5.
    print(f"\n{len(checkpoints)} boot checkpoint(s), each shared by the runs that boot the same way:")
    for members in checkpoints.values():
        sample = next(s for s in runs if s.run_id == members[0])
        boot = " ".join(sample.boot) or "(default boot)"
        print(f"  {sample.machine} {sample.size} {sample.size_unit}, {sample.kernel_build}, {boot}: {len(members)} run(s)")
    fitted = fitted_model()
    cost = fitted.cost(runs, done_in(campaign, store))
    print("\n".join(cost_lines(cost, fitted.settings, fitted.rows, slurm)))
    for line in disk_lines(cost, store, parallel_slots(runs, jobs)):
        print(line)
    if deadline_at is not None:
        gate = Deadline(deadline_at, cost, fitted.settings.margin, done_in(campaign, store))
        print("\n" + "\n".join(gate.plan_lines(cost, parallel_slots(runs, jobs))))
    return 0


def launch_disk_lines(campaign: Campaign, store: CampaignStore, parallel: int) -> list[str]:
    """A local launch's note on its traced runs' disk needs; best effort: a cost table that does not
    read costs the note, never the launch (the disk guard protects the runs either way)."""
    if not any(spec.trace != "off" for spec in campaign.runs):
        return []
    try:
        cost = fitted_model().cost(campaign.runs, done_in(campaign, store))
    except InputError as exc:
        return [f"note: no trace sizes predicted ({exc}); the disk guard still stops a run at its floor"]
    return disk_lines(cost, store, parallel)


def disk_lines(cost: CampaignCost, store: CampaignStore, parallel: int) -> list[str]:
    """The traced runs' disk needs against the free space under the campaign's results (disk_guard.py)."""
    traced = [run for run in cost.to_do() if run.trace_mib is not None]
    if not traced:
        return []
    at_once = min(parallel, len(traced))
    try:
        floor = disk_guard.load_floor()
    except disk_guard.DiskSettingsError as exc:
        return ["", f"error: the disk guard's floor: {exc} (a launch refuses it)"]
    return ["", *disk_guard.trace_room_lines(len(traced), cost.largest_traces_mib(at_once), at_once, store.path, floor)]


def print_status(campaign: Campaign, store: CampaignStore, archive_root: Path | None = None) -> int:
    runs = campaign.runs
    statuses = store.statuses(runs, campaign.max_attempts, slurm_queued(store))
    counts = Counter(s.state for s in statuses)
    print(f"campaign {campaign.name} ({store.path}): " + ", ".join(f"{counts[s]} {s.value}" for s in State if counts[s]))
    for spec, status in zip(runs, statuses):
        line = f"  {status.state.value:<8} {spec.run_id} {spec.study} attempts={status.attempts}"
        if status.reason:
            line += f"  {status.reason}"
        print(line)
    print("by study:")
    for line in study_lines([spec.study for spec in runs], statuses):
        print(line)
    for line in stale_lines(stale_runs(runs, statuses, store), store.path):
        print(line)
    archived = archive_command.archived_count(campaign, archive_root)
    done = sum(1 for status in statuses if status.state == State.DONE)
    print(f"run archive: {archived} of the campaign's runs packed ({done} done here; `campaign archive` packs the rest)")
    return 0
