"""Video skills: probe, windows, deterministic frames, transcript (ffmpeg/ffprobe)."""

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

WINDOW_S = 300.0  # T_win of the paper (App. A.1): the timeline is read in windows of this length
SAMPLE_FRAMES = 10  # OpenDS-World's video reader: 10 frames by default (paper 002, App. C.1.2) ...
SAMPLE_FRAMES_MAX = 100  # ... and 1 to 100 frames a call


class MediaError(RuntimeError):
    """ffmpeg or ffprobe failed; the message holds the tool's last words."""


def _run(cmd: list[str], timeout_s: float = 300.0) -> bytes:
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MediaError(f"{cmd[0]} failed: {exc}") from None
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise MediaError(f"{cmd[0]} exited {done.returncode}: {tail[0]}")
    return done.stdout


def probe_video(video: str) -> dict:
    """Duration (s), frame rate, resolution, audio and subtitle streams of a video file."""
    raw = _run(["ffprobe", "-v", "error", "-show_entries",
                "format=duration:stream=index,codec_type,codec_name,width,height,r_frame_rate:stream_tags=language",
                "-of", "json", video])
    info = json.loads(raw or b"{}")
    streams = info.get("streams", [])
    video_streams = [s for s in streams if s.get("codec_type") == "video"]
    fps = None
    if video_streams and "/" in str(video_streams[0].get("r_frame_rate", "")):
        num, den = video_streams[0]["r_frame_rate"].split("/")
        fps = round(int(num) / int(den), 3) if int(den) else None
    duration = float(info.get("format", {}).get("duration") or 0.0)
    return {
        "duration_s": round(duration, 3),
        "fps": fps,
        "width": video_streams[0].get("width") if video_streams else None,
        "height": video_streams[0].get("height") if video_streams else None,
        "video_codec": video_streams[0].get("codec_name") if video_streams else None,
        "audio": [{"index": s["index"], "codec": s.get("codec_name")} for s in streams if s.get("codec_type") == "audio"],
        "subtitles": [{"index": s["index"], "codec": s.get("codec_name"), "language": s.get("tags", {}).get("language")}
                      for s in streams if s.get("codec_type") == "subtitle"],
    }


@dataclass(frozen=True)
class Window:
    index: int
    start_s: float
    end_s: float


def windows(duration_s: float, window_s: float = WINDOW_S) -> list[Window]:
    """Consecutive windows of `window_s` seconds covering [0, duration_s]; the last one is shorter."""
    if duration_s <= 0:
        return []
    out, start, i = [], 0.0, 0
    while start < duration_s - 1e-6:
        end = min(start + window_s, duration_s)
        out.append(Window(i, round(start, 3), round(end, 3)))
        start, i = end, i + 1
    return out


def sample_times(start_s: float, end_s: float, frames: int) -> list[float]:
    """Uniform sampling: the centres of `frames` equal slices of [start_s, end_s), in milliseconds precision."""
    if frames <= 0 or end_s <= start_s:
        return []
    step = (end_s - start_s) / frames
    return [round(start_s + (i + 0.5) * step, 3) for i in range(frames)]


def extract_frame(video: str, time_s: float, dest: Path, width: int = 640) -> Path:
    """One JPEG frame at `time_s` (accurate seek), scaled to at most `width` pixels wide. Deterministic:
    the same ffmpeg build and video give the same bytes (bit-exact flags, no metadata)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    # -ss before -i: fast input seeking, still frame-accurate when decoding (ffmpeg's default accurate_seek)
    _run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-ss", f"{time_s:.3f}", "-i", video, "-frames:v", "1",
          "-vf", f"scale='min({width},iw)':-2", "-q:v", "3", "-map_metadata", "-1",
          "-fflags", "+bitexact", "-flags:v", "+bitexact", str(dest)])
    if not dest.is_file() or dest.stat().st_size == 0:
        raise MediaError(f"ffmpeg wrote no frame at {time_s:.3f} s")
    return dest


def clock(seconds: float) -> str:
    """12.5 -> "00:00:12.500"."""
    ms = round(seconds * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}"


def sample_frames(video: str, start_s: float, end_s: float, count: int, frames_dir: Path, prefix: str = "video") -> list[dict]:
    """OpenDS-World's video reader (paper 002, App. C.1.2): `count` frames at the midpoints of `count` equal
    intervals of [start_s, end_s], each read by its own ffmpeg call that seeks to the computed time (no decoding
    of the whole file). Written as frames_dir/{prefix}-t{milliseconds}.jpg; returns [{time_s, timestamp, path}]."""
    out = []
    for t in sample_times(start_s, end_s, count):
        path = extract_frame(video, t, frames_dir / f"{prefix}-t{round(t * 1000):09d}ms.jpg")
        out.append({"time_s": t, "timestamp": clock(t), "path": str(path)})
    return out


def probe_media(path: str) -> dict:
    """What ffprobe knows of an audio, video or image file: container, duration, size, streams (a cover picture
    of an audio file is not a video stream) and the file's tags (title, artist, ...)."""
    raw = _run(["ffprobe", "-v", "error", "-show_entries",
                "format=format_name,duration,bit_rate:format_tags:stream=index,codec_type,codec_name,width,height,"
                "r_frame_rate,sample_rate,channels:stream_disposition=attached_pic:stream_tags=language",
                "-of", "json", path])
    info = json.loads(raw or b"{}")
    fmt = info.get("format", {})
    streams = []
    for st in info.get("streams", []):
        kind = st.get("codec_type")
        if kind == "video" and (st.get("disposition") or {}).get("attached_pic"):
            kind = "cover"
        entry = {"index": st.get("index"), "type": kind, "codec": st.get("codec_name")}
        if kind in ("video", "cover"):
            entry.update(width=st.get("width"), height=st.get("height"))
            if kind == "video" and "/" in str(st.get("r_frame_rate", "")):
                num, den = st["r_frame_rate"].split("/")
                entry["fps"] = round(int(num) / int(den), 3) if int(den) else None
        elif kind == "audio":
            entry.update(sample_rate=int(st["sample_rate"]) if st.get("sample_rate") else None,
                         channels=st.get("channels"))
        if (st.get("tags") or {}).get("language"):
            entry["language"] = st["tags"]["language"]
        streams.append(entry)
    duration = fmt.get("duration")
    return {"container": fmt.get("format_name"), "duration_s": round(float(duration), 3) if duration else None,
            "bit_rate": int(fmt["bit_rate"]) if str(fmt.get("bit_rate", "")).isdigit() else None,
            "streams": streams, "tags": {k.lower(): v for k, v in (fmt.get("tags") or {}).items()}}


