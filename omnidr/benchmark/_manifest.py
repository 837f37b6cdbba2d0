"""`MANIFEST.json`: the sha256 of every file of a snapshot and the snapshot id derived from them."""

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from ._base import Record
from ._validate import sha256_file

MANIFEST_FILE = "MANIFEST.json"
IGNORED_PARTS = {"__pycache__", ".DS_Store"}


class SnapshotManifest(Record):
    snapshot_id: str = Field(description="'<name>-<first 16 hex of the digest over all file hashes>'.")
    algorithm: str = Field("sha256", description="Hash algorithm of `files`.")
    files: dict[str, str] = Field(description="Path relative to the snapshot root (POSIX) -> sha256 hex.")


def _files(root: Path, own_file: str = MANIFEST_FILE) -> list[Path]:
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.as_posix() == own_file or IGNORED_PARTS & set(rel.parts) or not path.is_file():
            continue
        out.append(path)
    return out


def hash_files(root: Path, own_file: str = MANIFEST_FILE) -> dict[str, str]:
    """POSIX path relative to `root` -> sha256 of every file but `own_file` (the manifest itself)."""
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in _files(root, own_file)}


def compute_manifest(root: Path, name: str) -> SnapshotManifest:
    files = hash_files(root)
    digest = hashlib.sha256("".join(f"{k}\0{v}\n" for k, v in sorted(files.items())).encode()).hexdigest()
    return SnapshotManifest(snapshot_id=f"{name}-{digest[:16]}", files=files)


def write_manifest(root: Path, manifest: SnapshotManifest) -> Path:
    """Write MANIFEST.json whole or not at all (`omnidr._files.write_atomic`)."""
    from omnidr._files import write_atomic

    target = root / MANIFEST_FILE
    write_atomic(target, manifest.model_dump_json(indent=2) + "\n")
    return target


@dataclass(frozen=True)
class ManifestDiff:
    changed: list[str]
    missing: list[str]
    extra: list[str]

    @property
    def clean(self) -> bool:
        return not (self.changed or self.missing or self.extra)


def diff_files(root: Path, files: dict[str, str], own_file: str = MANIFEST_FILE) -> ManifestDiff:
    """Changed, missing and extra files of `root` against recorded hashes `files`."""
    current = {p.relative_to(root).as_posix(): p for p in _files(root, own_file)}
    changed = sorted(k for k, h in files.items() if k in current and sha256_file(current[k]) != h)
    missing = sorted(k for k in files if k not in current)
    extra = sorted(k for k in current if k not in files)
    return ManifestDiff(changed, missing, extra)


def diff_manifest(root: Path, manifest: SnapshotManifest) -> ManifestDiff:
    return diff_files(root, manifest.files)


def read_manifest(root: Path) -> SnapshotManifest:
    """The snapshot's MANIFEST.json; raises UserError when it is absent or unreadable."""
    from omnidr.errors import UserError

    path = root / MANIFEST_FILE
    if not path.is_file():
        raise UserError(f"{root}: no {MANIFEST_FILE}; run `omnidr snapshot freeze {root}` first")
    try:
        return SnapshotManifest.model_validate_json(path.read_text("utf-8"))
    except ValueError as exc:
        first = str(exc).splitlines()[0]
        raise UserError(f"{path}: unreadable manifest ({first}); the snapshot cannot be verified: restore MANIFEST.json "
                        "from the snapshot's source (freezing it again would approve whatever the folder holds now)") from None
