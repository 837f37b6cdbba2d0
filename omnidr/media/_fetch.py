"""Acquiring source videos with yt-dlp (embedded API), verifying them and probing them."""

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ._probe import ProbeError, VideoProbe, probe_video


class FetchStatus(str, Enum):
    present = "present"  # already on disk with the right checksum; nothing downloaded
    downloaded = "downloaded"
    failed = "failed"


class CaptionsResult(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)

    file: str = Field(description="File name of the track beside the video.")
    language: str = Field(description="Language code as the source labels it.")
    automatic: bool = Field(False, description="Made by the platform's speech recognition.")
    status: FetchStatus = Field(description="present, downloaded or failed.")
    reason: str | None = Field(None, description="Why it failed.")
    sha256: str | None = Field(None, description="sha256 of the file on disk.")
    added: bool = Field(False, description="Newly found and recorded in task.json (--add-captions).")


class FetchResult(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)

    task_id: str = Field(description="Task whose source video this is.")
    url: str = Field(description="URL the video was (or would have been) fetched from.")
    status: FetchStatus = Field(description="present, downloaded or failed.")
    reason: str | None = Field(None, description="Why it failed, or a warning about the probe.")
    sha256: str | None = Field(None, description="sha256 of the file on disk after the fetch.")
    probe: VideoProbe | None = Field(None, description="ffprobe facts about the file on disk.")
    captions: list[CaptionsResult] = Field(default_factory=list, description="The caption tracks beside the video.")


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


def _params(workdir: Path, socket_timeout_s: float, logger: _QuietLogger) -> dict:
    return {
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


@dataclass
class _Fetched:
    video: Path | None
    captions: dict[str, tuple[Path, bool]]  # language -> (file, automatic)


def _download(url: str, workdir: Path, socket_timeout_s: float, video: bool = True,
              languages: Sequence[str] = (), automatic: bool = True) -> _Fetched:
    """Download the video (unless `video` is False) and the caption tracks in `languages` (yt-dlp's language
    patterns; uploader's tracks first, the platform's automatic ones where the uploader gave none)."""
    logger = _QuietLogger()
    params = _params(workdir, socket_timeout_s, logger)
    if languages:
        params.update(writesubtitles=True, writeautomaticsub=automatic, subtitleslangs=list(languages),
                      subtitlesformat="vtt/srt/best")
    if not video:
        params["skip_download"] = True
    import yt_dlp  # here, not at the top: it costs every `omnidr` command a tenth of a second to import

    try:
        with yt_dlp.YoutubeDL(params) as ydl:
            info = ydl.extract_info(url, download=True) or {}
    except yt_dlp.utils.YoutubeDLError as exc:
        raise RuntimeError(logger.errors[-1] if logger.errors else str(exc).removeprefix("ERROR: ")) from None
    uploader = set(info.get("subtitles") or {})
    captions = {}
    for lang, sub in (info.get("requested_subtitles") or {}).items():
        path = Path(sub.get("filepath") or "")
        if path.is_file():
            captions[lang] = (path, lang not in uploader)
    if not video:
        return _Fetched(None, captions)
    tracks = {path for path, _ in captions.values()}
    produced = [p for p in workdir.iterdir()
                if p.is_file() and p not in tracks and not p.name.endswith((".part", ".ytdl"))]
    if not produced:
        raise RuntimeError(logger.errors[-1] if logger.errors else "yt-dlp produced no file")
    return _Fetched(max(produced, key=lambda p: p.stat().st_size), captions)


@dataclass(frozen=True)
class FetchOptions:
    """How `fetch_video` fetches."""

    force: bool = False
    """Download again even what is present with the right checksum."""
    socket_timeout_s: float = 30.0
    """yt-dlp's socket timeout, seconds."""
    add_captions: str | None = None
    """A language (e.g. `en`) whose caption tracks are fetched too where task.json declares none."""


def fetch_video(
    task_id: str,
    url: str,
    dest: Path,
    sha256: str,
    duration_s: float | None = None,
    captions: Sequence = (),
    options: FetchOptions = FetchOptions(),
) -> FetchResult:
    """Make `dest` hold the video at `url` with checksum `sha256`, and the caption tracks `captions`
    (`omnidr.benchmark.Captions`) beside it, each with its checksum.

    A file already present with the right checksum is kept (unless `options.force`). A download goes to a temporary
    folder beside `dest` and replaces it only once its checksum matches, so a failed fetch never damages what
    was there. With `options.add_captions` (a language, e.g. `en`), tracks in that language that task.json does not
    declare are fetched too and returned with `added=True` (the caller records them).
    """
    from omnidr.benchmark import sha256_file

    force, socket_timeout_s, add_captions = options.force, options.socket_timeout_s, options.add_captions
    result = FetchResult(task_id=task_id, url=url, status=FetchStatus.present, sha256=sha256)
    need_video = force or not (dest.is_file() and sha256_file(dest) == sha256)
    declared = list(captions)
    missing = [c for c in declared if force or not ((dest.parent / c.file).is_file()
                                                     and sha256_file(dest.parent / c.file) == c.sha256)]
    languages = [c.language for c in missing]
    if add_captions:
        languages.append(f"{add_captions}(-.*)?")
    if not need_video and not languages:
        return _probed(result.model_copy(update={"captions": [_present(c) for c in declared]}), dest, duration_s)
    dest.parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=".fetch-", dir=dest.parent))
    try:
        try:
            got = _download(url, workdir, socket_timeout_s, video=need_video, languages=languages,
                            automatic=bool(add_captions) or any(c.automatic for c in missing))
        except RuntimeError as exc:
            return result.model_copy(update={"status": FetchStatus.failed, "sha256": None,
                                             "reason": f"download failed: {exc}"})
        if got.video is not None:
            actual = sha256_file(got.video)
            if actual != sha256:
                return result.model_copy(update={"status": FetchStatus.failed, "sha256": actual,
                                                 "reason": f"checksum mismatch: expected {sha256}, downloaded file has {actual}"})
            os.replace(got.video, dest)
            result = result.model_copy(update={"status": FetchStatus.downloaded})
        tracks = [_present(c) if c not in missing else _place(c.file, c.language, c.automatic, c.sha256, got, dest)
                  for c in declared]
        if add_captions:
            known = {c.language for c in declared} | {c.file for c in declared}
            found = sorted((lang for lang in got.captions if lang not in known), key=lambda x: (x != add_captions, x))
            for lang in found[:1]:  # one track: the task language's own code first
                path, automatic = got.captions[lang]
                tracks.append(_place(f"{dest.stem}.{lang}{path.suffix}", lang, automatic, None, got, dest))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    failed = [t for t in tracks if t.status is FetchStatus.failed]
    if failed:
        result = result.model_copy(update={"status": FetchStatus.failed,
                                           "reason": f"captions {failed[0].file}: {failed[0].reason}"})
    return _probed(result.model_copy(update={"captions": tracks}), dest, duration_s)


