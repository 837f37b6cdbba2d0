"""Frozen runs: `omnidr archive`, `omnidr archive verify`, `omnidr rescore`.

An archive is a folder: a copy of the run root's system folders and results, the snapshot the run
used (so rubric trees travel with the reports), optionally the Docker images as `docker save`
tarballs, and `ARCHIVE.json`, written last, with the sha256 of every other file, the snapshot id,
image IDs, package versions, git commit and the exact commands that made the run. The MLflow store
is not copied (it is an index of the same files). Rescoring reads only the archive and writes a new
results folder; no agent runs and no Docker engine is needed.
"""

import hashlib
import json
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

from pydantic import Field

from omnidr._files import write_atomic
from omnidr._lock import LOCK_FILE, folder_lock
from omnidr._records import DiskRecord
from omnidr.benchmark import ManifestDiff, diff_files, hash_files
from omnidr.errors import UserError
from omnidr.images import ImagePackages
from omnidr.paths import EvalPaths, RunPaths
from omnidr.tracking import ARTIFACTS_DIR, DB_FILE

from ._results import (
    EVAL_FILE,
    RESULT_FILES,
    EvalConfig,
    read_eval_config,
)

ARCHIVE_FILE = "ARCHIVE.json"
FORMAT = "omnidr-archive-1"
SNAPSHOT_DIR = "snapshot"
IMAGES_DIR = "images"
RESCORE_FILE = "RESCORE.json"
# the MLflow store (an index of files the archive holds anyway) and the run root's lock file
SKIPPED = {DB_FILE, ARTIFACTS_DIR, LOCK_FILE}


class ArchiveManifest(DiskRecord):
    """`ARCHIVE.json`."""

    SCHEMA = "omnidr.archive/1"

    format: str = Field(FORMAT, description="Layout version of the archive.")
    archive_id: str = Field(description="'archive-' + 16 hex digits of the sha256 over the file list.")
    created_at: datetime
    source: str = Field(description="Run root the archive was made from.")
    snapshot_id: str
    systems: dict[str, EvalConfig] = Field(description="System folder -> what it was evaluated with (no keys).")
    files: dict[str, str] = Field(description="Path relative to the archive -> sha256, every file but this one.")
    image_ids: dict[str, str] = Field(description="Image reference -> Docker image ID, every image the run used.")
    image_packages: dict[str, ImagePackages] = Field(
        default_factory=dict, description="Image reference -> every package version it holds and its drift from the locks."
    )
    images_saved: list[str] = Field(default_factory=list, description="Tarballs under images/ (docker save).")
    git_commit: str
    git_dirty: bool
    packages: dict[str, str] = Field(description="Installed package versions when the run root was archived.")
    run_environment: dict = Field(default_factory=dict, description="environment.json of the run root, as the run wrote it.")
    commands: list[dict] = Field(description="Every `omnidr eval`/`compare` invocation that wrote the run root.")


def _systems(root: Path) -> dict[str, EvalConfig]:
    systems = {p.name: c for p in sorted(root.iterdir()) if p.is_dir() and (c := read_eval_config(p)) is not None}
    if not systems:
        if RunPaths(root).eval_config.is_file():
            raise UserError(f"{root} is a system folder; pass its run root {root.parent}")
        raise UserError(f"{root} holds no evaluated system (no */{EVAL_FILE}); pass a run root written by `omnidr eval`")
    return systems


def _commands(root: Path) -> list[dict]:
    path = root / "commands.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def _images(root: Path) -> tuple[dict[str, str], dict[str, ImagePackages]]:
    """Image reference -> ID, and reference -> the package versions it records, from run.json
    (references) and attempt.json (IDs and packages), per role."""
    ids: dict[str, str] = {}
    packages: dict[str, ImagePackages] = {}
    for run_file in root.glob("*/run.json"):
        run = json.loads(run_file.read_text("utf-8"))
        refs = {"agent": run.get("agent_image"), "gateway": run.get("gateway_image"), "egress": run.get("egress_image")}
        for attempt in run_file.parent.glob("attempts/*/*/attempt.json"):
            record = json.loads(attempt.read_text("utf-8"))
            for role, image_id in record.get("image_ids", {}).items():
                if refs.get(role):
                    ids[refs[role]] = image_id
            for role, held in record.get("image_packages", {}).items():
                if refs.get(role):
                    packages[refs[role]] = ImagePackages.model_validate(held)
    return dict(sorted(ids.items())), dict(sorted(packages.items()))


