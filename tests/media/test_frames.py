"""Frame sampling and the prepared inputs of a multiple-choice question: real ffmpeg on a small test video whose
frames all differ, checked frame by frame against a full decode of the same file."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from omnidr.benchmark import CclWindow, InputSetting, McqProtocol
from omnidr.errors import UserError
from omnidr.media import VideoFrames, prepare_inputs, probe_frames, sample_plan, uniform_indices
from sandbox.models import MediaInputs

pytestmark = pytest.mark.media

W, H, FPS, SECONDS = 128, 96, 25, 20
FRAME_BYTES = W * H * 3
SHA = "0" * 64
PNG = McqProtocol(frame_format="png", frame_max_side=256)


def _ffmpeg(*args: str) -> bytes:
    return subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", *args], check=True, capture_output=True).stdout


@pytest.fixture(scope="module")
def clip(tmp_path_factory) -> Path:
    """20 s of `testsrc` (its gradient moves every frame) with a tone, x264 with B-frames and a keyframe every 2 s,
    so most seeks land between keyframes."""
    path = tmp_path_factory.mktemp("clip") / "clip.mp4"
    _ffmpeg("-f", "lavfi", "-i", f"testsrc=size={W}x{H}:rate={FPS}", "-f", "lavfi", "-i", "sine=frequency=300",
            "-t", str(SECONDS), "-c:v", "libx264", "-g", "50", "-pix_fmt", "yuv420p", "-c:a", "aac", str(path))
    return path


@pytest.fixture(scope="module")
def decoded(clip: Path) -> list[bytes]:
    """Every frame of the clip as RGB, from decoding the whole file: the reference for 'the frame at index k'."""
    raw = _ffmpeg("-i", str(clip), "-f", "rawvideo", "-pix_fmt", "rgb24", "-")
    return [raw[i:i + FRAME_BYTES] for i in range(0, len(raw), FRAME_BYTES)]


@pytest.fixture
def subtitles(tmp_path: Path) -> Path:
    path = tmp_path / "clip.en.srt"
    path.write_text("1\n00:00:01,000 --> 00:00:02,000\nbefore the window\n\n"
                    "2\n00:00:05,000 --> 00:00:06,000\nstraddles the start\n\n"
                    "3\n00:00:07,250 --> 00:00:08,000\ninside\n\n"
                    "4\n00:00:09,500 --> 00:00:10,500\nstraddles the end\n\n"
                    "5\n00:00:15,000 --> 00:00:16,000\nafter the window\n", "utf-8")
    return path


WINDOW = CclWindow(start_s=5.5, end_s=10.0)


def _frames_rgb(folder: Path, inputs: MediaInputs) -> list[bytes]:
    raw = _ffmpeg("-start_number", "0", "-i", str(folder / "frames" / "%04d.png"), "-f", "rawvideo",
                  "-pix_fmt", "rgb24", "-")
    assert len(raw) == FRAME_BYTES * len(inputs.frames)
    return [raw[i:i + FRAME_BYTES] for i in range(0, len(raw), FRAME_BYTES)]


def _setting(text: str) -> InputSetting:
    """`MODALITY-NNNf-WINDOW` with any frame count (the tests use small ones)."""
    return InputSetting.parse(text, McqProtocol(frame_budgets=[16, 32, 64], default_frames=16))


def _size(image: Path) -> str:
    return subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0",
                           str(image)], capture_output=True, text=True, check=True).stdout.strip()


def _inputs(folder: Path) -> MediaInputs:
    return MediaInputs.model_validate_json((folder / "inputs.json").read_text())


def test_probe_counts_frames_with_or_without_nb_frames(clip: Path, tmp_path: Path):
    meta = probe_frames(clip)
    assert (meta.frame_count, meta.fps, meta.has_audio) == (SECONDS * FPS, FPS, True)
    assert meta.duration_s == pytest.approx(SECONDS, abs=0.05)
    mkv = tmp_path / "clip.mkv"  # Matroska records no frame count: the packets are counted
    _ffmpeg("-i", str(clip), "-c", "copy", str(mkv))
    assert probe_frames(mkv).frame_count == SECONDS * FPS


@pytest.mark.parametrize("content", [None, b"not a video at all\n"])
def test_unreadable_video_is_a_one_line_user_error(tmp_path: Path, content: bytes | None):
    bad = tmp_path / "bad.mp4"
    if content is not None:
        bad.write_bytes(content)
    with pytest.raises(UserError) as err:
        probe_frames(bad)
    assert "bad.mp4" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(UserError):
        prepare_inputs(bad, SHA, None, _setting("video-16f-full"), None, PNG, tmp_path / "cache")
    assert not list((tmp_path / "cache").rglob("*.png"))


def test_window_past_the_end_is_a_user_error(clip: Path, tmp_path: Path):
    with pytest.raises(UserError, match="holds no frame"):
        prepare_inputs(clip, SHA, None, _setting("video-16f-cw-frames"), CclWindow(start_s=30, end_s=40), PNG, tmp_path)
    assert not list(tmp_path.iterdir()) or not list((tmp_path / "frames").iterdir())


def test_uniform_indices_take_interval_midpoints():
    assert uniform_indices(0, 100, 4) == [12, 37, 62, 87]
    assert uniform_indices(10, 8, 4) == [11, 13, 15, 17]
    assert uniform_indices(3, 5, 64) == [3, 4, 5, 6, 7]  # a budget above the frame count takes every frame once


def test_window_plans_stay_inside_the_window_and_keep_the_rate():
    meta = VideoFrames(frame_count=90_000, fps=25.0, duration_s=3600.0)
    window = CclWindow(start_s=600.0, end_s=900.0)  # 7500 frames
    full = sample_plan(meta, 128, "full", None)
    frames = sample_plan(meta, 128, "cw-frames", window)
    rate = sample_plan(meta, 128, "cw-rate", window)
    assert len(full) == 128 and full[0][0] == 351 and full[-1][0] == 89_648
    assert len(frames) == 128 and len(rate) == round(128 * 7500 / 90_000) == 11
    for index, timestamp in frames + rate:
        assert 15_000 <= index < 22_500 and 600.0 <= timestamp < 900.0 and timestamp == index / 25.0
    assert len(rate) / 7500 == pytest.approx(len(full) / 90_000, rel=0.05)  # the whole video's sampling rate
    assert sample_plan(meta, 128, "cw-rate", CclWindow(start_s=10.0, end_s=10.5)) == [(256, 10.24)]  # never 0
    with pytest.raises(ValueError, match="certificate window"):
        sample_plan(meta, 128, "cw-frames", None)


def test_frames_are_the_frames_at_their_indices(clip: Path, decoded: list[bytes], tmp_path: Path):
    assert all(a != b for a, b in zip(decoded, decoded[1:], strict=False))  # neighbours are distinguishable
    folder = prepare_inputs(clip, SHA, None, _setting("video-32f-full"), None, PNG, tmp_path)
    inputs = _inputs(folder)
    assert [f.index for f in inputs.frames] == uniform_indices(0, SECONDS * FPS, 32)
    assert all(f.timestamp_s == f.index / FPS for f in inputs.frames)
    assert (inputs.frame_count, inputs.window, inputs.subtitles, inputs.audio) == (500, None, None, None)
    for frame, rgb in zip(inputs.frames, _frames_rgb(folder, inputs), strict=True):
        assert rgb == decoded[frame.index], f"{frame.file} is not frame {frame.index}"


def test_same_inputs_give_the_same_bytes(clip: Path, tmp_path: Path):
    setting = _setting("video-16f-cw-frames")
    protocol = McqProtocol()  # jpeg, scaled to at most 768: never enlarged
    a = prepare_inputs(clip, SHA, None, setting, WINDOW, protocol, tmp_path / "a")
    b = prepare_inputs(clip, SHA, None, setting, WINDOW, protocol, tmp_path / "b")
    assert (a / "inputs.json").read_bytes() == (b / "inputs.json").read_bytes()
    files = sorted(p.relative_to(a) for p in (a / "frames").iterdir())
    assert len(files) == 16 and all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
    assert _size(a / files[0]) == f"{W},{H}"


def test_frames_are_scaled_down_to_max_side(clip: Path, tmp_path: Path):
    folder = prepare_inputs(clip, SHA, None, _setting("video-16f-full"), None,
                            McqProtocol(frame_max_side=64), tmp_path)
    assert _size(folder / _inputs(folder).frames[0].file) == "64,48"


def test_window_modes_cut_frames_subtitles_and_audio(clip: Path, decoded: list[bytes], subtitles: Path,
                                                     tmp_path: Path):
    folder = prepare_inputs(clip, SHA, subtitles, _setting("video+subtitles+audio-16f-cw-frames"),
                            WINDOW, PNG, tmp_path)
    inputs = _inputs(folder)
    assert inputs.window == (5.5, 10.0) and len(inputs.frames) == 16
    assert all(5.5 <= f.timestamp_s < 10.0 for f in inputs.frames)
    for frame, rgb in zip(inputs.frames, _frames_rgb(folder, inputs), strict=True):
        assert rgb == decoded[frame.index], f"{frame.file} is not frame {frame.index}"
    assert (folder / inputs.subtitles).read_text().splitlines() == [
        "[00:05.0] straddles the start", "[00:07.2] inside", "[00:09.5] straddles the end"]
    audio = json.loads(subprocess.run(
        ["ffprobe", "-v", "error", "-show_entries", "stream=codec_name,channels,sample_rate,duration", "-of", "json",
         str(folder / inputs.audio)], capture_output=True, text=True, check=True).stdout)["streams"][0]
    assert (audio["codec_name"], audio["channels"], audio["sample_rate"]) == ("pcm_s16le", 1, "16000")
    assert float(audio["duration"]) == pytest.approx(4.5, abs=0.01)

    rate = _inputs(prepare_inputs(clip, SHA, subtitles, _setting("video-64f-cw-rate"), WINDOW, PNG,
                                  tmp_path))
    assert len(rate.frames) == round(64 * 112 / 500) == 14  # frames 138..249 lie in [5.5 s, 10 s)
    assert all(138 <= f.index < 250 for f in rate.frames) and rate.subtitles is None and rate.audio is None


def test_full_setting_gives_all_subtitles_and_the_whole_audio(clip: Path, subtitles: Path, tmp_path: Path):
    inputs = _inputs(folder := prepare_inputs(clip, SHA, subtitles, _setting("full"), WINDOW, PNG, tmp_path))
    assert inputs.window is None and len((folder / inputs.subtitles).read_text().splitlines()) == 5
    no_subs = _inputs(prepare_inputs(clip, SHA, None, _setting("full"), WINDOW, PNG, tmp_path))
    assert no_subs.subtitles is None and no_subs.audio == "audio.wav"  # a video without subtitles gets none


def test_cache_reuses_folders_and_shares_frames(clip: Path, subtitles: Path, tmp_path: Path, monkeypatch):
    video_only = _setting("video-16f-cw-frames")
    everything = _setting("video+subtitles+audio-16f-cw-frames")
    first = prepare_inputs(clip, SHA, subtitles, video_only, WINDOW, PNG, tmp_path)
    both = prepare_inputs(clip, SHA, subtitles, everything, WINDOW, PNG, tmp_path)
    assert both != first
    assert len(list((tmp_path / "frames").iterdir())) == 1  # one frames entry for both settings
    for a, b in zip(sorted((first / "frames").iterdir()), sorted((both / "frames").iterdir()), strict=True):
        assert os.stat(a).st_ino == os.stat(b).st_ino
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left

    def no_subprocess(*args, **kwargs):
        raise AssertionError(f"ran {args[0][0]} for a cached entry")

    monkeypatch.setattr(subprocess, "run", no_subprocess)
    assert prepare_inputs(clip, SHA, subtitles, video_only, WINDOW, PNG, tmp_path) == first
    assert prepare_inputs(clip, SHA, subtitles, everything, WINDOW, PNG, tmp_path) == both


def test_threads_asking_for_the_same_inputs_at_once_make_them_once(clip: Path, subtitles: Path, tmp_path: Path,
                                                                   monkeypatch):
    """A run's parallel attempts ask for one video's inputs at the same moment: ffmpeg reads it for one of them,
    and the others get that folder."""
    from concurrent.futures import ThreadPoolExecutor

    real_run, ran = subprocess.run, []

    def counted(args, *rest, **kwargs):
        ran.append(args[0])
        return real_run(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "run", counted)
    setting = _setting("video+audio-16f-cw-frames")
    with ThreadPoolExecutor(max_workers=4) as pool:
        folders = list(pool.map(lambda _: prepare_inputs(clip, SHA, subtitles, setting, WINDOW, PNG, tmp_path),
                                range(4)))
    assert len(set(folders)) == 1
    alone = tmp_path / "alone"
    ran_together = len(ran)
    prepare_inputs(clip, SHA, subtitles, setting, WINDOW, PNG, alone)
    assert ran_together == len(ran) - ran_together  # as many ffmpeg and ffprobe runs as one request alone takes
