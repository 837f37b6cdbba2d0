"""How long does preparing a multiple-choice question's frames take on a two-hour video, seeking to each frame,
against decoding the whole file?

Makes (once, cached under ~/.cache/omnidr/bench/) a 2-hour test video: ffmpeg's `testsrc2` at 25 fps with a sine
tone, libx264 with a GOP of 250. Then, each in a fresh subprocess so that the peak memories are separate, times
`prepare_inputs` for N frames of the whole video into an empty cache, and one ffmpeg that decodes the whole file
and keeps the same N frames with the select filter. Prints both times, their ratio and each one's peak memory
(the largest max RSS of its child processes: the ffmpeg processes; prepare runs os.cpu_count() of them at once).
Asserts nothing.

    .venv/bin/python benchmarks/frame_sampling.py [--frames 256] [--size 640x360]
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from omnidr.benchmark import InputSetting, McqProtocol
from omnidr.media import prepare_inputs, probe_frames

CACHE = Path.home() / ".cache" / "omnidr" / "bench"
SECONDS, FPS, GOP = 7200, 25, 250


def test_video(size: str) -> Path:
    """The 2-hour test video, made on first use. `-preset ultrafast`: 640x360 at the default preset took about
    9 min here, over the budget of a few minutes; ultrafast makes it in about 3."""
    dest = CACHE / f"testsrc2-{size}-{FPS}fps-{SECONDS}s-gop{GOP}.mp4"
    if dest.is_file():
        print(f"test video: {dest} (reused, {dest.stat().st_size / 1e6:.0f} MB)")
        return dest
    CACHE.mkdir(parents=True, exist_ok=True)
    part = dest.with_suffix(".part.mp4")
    start = time.monotonic()
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", f"testsrc2=size={size}:rate={FPS}",
                    "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100", "-t", str(SECONDS),
                    "-c:v", "libx264", "-preset", "ultrafast", "-crf", "28", "-g", str(GOP), "-pix_fmt", "yuv420p",
                    "-c:a", "aac", "-b:a", "64k", "-movflags", "+faststart", str(part)], check=True)
    os.replace(part, dest)
    print(f"test video: {dest} (made in {time.monotonic() - start:.1f} s, {dest.stat().st_size / 1e6:.0f} MB)")
    return dest


def measure(what: str, video: Path, frames: int) -> dict:
    """Run one measurement in this (fresh) process; returns seconds and the children's peak RSS in MB."""
    protocol = McqProtocol(frame_budgets=[frames], default_frames=frames)
    setting = InputSetting(modality="video", frames=frames, window="full")
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        out = Path(tmp)
        if what == "prepare":
            out = prepare_inputs(video, "0" * 64, None, setting, None, protocol, Path(tmp) / "cache") / "frames"
        else:
            count = probe_frames(video).frame_count
            # frame n is one of uniform_indices(0, F, N) iff an odd multiple of F lies in [2Nn, 2N(n+1)): the
            # same frames as prepare_inputs, in one expression (a sum of 256 eq() terms is too deep for ffmpeg)
            keep = f"gt(ceil((2*{frames}*(n+1)/{count}-1)/2)-ceil((2*{frames}*n/{count}-1)/2)\\,0)"
            subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-i", str(video), "-map", "0:v:0",
                            "-vf", f"select='{keep}',scale=w='min(iw,768)':h='min(ih,768)':"
                            "force_original_aspect_ratio=decrease", "-fps_mode", "passthrough", "-q:v", "2",
                            str(Path(tmp) / "%04d.jpg")], check=True)
        seconds = time.monotonic() - start
        written = len(list(out.glob("*.jpg")))
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"seconds": seconds, "peak_mb": peak_mb, "frames": written}


def main(frames: int, size: str) -> None:
    video = test_video(size)
    meta = probe_frames(video)
    print(f"{meta.frame_count} frames at {meta.fps:g} fps, {meta.duration_s:.0f} s; {frames} frames sampled; "
          f"{os.cpu_count()} cores")
    results = {}
    for what in ("prepare", "decode"):
        done = subprocess.run([sys.executable, __file__, "--measure", what, "--frames", str(frames), str(video)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{what} failed: {done.stderr.strip().splitlines()[-1:]}")
        results[what] = json.loads(done.stdout.strip().splitlines()[-1])
    prep, dec = results["prepare"], results["decode"]
    print(f"prepare_inputs (seek per frame, empty cache): {prep['seconds']:7.1f} s, peak {prep['peak_mb']:5.0f} MB per "
          f"ffmpeg, {prep['frames']} frames")
    print(f"decode whole file, select the same frames:    {dec['seconds']:7.1f} s, peak {dec['peak_mb']:5.0f} MB, "
          f"{dec['frames']} frames")
    print(f"ratio decode / prepare: {dec['seconds'] / prep['seconds']:.1f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=256, help="frame budget N")
    parser.add_argument("--size", default="640x360", help="resolution of the test video")
    parser.add_argument("--measure", choices=["prepare", "decode"], help=argparse.SUPPRESS)
    parser.add_argument("video", nargs="?", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.video, args.frames)))
    else:
        main(args.frames, args.size)
