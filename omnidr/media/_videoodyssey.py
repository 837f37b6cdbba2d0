"""`omnidr snapshot import-videoodyssey`: a multiple-choice snapshot from the VideoOdyssey authors' release.

The release (paper 004; the public repository `maifoundations/VideoOdyssey`) is an annotation file per subset,
`VideoOdyssey_V.json` and `VideoOdyssey_AV.json`, a folder of videos and a folder of `.srt` subtitles named after
each video's file. An annotation is a JSON list of videos, each with `video_id`, `video_path` (relative to the video
folder), `video_category`, `duration_minutes` and `questions`; a question has `question_id`, `question`, `options`
(`"A. ..."` to `"D. ..."`), `answer` (a letter), `question_type` (a list), `time_reference` (`HH:MM:SS-HH:MM:SS`, the
certificate window) and, in the AV file, `audio_type`. The subset is the file's: only a name ending in `_V.json` or
`_AV.json` says which.

The importer converts each entry into this sandbox's models (`McqVideo`, `McqTask`) and keeps the release's own
labels beside them (`release`), hashes each video and checks its length with ffprobe against `duration_minutes`,
links the videos and subtitles into the snapshot (a copy where a link cannot be made), keeps the annotation file
under `release/` (the export echoes it), then validates and freezes the snapshot. Any fault in the input stops it
with one line naming the video or question, before anything is written.

Where the release leaves a field of ours empty we decide: the video's domain is its `video_category` as a label,
its subcategory and URL and the question's dimension are left unset (the annotation has none); the task type is the
first `question_type` as a label (all of them are kept); a zero-length `time_reference` becomes a one-second window
(the official scorer bins it at [0, 0.5) min either way).
"""

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from omnidr._files import write_atomic
from omnidr.benchmark import (
    AudioType,
    CclWindow,
    McqProtocol,
    McqSubtitles,
    McqTask,
    McqVideo,
    McqVideos,
    ReleaseQuestionRef,
    ReleaseVideoRef,
    SnapshotInfo,
    Subset,
    TaskFormat,
    parse_time_reference,
    sha256_file,
)
from omnidr.errors import UserError

RELEASE_DIR = "release"
DURATION_TOLERANCE = (2.0, 0.01)
"""How far ffprobe's length may be from the annotation's `duration_minutes`: 2 s or 1%, whichever is larger (the
release states minutes to two decimals)."""

_OPTION = re.compile(r"^\s*([A-D])\s*\.\s*(.*\S)\s*$", re.DOTALL)


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow")  # the release may carry fields we do not read: kept in its copy


def _labels(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [] if value in (None, "") else [value]
    return [str(v).strip() for v in items if str(v).strip()]


class ReleaseQuestion(_Loose):
    question_id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    options: list[str] = Field(min_length=4, max_length=4)
    answer: str
    question_type: list[str] = Field(default_factory=list)
    time_reference: str
    audio_type: list[str] = Field(default_factory=list)

    @field_validator("question_type", "audio_type", mode="before")
    @classmethod
    def _as_list(cls, value: Any) -> list[str]:  # the release writes a list, a scorer also takes one label
        return _labels(value)


class ReleaseVideo(_Loose):
    video_id: str = Field(min_length=1)
    video_path: str = Field(min_length=1)
    video_category: str = ""
    duration_minutes: float = Field(ge=0)
    questions: list[ReleaseQuestion] = Field(min_length=1)


def subset_of(annotation: Path) -> Subset:
    """The subset a release file holds, from its name (`..._V.json` or `..._AV.json`, as the authors' runner reads it)."""
    if annotation.name.endswith("_AV.json"):
        return Subset.AV
    if annotation.name.endswith("_V.json"):
        return Subset.V
    raise UserError(f"{annotation.name}: the subset cannot be told from the name; the release names its files "
                    "VideoOdyssey_V.json and VideoOdyssey_AV.json (rename the file to end in _V.json or _AV.json)")


def slug(text: str) -> str:
    """A release id as a folder-safe lowercase label (`jtoq3S48Pgk_1` -> `jtoq3s48pgk_1`)."""
    label = re.sub(r"[^a-z0-9_-]+", "-", text.strip().lower()).strip("-_")
    return label or "unlabelled"


def _probe_seconds(video: Path) -> float:
    try:
        done = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "json", str(video)],
                              capture_output=True, timeout=600)
    except FileNotFoundError:
        raise UserError("ffprobe is not installed; run `make setup` (installs Debian's ffmpeg)") from None
    try:
        return float(json.loads(done.stdout or b"{}")["format"]["duration"])
    except (KeyError, TypeError, ValueError):
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no duration"]
        raise UserError(f"{video}: ffprobe cannot read its length ({tail[0]}); check the file") from None


