"""Probing a video file with ffprobe (through ffmpeg-python)."""

from fractions import Fraction
from pathlib import Path

import ffmpeg
from pydantic import BaseModel, ConfigDict, Field


class VideoProbe(BaseModel):
    """What ffprobe reports about a media file."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    duration_s: float = Field(description="Container duration, seconds.")
    width: int = Field(description="Width of the first video stream, pixels.")
    height: int = Field(description="Height of the first video stream, pixels.")
    fps: float = Field(description="Average frame rate of the first video stream, frames per second.")
    video_codec: str = Field(description="Codec name of the first video stream.")
    has_audio: bool = Field(description="Whether the file has an audio stream.")
    audio_codec: str | None = Field(None, description="Codec of the first audio stream, if any.")
    subtitle_streams: int = Field(0, description="Number of subtitle streams.")


class ProbeError(Exception):
    """ffprobe could not read the file as a video."""


def probe_video(path: Path | str) -> VideoProbe:
    path = Path(path)
    try:
        info = ffmpeg.probe(str(path))
    except ffmpeg.Error as exc:
        lines = (exc.stderr or b"").decode("utf-8", "replace").strip().splitlines()
        raise ProbeError(f"{path}: ffprobe failed: {lines[-1] if lines else 'unknown error'}") from None
    except FileNotFoundError:
        raise ProbeError("ffprobe is not installed; run `make setup` (installs Debian's ffmpeg)") from None
    streams = info.get("streams", [])
    video = next((s for s in streams if s.get("codec_type") == "video"), None)
    if video is None:
        raise ProbeError(f"{path}: no video stream")
    audio = next((s for s in streams if s.get("codec_type") == "audio"), None)
    rate = video.get("avg_frame_rate") or video.get("r_frame_rate") or "0/1"
    fps = float(Fraction(rate)) if rate != "0/0" else 0.0
    duration = float(info.get("format", {}).get("duration") or video.get("duration") or 0.0)
    return VideoProbe(
        duration_s=round(duration, 3),
        width=int(video.get("width", 0)),
        height=int(video.get("height", 0)),
        fps=round(fps, 3),
        video_codec=video.get("codec_name", "unknown"),
        has_audio=audio is not None,
        audio_codec=audio.get("codec_name") if audio else None,
        subtitle_streams=sum(1 for s in streams if s.get("codec_type") == "subtitle"),
    )
