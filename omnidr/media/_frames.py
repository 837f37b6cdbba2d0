"""The prepared inputs of a multiple-choice question (task kind `mcq`, VideoOdyssey, paper 004): N frames sampled
deterministically from the video or from the question's certificate window, and, when the input setting asks for
them, the subtitles and the audio of the same stretch.

Frames are sampled by index (App. D.5) and each is read by its own seek (`ffmpeg -ss T -i video -frames:v 1`), so
preparing 256 frames of a two-hour video decodes a few GOPs per frame, never the whole file. Everything is cached
by content under a cache root:

    <cache_root>/frames/<key>/    video.json (the probe and the plan), 0000.jpg ...: one per (video, budget,
                                  window, mode, format, size), shared by every modality setting
    <cache_root>/<key>/           inputs.json (MediaInputs), frames/ (hard links to the shared frames),
                                  subtitles.txt, audio.wav: what the runner gets mounted as /input/media

Both kinds of entry are built in a temporary sibling folder and renamed into place, so preparers racing for the
same key are safe and a crash leaves no half entry.
"""

import hashlib
import json
import logging
import math
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path

from omnidr.benchmark import OFFICIAL_FRAMES, CclWindow, InputSetting, McqProtocol, sha256_file
from omnidr.errors import UserError
from sandbox.direct_agent import clock
from sandbox.models import MEDIA_MANIFEST, MediaInputs, SampledFrame, WindowMode
from sandbox.skills import MediaError, caption_cues, parse_srt

logger = logging.getLogger(__name__)

SAMPLING_VERSION = 1
"""Part of every cache key: raise it when the sampling rule or the extraction flags change what a frame holds."""

JPEG_QUALITY = 2
"""ffmpeg's `-q:v` for jpeg frames (2 to 31, lower is better): a fixed quality, so the same frame gives the same
bytes."""

FRAME_EXT = {"png": "png", "jpeg": "jpg"}
SUBTITLES_FILE = "subtitles.txt"
AUDIO_FILE = "audio.wav"
OFFICIAL_AUDIO_FILE = "audio.mp3"
FRAMES_DIR = "frames"
_PLAN_FILE = "video.json"


@dataclass(frozen=True)
class VideoFrames:
    """What the sampling needs to know of a video: its frame count F, frame rate and duration."""

    frame_count: int
    fps: float
    duration_s: float
    has_audio: bool = False


def _ffprobe(video: Path, args: list[str]) -> dict:
    try:
        done = subprocess.run(["ffprobe", "-v", "error", *args, "-of", "json", str(video)],
                              capture_output=True, timeout=600)
    except FileNotFoundError:
        raise UserError("ffprobe is not installed; run `make setup` (installs Debian's ffmpeg)") from None
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise UserError(f"{video}: ffprobe cannot read it as a video ({tail[0].strip()}); check the file or fetch "
                        "it again")
    return json.loads(done.stdout or b"{}")


def _rate(text: str | None) -> float:
    try:
        return float(Fraction(text or "0/1"))
    except (ValueError, ZeroDivisionError):
        return 0.0


def probe_frames(video: Path) -> VideoFrames:
    """The frame count, frame rate and duration of `video`'s first video stream. The count is the stream's
    `nb_frames` where the container records it (mp4, mov), else the number of its packets (`-count_packets`, which
    demuxes the file but decodes nothing). UserError (one line) when ffprobe cannot read the file."""
    info = _ffprobe(video, ["-show_entries", "stream=codec_type,nb_frames,avg_frame_rate,r_frame_rate,duration:"
                            "format=duration"])
    streams = info.get("streams", [])
    stream = next((s for s in streams if s.get("codec_type") == "video"), None)
    if stream is None:
        raise UserError(f"{video}: the file has no video stream; check the file or fetch it again")
    fps = _rate(stream.get("avg_frame_rate")) or _rate(stream.get("r_frame_rate"))
    count = int(stream["nb_frames"]) if str(stream.get("nb_frames", "")).isdigit() else 0
    if count <= 0:
        packets = _ffprobe(video, ["-select_streams", "v:0", "-count_packets", "-show_entries",
                                   "stream=nb_read_packets"])
        count = int((packets.get("streams") or [{}])[0].get("nb_read_packets") or 0)
    duration = float(stream.get("duration") or info.get("format", {}).get("duration") or 0.0)
    if count <= 0 or fps <= 0:
        raise UserError(f"{video}: ffprobe finds no frames or no frame rate in its video stream; check the file")
    return VideoFrames(frame_count=count, fps=fps, duration_s=duration or count / fps,
                       has_audio=any(s.get("codec_type") == "audio" for s in streams))


