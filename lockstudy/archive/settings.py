"""Where the run archive is and how it packs: lockstudy/data/campaign.toml [archive]."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lockstudy.files import read_toml
from lockstudy.paths import DATA, ROOT

SETTINGS_FILE = DATA / "campaign.toml"
XZ_PRESETS = range(10)
INDEX = "index.json"
RUNS = "runs"
TAR_SUFFIX = ".tar.xz"


class ArchiveError(RuntimeError):
    """The archive cannot be read or written; the message names the file and why."""


@dataclass(frozen=True)
class ArchiveSettings:
    folder: Path  # the archive's root: one folder per campaign below it
    xz_preset: int


def load_settings(settings_file: Path = SETTINGS_FILE) -> ArchiveSettings:
    table = read_toml(settings_file, ArchiveError).get("archive")
    if not isinstance(table, dict):
        raise ArchiveError(f"{settings_file}: has no [archive] table")
    folder, preset = table.get("folder"), table.get("xz_preset")
    if not isinstance(folder, str) or not folder or Path(folder).is_absolute():
        raise ArchiveError(f"{settings_file} [archive] folder: must be a folder relative to the repository, got {folder!r}")
    if isinstance(preset, bool) or not isinstance(preset, int) or preset not in XZ_PRESETS:
        raise ArchiveError(f"{settings_file} [archive] xz_preset: must be an integer 0..9, got {preset!r}")
    return ArchiveSettings(ROOT / folder, preset)


def campaign_folder(root: Path, campaign: str) -> Path:
    return root / campaign


def run_tar(root: Path, campaign: str, run_id: str) -> Path:
    return campaign_folder(root, campaign) / RUNS / f"{run_id}{TAR_SUFFIX}"
