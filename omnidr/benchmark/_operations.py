"""What the `omnidr snapshot` commands do, callable without the CLI."""

from dataclasses import dataclass
from pathlib import Path

from omnidr.errors import UserError

from ._manifest import ManifestDiff, SnapshotManifest, compute_manifest, diff_manifest, read_manifest, write_manifest
from ._snapshot import Problem, Snapshot, load_snapshot
from ._validate import validate


def open_snapshot(path: Path | str) -> Snapshot:
    """Load a snapshot folder; a path that is not a snapshot is a user error."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such folder; pass the path of a snapshot (for example snapshots/demo)")
    try:
        return load_snapshot(path)
    except FileNotFoundError as exc:
        raise UserError(f"{exc}; pass the folder that holds snapshot.json") from None


@dataclass(frozen=True)
class ValidationReport:
    snapshot: Snapshot
    problems: list[Problem]

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]


def validate_snapshot(path: Path | str, check_videos: bool = True) -> ValidationReport:
    snap = open_snapshot(path)
    return ValidationReport(snap, validate(snap, check_videos=check_videos))


def freeze_snapshot(path: Path | str) -> tuple[SnapshotManifest | None, ValidationReport]:
    """Validate, then write MANIFEST.json atomically. Refuses (returns no manifest) on errors."""
    report = validate_snapshot(path)
    if report.errors:
        return None, report
    root = report.snapshot.root
    assert report.snapshot.info is not None
    manifest = compute_manifest(root, report.snapshot.info.name)
    write_manifest(root, manifest)
    return manifest, report


def verify_snapshot(path: Path | str) -> tuple[SnapshotManifest, ManifestDiff]:
    root = Path(path)
    if not root.is_dir():
        raise UserError(f"{root}: no such folder; pass the path of a frozen snapshot")
    manifest = read_manifest(root)
    return manifest, diff_manifest(root, manifest)