def uniform_indices(first: int, count: int, n: int) -> list[int]:
    """`n` frame indices spread uniformly over the `count` frames from `first` (paper 004, App. D.5: "for F video
    frames and budget N, we sample N frames at a fixed interval of F/N"). The paper does not say where in each
    interval the frame is taken; we take the midpoint, first + floor((i + 0.5) * count / n) for i = 0..n-1 (our
    choice). When n >= count every frame is taken once."""
    if n < 1 or count < 1:
        raise ValueError(f"cannot sample {n} frame(s) out of {count}")
    if n >= count:
        return list(range(first, first + count))
    return [first + (2 * i + 1) * count // (2 * n) for i in range(n)]


def window_frames(meta: VideoFrames, window: CclWindow) -> tuple[int, int]:
    """(first, count): the frames whose time index / fps lies in [start_s, end_s) of `window`."""
    first = max(0, math.ceil(round(window.start_s * meta.fps, 6)))
    end = min(meta.frame_count, math.ceil(round(window.end_s * meta.fps, 6)))
    if end <= first:
        raise ValueError(f"window {window.start_s:g}-{window.end_s:g} s holds no frame of the video "
                         f"({meta.frame_count} frames, {meta.duration_s:g} s)")
    return first, end - first


def sample_plan(meta: VideoFrames, frames: int, window_mode: WindowMode,
                window: CclWindow | None) -> list[tuple[int, float]]:
    """(frame index, timestamp in seconds = index / fps) of the frames to give the model.

    - `full`: `frames` over all F frames (App. D.5);
    - `cw-frames`: `frames` over the Fw frames inside the certificate window (matched-frame, Sec. 4.3);
    - `cw-rate`: the whole video's sampling rate kept, max(1, round(frames * Fw / F)) frames over the window
      (matched-rate, App. F.1).
    """
    if window_mode == "full":
        indices = uniform_indices(0, meta.frame_count, frames)
    else:
        if window is None:
            raise ValueError(f"window mode {window_mode} needs the question's certificate window")
        first, count = window_frames(meta, window)
        n = frames if window_mode == "cw-frames" else max(1, round(frames * count / meta.frame_count))
        indices = uniform_indices(first, count, n)
    return [(i, i / meta.fps) for i in indices]


def _run_ffmpeg(args: list[str], what: str) -> None:
    try:
        done = subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", *args], capture_output=True, timeout=600)
    except FileNotFoundError:
        raise UserError("ffmpeg is not installed; run `make setup` (installs Debian's ffmpeg)") from None
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise UserError(f"ffmpeg could not {what} ({tail[0].strip()}); check the video file")


def _scale(max_side: int) -> str:
    """Fit the frame in a max_side square box keeping its aspect ratio; never enlarge it."""
    return (f"scale=w='min(iw,{max_side})':h='min(ih,{max_side})':force_original_aspect_ratio=decrease,"
            "setsar=1")


FRAMES_PER_PROCESS = 8
"""Frames one ffmpeg process reads (one seeking input each). Measured on a 2-hour 640x360 video with a GOP of 250,
128 frames on 2 cores: one process per frame 21.8 s, 8 per process 15.0 s (peak 200 MB), 16 per process 14-16 s
(350 MB), 32 per process 15-16 s (800 MB): 8 saves most of the start-up cost without the memory of many open
decoders."""


def extract_frames(video: Path, jobs: list[tuple[int, Path]], fps: float, max_side: int) -> None:
    """Write each frame index of `jobs` to its path (png or jpg by the suffix), seeking to it rather than
    decoding the video up to it, in one ffmpeg process with one input per frame. ffmpeg's input seek (`-ss`
    before `-i`) jumps to the keyframe before the time and drops the decoded frames earlier than it; the time
    asked for is half a frame before the frame's own, so float rounding can never make it skip to the next
    frame."""
    inputs: list[str] = []
    outputs: list[str] = []
    for n, (index, dest) in enumerate(jobs):
        inputs += ["-threads", "1", "-ss", f"{max(0.0, (index - 0.5) / fps):.6f}", "-i", str(video)]
        quality = ["-q:v", str(JPEG_QUALITY)] if dest.suffix == ".jpg" else []
        outputs += ["-map", f"{n}:v:0", "-frames:v", "1", "-vf", _scale(max_side), *quality, "-map_metadata", "-1",
                    "-fflags", "+bitexact", "-flags:v", "+bitexact", str(dest)]
    what = f"read frames {jobs[0][0]}-{jobs[-1][0]} of {video.name}"
    _run_ffmpeg([*inputs, *outputs], what)
    missing = [index for index, dest in jobs if not dest.is_file() or dest.stat().st_size == 0]
    if missing:
        raise UserError(f"ffmpeg found no frame {missing[0]} in {video.name} (past its end?); check the video file")


def _key(fields: dict) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:32]