def _snapshot_folder(root: Path, systems: dict[str, EvalConfig], given: Path | None) -> Path:
    from omnidr.benchmark import MANIFEST_FILE, verify_snapshot

    candidates = [given] if given else []
    for command in reversed(_commands(root)):
        if command.get("snapshot"):
            candidates.append(Path(command["snapshot"]))
    for run_file in root.glob("*/run.json"):
        candidates.append(Path(json.loads(run_file.read_text("utf-8"))["snapshot"]))
    want = next(iter(systems.values())).snapshot_id
    for path in candidates:
        if path and (path / MANIFEST_FILE).is_file():
            manifest, diff = verify_snapshot(path)
            if manifest.snapshot_id == want and diff.clean:
                return path
        elif path and path.is_dir() and not (path / MANIFEST_FILE).is_file() and given:
            return path
    raise UserError(f"cannot find the snapshot {want} the run used; pass --snapshot FOLDER (it must verify as {want})")


def archive_run(root: Path, out: Path, snapshot: Path | None = None, save_images: bool = False,
                progress=lambda _m: None) -> ArchiveManifest:
    """Write the archive of run root `root` into the new folder `out`."""
    from omnidr.tracking import environment_facts

    root = Path(root).resolve()
    if not root.is_dir():
        raise UserError(f"run root {root} does not exist; pass the folder `omnidr eval` printed (runs/<snapshot id>)")
    systems = _systems(root)
    if out.exists() and any(out.iterdir()):
        raise UserError(f"{out} exists and is not empty; choose a new --out folder (archives are never overwritten)")
    snapshot_dir = _snapshot_folder(root, systems, snapshot)
    out.mkdir(parents=True, exist_ok=True)
    progress(f"copying {len(systems)} system folder(s) and the results from {root}")
    for item in sorted(root.iterdir()):
        if item.name in SKIPPED:
            continue
        if item.is_dir():  # a lock file names a process of this machine: not part of the run
            shutil.copytree(item, out / item.name, symlinks=False, ignore=shutil.ignore_patterns(LOCK_FILE))
        else:
            shutil.copy2(item, out / item.name)
    progress(f"copying the snapshot {snapshot_dir}")
    shutil.copytree(snapshot_dir, out / SNAPSHOT_DIR)
    image_ids, image_packages = _images(root)
    saved = []
    if save_images:
        saved = _save_images(image_ids, out / IMAGES_DIR, progress)
    progress("hashing every file")
    files = hash_files(out, ARCHIVE_FILE)
    env = environment_facts()
    run_env_file = EvalPaths(root).environment
    manifest = ArchiveManifest(
        archive_id="archive-" + hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:16],
        created_at=datetime.now(UTC), source=str(root), snapshot_id=next(iter(systems.values())).snapshot_id,
        systems=systems, files=files, image_ids=image_ids, image_packages=image_packages, images_saved=saved,
        git_commit=env["git_commit"],
        git_dirty=env["git_dirty"], packages=env["packages"],
        run_environment=json.loads(run_env_file.read_text("utf-8")) if run_env_file.is_file() else {},
        commands=_commands(root),
    )
    write_atomic(out / ARCHIVE_FILE, manifest.model_dump_json(indent=2))
    return manifest


def _save_images(image_ids: dict[str, str], folder: Path, progress) -> list[str]:
    from docker.errors import ImageNotFound

    from omnidr.images import docker_client

    client = docker_client(timeout_s=600)
    folder.mkdir(parents=True, exist_ok=True)
    saved = []
    for ref, image_id in image_ids.items():
        try:
            image = client.images.get(image_id)
        except ImageNotFound:
            raise UserError(f"image {ref} ({image_id[:19]}) is no longer on this engine; archive without --images") from None
        name = ref.replace("/", "_").replace(":", "_") + ".tar"
        progress(f"saving image {ref} to {IMAGES_DIR}/{name}")
        with (folder / name).open("wb") as f:
            for chunk in image.save(named=True):
                f.write(chunk)
        saved.append(f"{IMAGES_DIR}/{name}")
    return saved