def image_view(path: str, dest: Path, width: int = 1024) -> Path:
    """A JPEG rendering of an image file (any format ffmpeg reads), at most `width` pixels wide: what a model
    that reads JPEG or PNG is shown of a GIF, WebP, BMP or TIFF as well."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    _run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-i", path, "-frames:v", "1",
          "-vf", f"scale='min({width},iw)':-2", "-q:v", "3", "-map_metadata", "-1", str(dest)])
    if not dest.is_file() or dest.stat().st_size == 0:
        raise MediaError("ffmpeg wrote no image")
    return dest


_SRT_TIME = re.compile(r"(\d+):(\d\d):(\d\d)[,.](\d{1,3})")


def _seconds(stamp: str) -> float:
    m = _SRT_TIME.match(stamp.strip())
    if not m:
        raise ValueError(stamp)
    h, mi, s, ms = m.groups()
    return int(h) * 3600 + int(mi) * 60 + int(s) + int(ms.ljust(3, "0")) / 1000


def parse_srt(text: str) -> list[dict]:
    """SRT cues as [{start_s, end_s, text}], in file order."""
    cues = []
    for block in re.split(r"\r?\n\s*\r?\n", text.strip()):
        lines = [ln for ln in block.splitlines() if ln.strip()]
        arrow = next((i for i, ln in enumerate(lines) if "-->" in ln), None)
        if arrow is None:
            continue
        left, right = lines[arrow].split("-->", 1)
        try:
            start, end = _seconds(left), _seconds(right.split()[0])
        except (ValueError, IndexError):
            continue
        body = " ".join(re.sub(r"<[^>]+>", "", ln).strip() for ln in lines[arrow + 1:]).strip()
        if body:
            cues.append({"start_s": round(start, 3), "end_s": round(end, 3), "text": body})
    return cues


def transcript(video: str, subtitle_streams: list[dict]) -> tuple[str, list[dict]]:
    """(source, cues): the first subtitle track as cues, or ("none", []) when the video has none.
    There is no speech recognition in this image; audio-only speech stays unread."""
    if not subtitle_streams:
        return "none", []
    raw = _run(["ffmpeg", "-v", "error", "-nostdin", "-i", video, "-map", "0:s:0", "-f", "srt", "-"])
    return "subtitle_track", parse_srt(raw.decode("utf-8", "replace"))


def caption_cues(path: str) -> list[dict]:
    """The cues of a caption file (WebVTT or SRT, as yt-dlp fetches them), read by ffmpeg. Automatic captions
    repeat each line as the next one rolls in: a cue whose text is the previous one's is merged into it."""
    raw = _run(["ffmpeg", "-v", "error", "-nostdin", "-i", path, "-f", "srt", "-"])
    cues: list[dict] = []
    for cue in parse_srt(raw.decode("utf-8", "replace")):
        if cues and cue["text"] == cues[-1]["text"]:
            cues[-1]["end_s"] = max(cues[-1]["end_s"], cue["end_s"])
        else:
            cues.append(cue)
    return cues


def window_frames(video: str, probe: dict, index: int, frames_dir: Path, frames: int = 6,
                  window_s: float = WINDOW_S, rel_to: Path | None = None) -> dict:
    """Frames of window `index`, sampled uniformly, as frames_dir/w{index:03d}_{k:02d}.jpg; their `src` is
    relative to `rel_to` (the report folder) when given."""
    wins = windows(probe["duration_s"], window_s)
    if not 0 <= index < len(wins):
        raise MediaError(f"window {index} does not exist; the video has {len(wins)} window(s) of {window_s:g} s")
    w = wins[index]
    shots = []
    for k, t in enumerate(sample_times(w.start_s, w.end_s, frames)):
        path = extract_frame(video, t, frames_dir / f"w{index:03d}_{k:02d}.jpg")
        src = path.relative_to(rel_to).as_posix() if rel_to else str(path)
        shots.append({"time_s": t, "src": src, "bytes": path.stat().st_size})
    return {"window": index, "windows": len(wins), "start_s": w.start_s, "end_s": w.end_s, "frames": shots}
