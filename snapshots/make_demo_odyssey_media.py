#!/usr/bin/env python3
"""Regenerate the media of the bundled VideoOdyssey demo snapshot (snapshots/demo-odyssey/, paper 004).

Two synthetic long videos, small in bytes (192x108, 4 fps, mono AAC at 16 kbps), whose content a program reads
back exactly from the prepared inputs (the scripted model, `sandbox/scripted_model/_mcq.py`, owns the layout
constants used here):

* harbour-walk (4 min): eight 30-s scenes, each with its background colour and a rising two-digit number in
  7-segment blocks; three 3-s flashes of a red square in the teal scene (most fall between frames sampled over
  the whole video); five 2 kHz beeps; a rising four-note melody; four spoken sentences with subtitles.
* workshop-day (16 min): eight 120-s scenes with falling numbers; four 4-s red-square flashes in the orange scene
  (all between the frames sampled over the whole video); seven 1 kHz beeps; a falling melody; four spoken steps
  with subtitles.

The flashes show what App. D.5 warns of: deterministic uniform sampling "can miss rapid, fine-grained events";
frames sampled inside a question's certificate window (App. E.1: the shortest stretch holding the evidence) catch
them. Each question's window is hand-written in its task.json from the times below.

Speech is synthesized by ffmpeg's flite filter (voice slt), as the other demos do, so no extra package is needed;
the SRT subtitle track is written from the same sentences and their synthesized lengths (`source: downloaded`).
The script writes videos/*.mp4, videos/*.srt and videos.json (sha256 and ffprobe durations). Output is byte-stable
for one ffmpeg build (single-threaded x264, bitexact flags).

Usage: python3 snapshots/make_demo_odyssey_media.py [--snapshot snapshots/demo-odyssey]
"""

from __future__ import annotations

import argparse
import array
import json
import math
import subprocess
import sys
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_demo_media import ffprobe_duration, sha256  # noqa: E402  (the sibling script)

from sandbox.scripted_model._mcq import (  # noqa: E402  (the layout the scripted model reads back)
    DIGIT_ORIGINS,
    DIGIT_SEGMENTS,
    FRAME_SIZE,
    PALETTE,
    PANEL,
    SEGMENTS,
    SQUARE,
)

FPS = 4
RATE = 16000
AMPLITUDE = 0.5
BEEP_S = 0.3
NOTE_S = 0.4
C5, E5, G5, C6 = 523.25, 659.25, 783.99, 1046.5


@dataclass(frozen=True)
class DemoVideo:
    id: str
    domain: str
    subcategory: str
    scene_s: float
    colours: list[str]
    numbers: list[int]
    flashes: list[tuple[float, float]]  # red square shown from, to (s)
    beep_hz: float
    beep_starts: list[float]
    melody_start: float
    melody: list[float]
    speech: list[tuple[float, str, str]]  # start (s), what is said, what the subtitle reads

    @property
    def duration_s(self) -> float:
        return self.scene_s * len(self.colours)


VIDEOS = [
    DemoVideo(
        "harbour-walk", "travel", "city-walk", 30.0,
        ["blue", "green", "orange", "purple", "teal", "yellow", "grey", "pink"],
        [12, 25, 31, 47, 58, 63, 76, 89],
        [(121.0, 124.0), (131.0, 134.0), (140.0, 143.0)],
        2000.0, [152.0, 153.0, 154.0, 155.0, 156.0],
        185.0, [C5, E5, G5, C6],
        [(3.0, "Welcome to the harbour walk. We start at the old pier.",
          "Welcome to the harbour walk. We start at the old pier."),
         (33.0, "The lighthouse was painted orange last spring.", "The lighthouse was painted orange last spring."),
         (63.0, "The ferry leaves every forty minutes.", "The ferry leaves every 40 minutes."),
         (213.0, "That is the end of our walk along the water.", "That is the end of our walk along the water.")],
    ),
    DemoVideo(
        "workshop-day", "diy", "woodworking", 120.0,
        ["green", "purple", "orange", "blue", "brown", "teal", "pink", "yellow"],
        [96, 84, 71, 65, 52, 43, 30, 17],
        [(250.0, 254.0), (270.0, 274.0), (290.0, 294.0), (310.0, 314.0)],
        1000.0, [500.0 + 2 * k for k in range(7)],
        700.0, [C6, G5, E5, C5],
        [(10.0, "First, we sand the oak board until it is smooth.",
          "First, we sand the oak board until it is smooth."),
         (260.0, "Next, we glue the joints of the frame.", "Next, we glue the joints of the frame."),
         (620.0, "Then we clamp the frame and let it dry overnight.",
          "Then we clamp the frame and let it dry overnight."),
         (900.0, "Finally, we varnish the top with two coats.", "Finally, we varnish the top with two coats.")],
    ),
]


def _hex(rgb: tuple[int, int, int]) -> str:
    return "0x" + "".join(f"{c:02x}" for c in rgb)


def _box(x: int, y: int, w: int, h: int, color: str, start: float, end: float) -> str:
    return f"drawbox=x={x}:y={y}:w={w}:h={h}:t=fill:color={color}:enable='between(t,{start:g},{end:g})'"