def _place(source: Path, dest: Path) -> str:
    """Hard-link `source` to `dest` (a release's videos run to hours), copying where no link can be made."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, dest)
        return "linked"
    except OSError:
        shutil.copy2(source, dest)
        return "copied"


@dataclass
class _Plan:
    """Everything the import writes, built and checked before any of it is."""

    subset: Subset
    videos: list[tuple[McqVideo, Path, Path | None]]  # the model, its source file, its subtitle file
    tasks: list[McqTask]


def _option_texts(q: ReleaseQuestion, where: str) -> list[str]:
    texts = []
    for letter, option in zip("ABCD", q.options, strict=True):
        m = _OPTION.match(option)
        if m is None or m.group(1) != letter:
            raise UserError(f"{where}: option {option[:40]!r} is not '{letter}. TEXT' (options are A. to D. in order)")
        texts.append(m.group(2))
    return texts


def _task(q: ReleaseQuestion, video: McqVideo, subset: Subset, where: str) -> McqTask:
    options = _option_texts(q, where)
    answer = q.answer.strip()
    if answer not in ("A", "B", "C", "D"):
        raise UserError(f"{where}: answer {q.answer!r} is not one of A, B, C, D")
    try:
        start, end = parse_time_reference(q.time_reference)
    except ValueError as exc:
        raise UserError(f"{where}: time_reference {exc}") from None
    if end > video.duration_s + 1.0:
        raise UserError(f"{where}: time_reference {q.time_reference} ends past the end of its video "
                        f"({video.duration_s / 60:.2f} min)")
    end = max(end, start + 1.0)  # a zero-length window: one second (see the module docstring)
    audio = None
    if subset is Subset.AV:
        kinds = [a.lower() for a in q.audio_type]
        known = [k for k in kinds if k in {a.value for a in AudioType}]
        if not known:
            raise UserError(f"{where}: an AV question needs an audio_type of speech, sound or music, not "
                            f"{q.audio_type or 'none'}")
        audio = AudioType(known[0])
    try:
        return McqTask(id=slug(q.question_id), video=video.id, subset=subset, question=q.question, options=options,
                       answer=answer, task_type=slug(q.question_type[0]) if q.question_type else "unlabelled",
                       audio_type=audio, ccl=CclWindow(start_s=start, end_s=end),
                       release=ReleaseQuestionRef(question_id=q.question_id, question_type=q.question_type,
                                                  time_reference=q.time_reference, audio_type=q.audio_type))
    except ValidationError as exc:
        first = exc.errors()[0]
        raise UserError(f"{where}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None


def plan_import(annotation: Path, videos_dir: Path, subtitles_dir: Path | None,
                progress: Callable[[str], None] = lambda _: None) -> _Plan:
    """Read and check the release: every video present and as long as the annotation says, every question
    well formed; UserError (one line, naming the video or question) at the first fault."""
    subset = subset_of(annotation)
    try:
        raw = json.loads(annotation.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{annotation}: not readable as JSON ({str(exc).splitlines()[0]})") from None
    if not isinstance(raw, list) or not raw:
        raise UserError(f"{annotation}: the release annotation is a JSON list of videos; this file is not")
    videos: list[tuple[McqVideo, Path, Path | None]] = []
    tasks: list[McqTask] = []
    seen_videos: dict[str, str] = {}
    seen_tasks: dict[str, str] = {}
    for i, entry in enumerate(raw):
        vid = entry.get("video_id") if isinstance(entry, dict) else None
        at = f"{annotation.name}: video {vid or f'[{i}]'}"
        try:
            rv = ReleaseVideo.model_validate(entry)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise UserError(f"{at}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
        vid_slug = slug(rv.video_id)
        if vid_slug in seen_videos:
            raise UserError(f"{at}: its id reads as {vid_slug!r}, as video {seen_videos[vid_slug]} does")
        seen_videos[vid_slug] = rv.video_id
        source = videos_dir / rv.video_path
        if not source.is_file():
            raise UserError(f"{at}, question {rv.questions[0].question_id}: video file {source} is missing; pass "
                            "--videos the folder holding the release's videos")
        progress(f"checking video {rv.video_id} ({source.stat().st_size / 1e6:,.0f} MB)")
        seconds = _probe_seconds(source)
        stated = rv.duration_minutes * 60
        if abs(seconds - stated) > max(DURATION_TOLERANCE[0], DURATION_TOLERANCE[1] * stated):
            raise UserError(f"{at}: ffprobe reads {seconds / 60:.2f} min but the annotation says "
                            f"{rv.duration_minutes:g} min; check the file")
        srt = subtitles_dir / f"{Path(rv.video_path).stem}.srt" if subtitles_dir is not None else None
        srt = srt if srt is not None and srt.is_file() else None
        video = McqVideo(id=vid_slug, file=f"videos/{vid_slug}{source.suffix.lower() or '.mp4'}",
                         sha256=sha256_file(source), duration_s=round(seconds, 3),
                         domain=slug(rv.video_category) if rv.video_category.strip() else "unlabelled",
                         subtitles=McqSubtitles(file=f"videos/{vid_slug}.srt", sha256=sha256_file(srt),
                                                source="release") if srt else None,
                         release=ReleaseVideoRef(video_id=rv.video_id, video_category=rv.video_category,
                                                 duration_minutes=rv.duration_minutes))
        videos.append((video, source, srt))
        for q in rv.questions:
            task = _task(q, video, subset, f"{annotation.name}: question {q.question_id}")
            if task.id in seen_tasks:
                raise UserError(f"{annotation.name}: question {q.question_id}: its id reads as {task.id!r}, as "
                                f"question {seen_tasks[task.id]} does")
            seen_tasks[task.id] = q.question_id
            tasks.append(task)
    return _Plan(subset, videos, tasks)


def official_protocol(prompt_file: Path | None) -> McqProtocol:
    """The imported snapshot's protocol: the defaults, with the `official-*` prompt template of `prompt_file`."""
    if prompt_file is None:
        return McqProtocol()
    try:
        template = prompt_file.read_text("utf-8")
    except OSError as exc:
        raise UserError(f"{prompt_file}: cannot read the prompt template ({exc.strerror})") from None
    try:
        return McqProtocol(official_prompt=template)
    except ValidationError as exc:
        raise UserError(f"{prompt_file}: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None


def write_import(plan: _Plan, annotation: Path, out: Path, name: str, protocol: McqProtocol | None = None) -> list[str]:
    """Write the planned snapshot into `out` (new or empty); returns how each video got there."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"{out}: exists and is not an empty folder; pass a new folder for the snapshot")
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", name):
        raise UserError(f"snapshot name {name!r} is not a lowercase label (letters, digits, - and _); pass --name")
    placed = []
    for video, source, srt in plan.videos:
        placed.append(f"{video.id}: {_place(source, out / video.file)}")
        if srt is not None and video.subtitles is not None:
            _place(srt, out / video.subtitles.file)
    (out / RELEASE_DIR).mkdir(parents=True, exist_ok=True)
    shutil.copy2(annotation, out / RELEASE_DIR / annotation.name)
    for task in plan.tasks:
        write_atomic(out / "tasks" / task.id / "task.json", task.model_dump_json(indent=2, exclude_none=True) + "\n")
    videos = McqVideos(videos=[v for v, _, _ in plan.videos])
    write_atomic(out / "videos.json", videos.model_dump_json(indent=2, exclude_none=True) + "\n")
    write_atomic(out / "hyperparameters.json", (protocol or McqProtocol()).model_dump_json(indent=2, exclude_none=True)
                 + "\n")
    info = SnapshotInfo(name=name, version="release", task_kind=TaskFormat.mcq, tasks=[t.id for t in plan.tasks],
                        description=(f"VideoOdyssey-{plan.subset.value} from the authors' release annotation "
                                     f"{annotation.name}: {len(plan.videos)} video(s), {len(plan.tasks)} question(s); "
                                     "imported with `omnidr snapshot import-videoodyssey`."))
    write_atomic(out / "snapshot.json", info.model_dump_json(indent=2, exclude_none=True) + "\n")
    return placed


def release_file(root: Path) -> Path:
    """The release annotation kept in an imported snapshot (`release/<name>.json`)."""
    found = sorted((root / RELEASE_DIR).glob("*.json")) if (root / RELEASE_DIR).is_dir() else []
    if len(found) != 1:
        raise UserError(f"{root}: not a snapshot imported from the VideoOdyssey release (no single "
                        f"{RELEASE_DIR}/*.json); import it with `omnidr snapshot import-videoodyssey`")
    return found[0]
