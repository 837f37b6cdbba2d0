"""Acquiring source videos with yt-dlp (embedded API), verifying them and probing them."""

import os
import shutil
import tempfile
from collections.abc import Callable
from enum import Enum
from pathlib import Path

import yt_dlp
from pydantic import BaseModel, ConfigDict, Field

from ._probe import ProbeError, VideoProbe, probe_video


class FetchStatus(str, Enum):
    present = "present"  # already on disk with the right checksum; nothing downloaded
    downloaded = "downloaded"
    failed = "failed"


class FetchResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    task_id: str = Field(description="Task whose source video this is.")
    url: str = Field(description="URL the video was (or would have been) fetched from.")
    status: FetchStatus = Field(description="present, downloaded or failed.")
    reason: str | None = Field(None, description="Why it failed, or a warning about the probe.")
    sha256: str | None = Field(None, description="sha256 of the file on disk after the fetch.")
    probe: VideoProbe | None = Field(None, description="ffprobe facts about the file on disk.")


class _QuietLogger:
    """Collects yt-dlp's messages instead of printing them; the last error becomes the reason."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def debug(self, msg: str) -> None:
        pass

    def info(self, msg: str) -> None:
        pass

    def warning(self, msg: str) -> None:
        pass

    def error(self, msg: str) -> None:
        self.errors.append(msg.removeprefix("ERROR: ").strip())


def _download(url: str, workdir: Path, socket_timeout_s: float) -> Path:
    logger = _QuietLogger()
    params = {
        "outtmpl": str(workdir / "video.%(ext)s"),
        "format": "bv*+ba/b",
        "merge_output_format": "mp4",
        "noplaylist": True,
        "quiet": True,
        "no_warnings": True,
        "noprogress": True,
        "logger": logger,
        "socket_timeout": socket_timeout_s,
        "retries": 2,
        "fragment_retries": 2,
        "overwrites": True,
        "cachedir": False,
    }
    try:
        with yt_dlp.YoutubeDL(params) as ydl:
            ydl.download([url])
    except yt_dlp.utils.YoutubeDLError as exc:
        raise RuntimeError(logger.errors[-1] if logger.errors else str(exc).removeprefix("ERROR: ")) from None
    produced = [p for p in workdir.iterdir() if p.is_file() and not p.name.endswith((".part", ".ytdl"))]
    if not produced:
        raise RuntimeError(logger.errors[-1] if logger.errors else "yt-dlp produced no file")
    return max(produced, key=lambda p: p.stat().st_size)


def fetch_video(
    task_id: str,
    url: str,
    dest: Path,
    sha256: str,
    duration_s: float | None = None,
    force: bool = False,
    socket_timeout_s: float = 30.0,
) -> FetchResult:
    """Make `dest` hold the video at `url` with checksum `sha256`.

    A file already present with the right checksum is kept (unless `force`). A download
    goes to a temporary folder beside `dest` and replaces it only once its checksum
    matches, so a failed fetch never damages what was there.
    """
    from omnidr.benchmark import sha256_file

    if dest.is_file() and not force and sha256_file(dest) == sha256:
        return _probed(FetchResult(task_id=task_id, url=url, status=FetchStatus.present, sha256=sha256), dest, duration_s)
    dest.parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=".fetch-", dir=dest.parent))
    try:
        try:
            got = _download(url, workdir, socket_timeout_s)
        except RuntimeError as exc:
            return FetchResult(task_id=task_id, url=url, status=FetchStatus.failed, reason=f"download failed: {exc}")
        actual = sha256_file(got)
        if actual != sha256:
            return FetchResult(
                task_id=task_id, url=url, status=FetchStatus.failed, sha256=actual,
                reason=f"checksum mismatch: expected {sha256}, downloaded file has {actual}",
            )
        os.replace(got, dest)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return _probed(FetchResult(task_id=task_id, url=url, status=FetchStatus.downloaded, sha256=sha256), dest, duration_s)


def _probed(result: FetchResult, path: Path, duration_s: float | None) -> FetchResult:
    try:
        probe = probe_video(path)
    except ProbeError as exc:
        return result.model_copy(update={"status": FetchStatus.failed, "reason": str(exc)})
    reason = None
    if duration_s is not None and abs(probe.duration_s - duration_s) > 1.0:
        reason = f"probed duration {probe.duration_s} s differs from task.json's {duration_s} s"
    return result.model_copy(update={"probe": probe, "reason": reason})


def fetch_snapshot_videos(
    snapshot_root: Path | str,
    task_ids: list[str] | None = None,
    force: bool = False,
    on_result: Callable[[FetchResult], None] | None = None,
) -> list[FetchResult]:
    """Fetch the source video of every task (or of `task_ids`); one failure does not stop the rest."""
    from omnidr.benchmark import open_snapshot
    from omnidr.errors import UserError

    snap = open_snapshot(snapshot_root)
    wanted = task_ids or list(snap.tasks)
    unknown = [t for t in wanted if t not in snap.tasks]
    if unknown:
        raise UserError(f"unknown task id(s): {', '.join(unknown)}; the snapshot has {', '.join(snap.tasks)}")
    results = []
    for task_id in wanted:
        bundle = snap.tasks[task_id]
        if bundle.task is None:
            result = FetchResult(task_id=task_id, url="", status=FetchStatus.failed,
                                 reason=f"tasks/{task_id}/task.json did not load; run `omnidr snapshot validate`")
        else:
            video = bundle.task.video
            result = fetch_video(task_id, video.url, bundle.folder / video.file, video.sha256, video.duration_s, force)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results
