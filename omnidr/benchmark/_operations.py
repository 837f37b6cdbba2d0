"""What the `omnidr snapshot` commands do, callable without the CLI."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from omnidr.errors import UserError

from ._manifest import ManifestDiff, SnapshotManifest, compute_manifest, diff_manifest, read_manifest, write_manifest
from ._review import REVIEW_FILE, WarningReview
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
    reviewed: dict[tuple[str, str, str], WarningReview] = field(default_factory=dict)  # warnings with a decision

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    def review(self, problem: Problem) -> WarningReview | None:
        """The recorded decision on a warning, if there is one."""
        return self.reviewed.get((problem.file, problem.path, problem.message))

    @property
    def unreviewed(self) -> list[Problem]:
        """Warnings without a review decision: `snapshot freeze` refuses while there is one."""
        return [p for p in self.warnings if self.review(p) is None]


Check = Callable[[Snapshot], list[Problem]]


def validate_snapshot(path: Path | str, check_videos: bool = True, checks: Sequence[Check] = ()) -> ValidationReport:
    """The static checks, then `checks` (the pipeline adds the evaluator's empty-report check; with
    `check_videos` off they are skipped with the video checks), then the review decisions."""
    snap = open_snapshot(path)
    problems = validate(snap, check_videos=check_videos)
    if check_videos:
        for check in checks:
            problems.extend(check(snap))
    reviewed: dict[tuple[str, str, str], WarningReview] = {}
    current = {(p.file, p.path, p.message) for p in problems if p.severity == "warning"}
    for i, r in enumerate(snap.reviews.reviews if snap.reviews else []):
        if r.key() in current:
            reviewed[r.key()] = r
        else:
            problems.append(Problem("error", REVIEW_FILE, f"reviews[{i}]", (
                f"matches no current warning ({r.file}: {r.field}: {r.message}); remove the entry")))
    return ValidationReport(snap, problems, reviewed)


def freeze_snapshot(path: Path | str, checks: Sequence[Check] = ()) -> tuple[SnapshotManifest | None, ValidationReport]:
    """Validate, then write MANIFEST.json atomically. Refuses (returns no manifest) on an error or on a
    warning without a review decision (App. E.4)."""
    report = validate_snapshot(path, checks=checks)
    if report.errors or report.unreviewed:
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
