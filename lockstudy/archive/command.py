"""The words `archive` and `restore` of `run.sh campaign`, and the restore a launch makes first."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lockstudy.archive.pack import NOTE_LINE, PACKED_LINE, archive_campaign, read_index
from lockstudy.archive.restore import restore_campaign, restore_lines
from lockstudy.archive.settings import ArchiveError, ArchiveSettings, campaign_folder, load_settings
from lockstudy.campaign.loader import Campaign
from lockstudy.campaign.store import CampaignStore, State
from lockstudy.console import error


def settings_for(archive_root: Path | None) -> ArchiveSettings:
    """The archive's settings, with its folder from --archive when given."""
    settings = load_settings()
    return dataclasses.replace(settings, folder=archive_root) if archive_root else settings


def archive(campaign: Campaign, store: CampaignStore, archive_root: Path | None) -> int:
    try:
        for line in archive_campaign(campaign, store, settings_for(archive_root)):
            print(line, flush=True)
    except ArchiveError as exc:
        error(str(exc))
        return 1
    return 0


def archive_as_runs_finish(campaign: Campaign, store: CampaignStore, archive_root: Path | None) -> Callable[[], None]:
    """What a launch calls whenever a run has ended: pack the done runs the archive lacks.

    The archive is in the checkout, so a machine lost in the middle of a launch loses no run
    it finished (the run packed at once, not at the next `campaign archive`). A traced run is
    packed again once a report has read its trace. Packing never stops the launch: a run it
    cannot pack is said, and stays for `campaign archive`."""
    settings = settings_for(archive_root)

    def pack() -> None:
        try:
            for line in archive_campaign(campaign, store, settings):
                if line.startswith((PACKED_LINE, NOTE_LINE)):
                    print(f"run archive: {line.strip()}", flush=True)
        except (ArchiveError, OSError, ValueError) as exc:  # a run's unreadable record too: the workers under way matter more
            print(f"warning: the run archive: {exc}; the launch goes on (pack later with ./run.sh campaign archive "
                  f"{campaign.path} --results {store.path.parent})", flush=True)  # fmt: skip

    return pack


def restore(campaign: Campaign, store: CampaignStore, archive_root: Path | None, include_stale: bool) -> int:
    try:
        settings = settings_for(archive_root)
        restored = restore_campaign(campaign, store, settings, include_stale=include_stale)
    except ArchiveError as exc:
        error(str(exc))
        return 1
    lines = list(restore_lines(restored, campaign, settings))
    print("\n".join(lines) if lines else f"{campaign.name}: nothing to restore from {campaign_folder(settings.folder, campaign.name)}")
    return 0


def restore_before_launch(campaign: Campaign, store: CampaignStore, archive_root: Path | None) -> None:
    """What a launch does first: restore the archived runs (ArchiveError: a damaged archive stops the launch)."""
    settings = settings_for(archive_root)
    for line in restore_lines(restore_campaign(campaign, store, settings), campaign, settings):
        print(line, flush=True)


def archived(campaign: Campaign, archive_root: Path | None) -> tuple[Path, dict[str, dict[str, Any]]]:
    """The campaign's archive folder and its index (ArchiveError: the settings or the index do not read)."""
    folder = campaign_folder(settings_for(archive_root).folder, campaign.name)
    return folder, read_index(folder)


def archived_count(campaign: Campaign, archive_root: Path | None) -> int:
    """How many of the campaign's runs the archive holds (a dry run's note; unreadable index: 0)."""
    try:
        _folder, index = archived(campaign, archive_root)
    except ArchiveError:
        return 0
    return sum(1 for spec in campaign.runs if spec.run_id in index)


def unarchived_lines(campaign: Campaign, store: CampaignStore, archive_root: Path | None) -> list[str]:
    """After a launch: its done runs the archive lacks, and the command that packs them."""
    try:
        folder, index = archived(campaign, archive_root)
    except ArchiveError as exc:
        return [f"note: the run archive: {exc}"]
    done = {s.run_id for s in store.statuses(campaign.runs, campaign.max_attempts) if s.state == State.DONE}
    missing = len(done - set(index))
    if not missing:
        return []
    line = (f"note: {missing} done run(s) are not in the run archive yet: ./run.sh campaign archive {campaign.path} "
            f"--results {store.path.parent} (then commit {folder})")  # fmt: skip
    return [line]