_BUILDING: dict[Path, threading.Lock] = {}
_BUILDING_LOCK = threading.Lock()


def _build(final: Path, make: Callable[[Path], None]) -> Path:
    """Run `make` on a fresh temporary sibling of `final`, then rename it to `final`. The threads of this process
    that want the same entry at once (a run's parallel attempts asking of one video) wait for the first, which
    makes it for all; if another process got there first, its folder is kept and ours dropped; on any error nothing
    is left behind."""
    with _BUILDING_LOCK:
        lock = _BUILDING.setdefault(final, threading.Lock())
    with lock:
        return final if final.is_dir() else _build_once(final, make)


def _build_once(final: Path, make: Callable[[Path], None]) -> Path:
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
    try:
        make(tmp)
        # readable by the runner's unprivileged user in its container, where the entry is mounted read-only
        for path in (tmp, *tmp.rglob("*")):
            path.chmod(0o755 if path.is_dir() else 0o644)
        try:
            os.rename(tmp, final)
        except OSError:
            if not final.is_dir():
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def _frames_entry(video: Path, key_fields: dict, frames: int, window_mode: WindowMode, window: CclWindow | None,
                  frame_format: str, max_side: int, cache_root: Path) -> Path:
    """The shared frames of one (video, budget, window, mode, format, size): made once, by seeking."""
    final = cache_root / FRAMES_DIR / _key(key_fields)
    if final.is_dir():
        return final

    def make(tmp: Path) -> None:
        meta = probe_frames(video)
        try:
            plan = sample_plan(meta, frames, window_mode, window)
        except ValueError as exc:  # a certificate window past the video's end
            raise UserError(f"{video.name}: {exc}; check the question's ccl window") from None
        ext = FRAME_EXT[frame_format]
        logger.info("extracting %d frames of %s (%s)", len(plan), video.name, window_mode)
        jobs = [(index, tmp / f"{i:04d}.{ext}") for i, (index, _) in enumerate(plan)]
        chunks = [jobs[i:i + FRAMES_PER_PROCESS] for i in range(0, len(jobs), FRAMES_PER_PROCESS)]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            list(pool.map(lambda chunk: extract_frames(video, chunk, meta.fps, max_side), chunks))
        (tmp / _PLAN_FILE).write_text(json.dumps({"video": asdict(meta), "plan": plan}), "utf-8")

    return _build(final, make)


def _subtitle_lines(subtitles: Path, window: tuple[float, float] | None) -> str:
    """The cues overlapping `window` (all when None), one per line as `[mm:ss.s] text`, times in the video."""
    if subtitles.suffix.lower() == ".srt":
        cues = parse_srt(subtitles.read_text("utf-8", "replace"))
    else:
        try:
            cues = caption_cues(str(subtitles))  # WebVTT and the rest: ffmpeg converts them to SRT first
        except MediaError as exc:
            raise UserError(f"{subtitles}: cannot read the subtitles ({exc}); check the file") from None
    if window is not None:
        cues = [c for c in cues if c["end_s"] > window[0] and c["start_s"] < window[1]]
    return "".join(f"[{clock(c['start_s'])}] {c['text']}\n" for c in cues)