def video_filter(v: DemoVideo) -> str:
    """The drawbox chain: per scene its background and its number's lit segments; the panel; the flashes."""
    w, h = FRAME_SIZE
    chain = []
    for k, (colour, number) in enumerate(zip(v.colours, v.numbers, strict=True)):
        start, end = k * v.scene_s, (k + 1) * v.scene_s - 0.01
        chain.append(_box(0, 0, w, h, _hex(PALETTE[colour]), start, end))
        chain.append(_box(*PANEL, "0x000000", start, end))
        for (ox, oy), digit in zip(DIGIT_ORIGINS, divmod(number, 10), strict=True):
            for segment in DIGIT_SEGMENTS[digit]:
                dx, dy, sw, sh = SEGMENTS[segment]
                chain.append(_box(ox + dx, oy + dy, sw, sh, "0xffffff", start, end))
    for start, end in v.flashes:
        chain.append(_box(*SQUARE, "0xff0000", start, end))
    return ",".join(chain)


def _tone(samples: array.array, start_s: float, length_s: float, hz: float) -> None:
    """Add a sine tone with 10-ms ramps at both ends."""
    first, n, ramp = int(start_s * RATE), int(length_s * RATE), int(0.01 * RATE)
    for i in range(n):
        gain = min(1.0, i / ramp, (n - 1 - i) / ramp)
        samples[first + i] += int(32767 * AMPLITUDE * gain * math.sin(2 * math.pi * hz * i / RATE))


def _speech(text: str, tmp: Path) -> array.array:
    txt, wav = tmp / "line.txt", tmp / "line.wav"
    txt.write_text(text, encoding="utf-8")
    subprocess.run(["ffmpeg", "-y", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i",
                    f"flite=textfile={txt}:voice=slt", "-ar", str(RATE), "-ac", "1", "-c:a", "pcm_s16le", str(wav)],
                   check=True)
    with wave.open(str(wav)) as f:
        return array.array("h", f.readframes(f.getnframes()))


def _srt_time(s: float) -> str:
    ms = round(s * 1000)
    return f"{ms // 3600000:02d}:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


def audio_track(v: DemoVideo, tmp: Path) -> tuple[Path, str]:
    """The WAV of the video's audio and its SRT text."""
    samples = array.array("h", bytes(2 * int(v.duration_s * RATE)))
    for start in v.beep_starts:
        _tone(samples, start, BEEP_S, v.beep_hz)
    for k, hz in enumerate(v.melody):
        _tone(samples, v.melody_start + k * NOTE_S, NOTE_S, hz)
    cues = []
    for k, (start, said, shown) in enumerate(v.speech, start=1):
        voice = _speech(said, tmp)
        at = int(start * RATE)
        for i, s in enumerate(voice):
            samples[at + i] = max(-32768, min(32767, samples[at + i] + s))
        cues.append(f"{k}\n{_srt_time(start)} --> {_srt_time(start + len(voice) / RATE)}\n{shown}\n")
    wav = tmp / f"{v.id}.wav"
    with wave.open(str(wav), "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(RATE)
        f.writeframes(samples.tobytes())
    return wav, "\n".join(cues)


def build(v: DemoVideo, folder: Path, tmp: Path) -> None:
    wav, srt = audio_track(v, tmp)
    (folder / f"{v.id}.srt").write_text(srt, encoding="utf-8")
    script = tmp / f"{v.id}.filter"
    script.write_text(f"[0:v]{video_filter(v)},format=yuv420p[v]", encoding="utf-8")
    w, h = FRAME_SIZE
    subprocess.run([
        "ffmpeg", "-y", "-hide_banner", "-loglevel", "error", "-threads", "1",
        "-f", "lavfi", "-i", f"color=c=black:s={w}x{h}:r={FPS}:d={v.duration_s:g}", "-i", str(wav),
        "-filter_complex_script", str(script), "-map", "[v]", "-map", "1:a",
        "-c:v", "libx264", "-preset", "medium", "-crf", "28", "-tune", "stillimage", "-threads", "1",
        "-g", str(FPS * 30), "-c:a", "aac", "-b:a", "16k", "-ar", str(RATE), "-ac", "1",
        "-fflags", "+bitexact", "-flags:v", "+bitexact", "-flags:a", "+bitexact", "-map_metadata", "-1",
        "-movflags", "+faststart", str(folder / f"{v.id}.mp4")], check=True)


def videos_json(snapshot: Path) -> dict:
    entries = []
    for v in VIDEOS:
        mp4, srt = snapshot / "videos" / f"{v.id}.mp4", snapshot / "videos" / f"{v.id}.srt"
        entries.append({
            "id": v.id, "url": f"https://videos.example.org/odyssey-demo/{v.id}",
            "file": f"videos/{v.id}.mp4", "sha256": sha256(mp4), "duration_s": ffprobe_duration(mp4),
            "domain": v.domain, "subcategory": v.subcategory,
            "subtitles": {"file": f"videos/{v.id}.srt", "sha256": sha256(srt), "source": "downloaded"}})
    return {"videos": entries}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", type=Path, default=Path(__file__).resolve().parent / "demo-odyssey")
    args = parser.parse_args()
    folder = args.snapshot / "videos"
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for v in VIDEOS:
            build(v, folder, Path(tmp))
    data = videos_json(args.snapshot)
    (args.snapshot / "videos.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    for entry in data["videos"]:
        size = (args.snapshot / entry["file"]).stat().st_size
        print(f"{entry['file']}: {entry['duration_s']} s, {size} bytes, sha256 {entry['sha256']}")


if __name__ == "__main__":
    main()