def _present(track) -> CaptionsResult:
    return CaptionsResult(file=track.file, language=track.language, automatic=track.automatic,
                          status=FetchStatus.present, sha256=track.sha256)


def _place(file: str, language: str, automatic: bool, sha256: str | None, got: _Fetched, dest: Path) -> CaptionsResult:
    """Move the downloaded track of `language` to `file` beside the video if its checksum is `sha256` (any
    checksum when None: a newly added track)."""
    from omnidr.benchmark import sha256_file

    base = CaptionsResult(file=file, language=language, automatic=automatic, status=FetchStatus.failed,
                          added=sha256 is None)
    if language not in got.captions:
        return base.model_copy(update={"reason": f"the source offers no {language} captions any more"})
    path = got.captions[language][0]
    actual = sha256_file(path)
    if sha256 is not None and actual != sha256:
        return base.model_copy(update={"sha256": actual, "reason": f"checksum mismatch: expected {sha256}, "
                                                                  f"downloaded file has {actual}"})
    os.replace(path, dest.parent / file)
    return base.model_copy(update={"status": FetchStatus.downloaded, "sha256": actual})


def _probed(result: FetchResult, path: Path, duration_s: float | None) -> FetchResult:
    try:
        probe = probe_video(path)
    except ProbeError as exc:
        return result.model_copy(update={"status": FetchStatus.failed, "reason": str(exc)})
    reason = result.reason  # a failed caption track
    if duration_s is not None and abs(probe.duration_s - duration_s) > 1.0:
        reason = f"probed duration {probe.duration_s} s differs from task.json's {duration_s} s"
    return result.model_copy(update={"probe": probe, "reason": reason})


def fetch_snapshot_videos(
    snapshot_root: Path | str,
    task_ids: list[str] | None = None,
    force: bool = False,
    on_result: Callable[[FetchResult], None] | None = None,
    add_captions: bool = False,
) -> list[FetchResult]:
    """Fetch the source video of every task (or of `task_ids`) and its declared caption tracks; one failure
    does not stop the rest. With `add_captions`, a track in the task's language that task.json does not
    declare is fetched too and recorded in task.json (the snapshot then needs freezing again)."""
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
            options = FetchOptions(force=force, add_captions=bundle.task.language.value if add_captions else None)
            result = fetch_video(task_id, video.url, bundle.folder / video.file, video.sha256, video.duration_s,
                                 captions=video.captions, options=options)
            added = [c for c in result.captions if c.added and c.status is not FetchStatus.failed]
            if added:
                _record_captions(bundle.folder / "task.json", added)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


def _record_captions(task_json: Path, added: list[CaptionsResult]) -> None:
    """Add newly fetched tracks to task.json's `video.captions`, keeping the rest of the file as it is."""
    import json

    from omnidr._files import write_atomic

    data = json.loads(task_json.read_text("utf-8"))
    tracks = data["video"].setdefault("captions", [])
    for c in added:
        tracks.append({"file": c.file, "sha256": c.sha256, "language": c.language, "automatic": c.automatic})
    write_atomic(task_json, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