def _link(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def prepare_inputs(video: Path, video_sha256: str, subtitles: Path | None, setting: InputSetting,
                   window: CclWindow | None, protocol: McqProtocol, cache_root: Path) -> Path:
    """The folder of inputs for one question under one input setting (App. D.2, D.5, F.1): `inputs.json` (a
    `MediaInputs`), `frames/NNNN.png|jpg`, and when the setting asks for them `subtitles.txt` (the cues inside
    the window, `[mm:ss.s] text` per line) and `audio.wav` (the window's audio, mono 16-bit PCM at the protocol's
    sample rate). A video without subtitles (or without an audio stream) gets none even when they are asked for.

    In `full` mode the window is ignored: frames, subtitles and audio cover the whole video. The folder is cached
    under `cache_root` by everything that changes its content; an existing entry is returned without running
    ffmpeg or ffprobe."""
    cut = window if setting.window != "full" else None
    if setting.window != "full" and window is None:
        raise ValueError(f"window mode {setting.window} needs the question's certificate window")
    span = [cut.start_s, cut.end_s] if cut is not None else None
    frame_fields = {"version": SAMPLING_VERSION, "video": video_sha256, "frames": setting.frames,
                    "mode": setting.window, "window": span, "format": protocol.frame_format,
                    "max_side": protocol.frame_max_side}
    subs_sha = sha256_file(subtitles) if setting.subtitles and subtitles is not None else None
    fields = {**frame_fields, "subtitles": subs_sha, "audio": setting.audio,
              "audio_sample_rate": protocol.audio_sample_rate if setting.audio else None}
    final = cache_root / _key(fields)
    if final.is_dir():
        return final
    shared = _frames_entry(video, frame_fields, setting.frames, setting.window, cut, protocol.frame_format,
                           protocol.frame_max_side, cache_root)

    def make(tmp: Path) -> None:
        saved = json.loads((shared / _PLAN_FILE).read_text("utf-8"))
        meta = VideoFrames(**saved["video"])
        ext = FRAME_EXT[protocol.frame_format]
        (tmp / FRAMES_DIR).mkdir()
        frames = []
        for i, (index, timestamp) in enumerate(saved["plan"]):
            name = f"{FRAMES_DIR}/{i:04d}.{ext}"
            _link(shared / f"{i:04d}.{ext}", tmp / name)
            frames.append(SampledFrame(file=name, index=index, timestamp_s=timestamp))
        bounds = (cut.start_s, min(cut.end_s, meta.duration_s)) if cut is not None else None
        subs_file = None
        if subs_sha is not None and subtitles is not None:
            (tmp / SUBTITLES_FILE).write_text(_subtitle_lines(subtitles, bounds), "utf-8")
            subs_file = SUBTITLES_FILE
        audio_file = None
        if setting.audio and meta.has_audio:
            seek = ["-ss", f"{bounds[0]:.6f}", "-t", f"{bounds[1] - bounds[0]:.6f}"] if bounds else []
            _run_ffmpeg([*seek, "-i", str(video), "-map", "0:a:0", "-ac", "1", "-ar", str(protocol.audio_sample_rate),
                         "-c:a", "pcm_s16le", "-map_metadata", "-1", "-fflags", "+bitexact", "-flags:a", "+bitexact",
                         str(tmp / AUDIO_FILE)], f"cut the audio of {video.name}")
            audio_file = AUDIO_FILE
        elif setting.audio:
            logger.warning("%s has no audio stream; the model gets no audio", video.name)
        inputs = MediaInputs(video_sha256=video_sha256, frame_count=meta.frame_count, fps=meta.fps,
                             duration_s=meta.duration_s, window_mode=setting.window, window=bounds, frames=frames,
                             frame_format=protocol.frame_format, subtitles=subs_file, audio=audio_file)
        (tmp / MEDIA_MANIFEST).write_text(inputs.model_dump_json(indent=2) + "\n", "utf-8")

    return _build(final, make)


# --------------------------------------------------------------------------- the authors' runner's inputs

OFFICIAL_MAX_SIDE = 512
"""The authors' runner's `--jpeg_max_side`: a frame larger than this on its longer side is scaled down to it."""
OFFICIAL_JPEG_QUALITY = 70
"""The authors' runner's `--jpeg_quality` (libjpeg's 1-100 scale, as OpenCV and Pillow both use it)."""
OFFICIAL_AUDIO_CLIPS = 64
"""The authors' runner's `--num_audio_samples`: clips in the audio montage."""
OFFICIAL_CLIP_S = 10.0
"""The authors' runner's `--audio_sample_len`, seconds."""
OFFICIAL_AUDIO = ["-ac", "1", "-ar", "16000", "-c:a", "libmp3lame", "-b:a", "16k"]
"""Mono, 16 kHz, 16 kbit/s MP3 (the runner's `-ac 1 -ar 16000 -ab 16k`)."""
OFFICIAL_VERSION = 1
"""Part of the official entries' cache keys: raise it when the official rules here change."""


def official_plan(meta: VideoFrames, window: CclWindow | None) -> list[tuple[int, float]]:
    """(frame index, time) of the frames the authors' runner reads. The whole video: 64 frames at indices 0, k, 2k,
    ... with k = max(1, floor(F / 64)), the first frame of each interval (not its midpoint, as ours), at time
    index / fps. A certificate window of d seconds from s: one frame a second at s, s + 1, ... when d < 64, else
    64 frames at s + i * d / 64; each time kept below the window's end (by 1 ms) and read at index round(t * fps)."""
    if window is None:
        k = max(1, meta.frame_count // OFFICIAL_FRAMES)
        return [(i * k, i * k / meta.fps) for i in range(OFFICIAL_FRAMES) if i * k < meta.frame_count]
    start, end = window.start_s, min(window.end_s, meta.duration_s)
    span = end - start
    if span <= 0:
        times = [start]
    elif span < OFFICIAL_FRAMES:
        times = [start + i for i in range(math.ceil(span))]
    else:
        times = [start + i * span / OFFICIAL_FRAMES for i in range(OFFICIAL_FRAMES)]
    plan: list[tuple[int, float]] = []
    for t in (max(start, min(t, end - 1e-3)) for t in times):
        index = min(meta.frame_count - 1, max(0, round(t * meta.fps)))
        if not plan or index > plan[-1][0]:  # a frame read twice is given once
            plan.append((index, t))
    return plan


def official_clips(duration_s: float, window: tuple[float, float] | None) -> list[tuple[float, float]]:
    """(start, length) of the audio montage's clips, in seconds. The whole video: 64 clips of 10 s starting at
    i * duration / 64 (cut at the end). A window of d seconds: one clip of it all when d <= 64 x 10 s (a zero-length
    window: the second around its start), else 64 clips at s + i * d / 64, each up to 10 s and within the window."""
    if window is None:
        step = duration_s / OFFICIAL_AUDIO_CLIPS
        starts = [i * step for i in range(OFFICIAL_AUDIO_CLIPS)]
        return [(s, min(OFFICIAL_CLIP_S, duration_s - s)) for s in starts if duration_s - s > 0]
    start, end = window
    span = end - start
    if span <= 0:
        return [(max(0.0, start - 0.5), 1.0)]
    if span <= OFFICIAL_AUDIO_CLIPS * OFFICIAL_CLIP_S:
        return [(start, span)]
    starts = [start + i * span / OFFICIAL_AUDIO_CLIPS for i in range(OFFICIAL_AUDIO_CLIPS)]
    return [(s, min(OFFICIAL_CLIP_S, end - s)) for s in starts]


def official_subtitle_lines(subtitles: Path, times: list[float]) -> str:
    """One line per frame, as the authors' runner aligns them: the first cue holding the frame's time (start <= t
    <= end), JSON-quoted, or `""` where none does."""
    cues = parse_srt(subtitles.read_text("utf-8", "replace")) if subtitles.suffix.lower() == ".srt" \
        else caption_cues(str(subtitles))
    lines = []
    for t in times:
        text = next((c["text"] for c in cues if c["start_s"] <= t <= c["end_s"]), "")
        lines.append(json.dumps(text, ensure_ascii=False))
    return "\n".join(lines)


def _official_jpeg(png: Path, dest: Path) -> None:
    """The runner's frame encoding: scaled by 512 / longer side (sizes truncated) when larger, bilinear (OpenCV's
    default), then JPEG at quality 70."""
    from PIL import Image

    with Image.open(png) as image:
        rgb = image.convert("RGB")
        longer = max(rgb.size)
        if longer > OFFICIAL_MAX_SIDE:
            scale = OFFICIAL_MAX_SIDE / longer
            rgb = rgb.resize((int(rgb.width * scale), int(rgb.height * scale)), Image.Resampling.BILINEAR)
        rgb.save(dest, "JPEG", quality=OFFICIAL_JPEG_QUALITY)


def _official_montage(video: Path, clips: list[tuple[float, float]], dest: Path) -> None:
    """The clips cut from `video` and joined into one MP3, in one ffmpeg process."""
    inputs: list[str] = []
    for start, length in clips:
        inputs += ["-ss", f"{start:.6f}", "-t", f"{length:.6f}", "-i", str(video)]
    joined = "".join(f"[{i}:a:0]" for i in range(len(clips))) + f"concat=n={len(clips)}:v=0:a=1[a]"
    _run_ffmpeg([*inputs, "-filter_complex", joined, "-map", "[a]", *OFFICIAL_AUDIO, "-map_metadata", "-1",
                 "-fflags", "+bitexact", "-flags:a", "+bitexact", str(dest)], f"make the audio montage of {video.name}")


def prepare_official_inputs(video: Path, video_sha256: str, subtitles: Path | None, setting: InputSetting,
                            window: CclWindow | None, cache_root: Path) -> Path:
    """The inputs of one question as the VideoOdyssey authors' runner makes them (`official_plan`, `_official_jpeg`,
    `official_subtitle_lines`, `official_clips`): `inputs.json` (protocol `official`), `frames/NNNN.jpg`, and as the
    mode asks `subtitles.txt` (one quoted line per frame) and `audio.mp3` (the montage). Cached like ours."""
    cut = window if setting.window != "full" else None
    subs_sha = sha256_file(subtitles) if setting.subtitles and subtitles is not None else None
    fields = {"official": OFFICIAL_VERSION, "video": video_sha256, "window": [cut.start_s, cut.end_s] if cut else None,
              "subtitles": subs_sha, "audio": setting.audio}
    final = cache_root / _key(fields)
    if final.is_dir():
        return final

    def make(tmp: Path) -> None:
        meta = probe_frames(video)
        plan = official_plan(meta, cut)
        raw = tmp / "raw"
        raw.mkdir()
        jobs = [(index, raw / f"{i:04d}.png") for i, (index, _) in enumerate(plan)]
        chunks = [jobs[i:i + FRAMES_PER_PROCESS] for i in range(0, len(jobs), FRAMES_PER_PROCESS)]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            list(pool.map(lambda chunk: extract_frames(video, chunk, meta.fps, 1 << 16), chunks))
        (tmp / FRAMES_DIR).mkdir()
        frames = []
        for i, (index, t) in enumerate(plan):
            name = f"{FRAMES_DIR}/{i:04d}.jpg"
            _official_jpeg(raw / f"{i:04d}.png", tmp / name)
            frames.append(SampledFrame(file=name, index=index, timestamp_s=t))
        shutil.rmtree(raw)
        bounds = (cut.start_s, min(cut.end_s, meta.duration_s)) if cut is not None else None
        subs_file = None
        if subs_sha is not None and subtitles is not None:
            (tmp / SUBTITLES_FILE).write_text(official_subtitle_lines(subtitles, [t for _, t in plan]), "utf-8")
            subs_file = SUBTITLES_FILE
        audio_file, clips = None, []
        if setting.audio and meta.has_audio:
            clips = official_clips(meta.duration_s, bounds)
            _official_montage(video, clips, tmp / OFFICIAL_AUDIO_FILE)
            audio_file = OFFICIAL_AUDIO_FILE
        elif setting.audio:
            logger.warning("%s has no audio stream; the model gets no audio", video.name)
        inputs = MediaInputs(video_sha256=video_sha256, frame_count=meta.frame_count, fps=meta.fps,
                             duration_s=meta.duration_s, window_mode=setting.window, window=bounds, frames=frames,
                             frame_format="jpeg", subtitles=subs_file, audio=audio_file, protocol="official",
                             audio_format="mp3", audio_clips=[(round(s, 6), round(n, 6)) for s, n in clips])
        (tmp / MEDIA_MANIFEST).write_text(inputs.model_dump_json(indent=2) + "\n", "utf-8")

    return _build(final, make)