def read_archive(path: Path) -> ArchiveManifest:
    file = Path(path) / ARCHIVE_FILE
    if not file.is_file():
        raise UserError(f"{path} is not an archive (no {ARCHIVE_FILE}); make one with `omnidr archive RUN_ROOT`")
    try:
        return ArchiveManifest.model_validate_json(file.read_text("utf-8"))
    except ValueError as exc:
        raise UserError(f"{file} is unreadable: {str(exc).splitlines()[0][:200]}") from None


def verify_archive(path: Path) -> tuple[ArchiveManifest, ManifestDiff]:
    """The archive's manifest and its changed, missing and extra files."""
    manifest = read_archive(path)
    return manifest, diff_files(Path(path), manifest.files, ARCHIVE_FILE)


class RescoreRecord(DiskRecord):
    """`RESCORE.json` of a results folder made by `omnidr rescore`."""

    SCHEMA = "omnidr.rescore/1"

    archive: str = Field(description="Archive folder that was re-scored.")
    archive_id: str
    judge: str = Field(description="Judge key of the new evaluations.")
    evaluator_version: str
    created_at: datetime
    elapsed_s: float


def rescore_archive(archive: Path, out: Path, judge, progress=lambda _m: None, wait: bool = False,
                    evaluator: str = "docker"):
    """Score every frozen report of a verified archive again into `out` (holding its lock); returns
    (board, results, record)."""
    manifest, diff = verify_archive(archive)
    if not diff.clean:
        n = len(diff.changed) + len(diff.missing) + len(diff.extra)
        raise UserError(f"{archive} does not verify ({n} file(s) differ); run `omnidr archive verify {archive}`")
    with folder_lock(out, wait=wait, on_wait=progress):  # one driver per output folder
        if any(p.name != LOCK_FILE for p in out.iterdir()):
            raise UserError(f"{out} exists and is not empty; choose a new --out folder")
        return _rescore(archive, out, judge, manifest, progress, evaluator)


def _rescore(archive: Path, out: Path, judge, manifest, progress, evaluator: str = "docker"):
    from omnidr.evaluation import JUDGE_CACHE_DIR

    from .kinds import Scoring, snapshot_kind

    t0 = time.monotonic()
    snapshot = Path(archive) / SNAPSHOT_DIR
    kind = snapshot_kind(snapshot)  # frozen answers are judged (or checked), reports scored: the kind's evaluation
    key = kind.judge_key(judge)
    scoring = Scoring(snapshot, judge, evaluator, None, progress)
    for label, config in manifest.systems.items():
        progress(f"{label}: re-scoring {len(config.tasks)} frozen report(s) with judge {judge.spec}")
        (out / label).mkdir(parents=True, exist_ok=True)
        new_config = config.model_copy(update={"judge": judge})
        frozen, fresh = RunPaths(Path(archive) / label), RunPaths(out / label)
        write_atomic(fresh.eval_config, new_config.model_dump_json(indent=2))
        # the archived judge cache seeds the new one: its votes are keyed by judge, prompt version, atom
        # and report content, so the same judge reproduces every decision without a call, another asks
        frozen_cache = frozen.evaluation / JUDGE_CACHE_DIR
        if frozen_cache.is_dir():
            shutil.copytree(frozen_cache, fresh.evaluation / JUDGE_CACHE_DIR)
        kind.evaluate(frozen.root, fresh.evaluation, config.tasks, scoring)
    first = next(iter(manifest.systems.values()))
    board, results = kind.build_board(out, snapshot, manifest.snapshot_id, key, first.tasks, traces=Path(archive))
    if board is None:
        raise UserError(f"nothing in {archive} could be scored")
    kind.write_board(out, board, results)
    record = RescoreRecord(archive=str(Path(archive).resolve()), archive_id=manifest.archive_id, judge=key,
                           evaluator_version=kind.evaluator_version, created_at=datetime.now(UTC),
                           elapsed_s=round(time.monotonic() - t0, 2))
    write_atomic(out / RESCORE_FILE, record.model_dump_json(indent=2))
    return board, results, record


__all__ = ["ARCHIVE_FILE", "RESULT_FILES", "ArchiveManifest", "archive_run", "read_archive", "rescore_archive",
           "verify_archive"]
