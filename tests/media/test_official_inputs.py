"""The VideoOdyssey authors' runner's inputs (`official-*` settings): its frames are the first frame of each of 64
intervals (ours take the midpoint), JPEG at 512 px and quality 70; its audio is a montage of 64 clips of 10 s; its
subtitles are one quoted line per frame; and its request is one user message with the prompt first."""

import base64
import json
import subprocess

import pytest

from omnidr.benchmark import CclWindow, InputSetting
from omnidr.media import VideoFrames, official_clips, official_plan, prepare_official_inputs, uniform_indices
from sandbox.direct_agent import build_messages
from sandbox.models import McqQuestion, MediaInputs
from sandbox.scripted_model._mcq import is_mcq, solve

pytestmark = [pytest.mark.media]


def test_full_video_frames_are_the_first_of_each_of_64_intervals():
    meta = VideoFrames(frame_count=3840, fps=4.0, duration_s=960.0)
    plan = official_plan(meta, None)
    # k = floor(3840 / 64) = 60: indices 0, 60, ..., 3780 at index / fps
    assert [i for i, _ in plan] == [60 * n for n in range(64)] and plan[1] == (60, 15.0)
    assert uniform_indices(0, 3840, 64)[:2] == [30, 90]  # ours: the midpoints
    # fewer than 128 frames: k = max(1, floor(100 / 64)) = 1, the first 64 frames
    assert [i for i, _ in official_plan(VideoFrames(frame_count=100, fps=25.0, duration_s=4.0), None)] == list(range(64))


def test_window_frames_are_one_a_second_below_64_s_else_64_spread_over_it():
    meta = VideoFrames(frame_count=3840, fps=4.0, duration_s=960.0)
    short = official_plan(meta, CclWindow(start_s=100, end_s=130.5))  # 30.5 s: ceil -> 31 frames at 100, 101, ...
    assert [t for _, t in short] == [100.0 + n for n in range(31)] and short[0][0] == 400
    long = official_plan(meta, CclWindow(start_s=100, end_s=300))  # 200 s: 64 frames at 100 + n * 200 / 64
    assert len(long) == 64 and long[1] == (round(103.125 * 4), 103.125)


def test_audio_clips_are_64_of_10_s_spread_over_the_video_or_one_stretch_of_a_short_window():
    clips = official_clips(960.0, None)  # every 15 s, 10 s each
    assert len(clips) == 64 and clips[1] == (15.0, 10.0) and all(n == 10.0 for _, n in clips)
    short = official_clips(240.0, None)  # every 3.75 s; the last clips stop at the end
    assert short[-1] == (236.25, 3.75) and short[0] == (0.0, 10.0)
    assert official_clips(960.0, (100.0, 400.0)) == [(100.0, 300.0)]  # <= 640 s: one clip of it all
    wide = official_clips(3600.0, (0.0, 1280.0))  # > 640 s: 64 clips at n * 20 s
    assert len(wide) == 64 and wide[1] == (20.0, 10.0)
    assert official_clips(960.0, (50.0, 50.0)) == [(49.5, 1.0)]  # a zero-length window: the second around it


@pytest.fixture(scope="module")
def hd_video(tmp_path_factory):
    """A 1280x720, 20 s video with a tone, and SRT subtitles for 2-6 s and 11-15 s."""
    folder = tmp_path_factory.mktemp("hd")
    video = folder / "hd.mp4"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=1280x720:rate=10:duration=20",
                    "-f", "lavfi", "-i", "sine=frequency=440:duration=20", "-shortest", "-c:v", "libx264",
                    "-pix_fmt", "yuv420p", "-c:a", "aac", str(video)], check=True)
    srt = folder / "hd.srt"
    srt.write_text("1\n00:00:02,000 --> 00:00:06,000\nFirst line\n\n2\n00:00:11,000 --> 00:00:15,000\nSecond "
                   "\"quoted\"\nline\n", "utf-8")
    return video, srt


def test_prepared_official_inputs_are_512_px_jpeg_at_quality_70_with_the_montage_and_quoted_lines(hd_video, tmp_path):
    from PIL import Image

    video, srt = hd_video
    av = prepare_official_inputs(video, "0" * 64, srt, InputSetting.parse("official-av"), None, tmp_path)
    inputs = MediaInputs.model_validate_json((av / "inputs.json").read_text("utf-8"))
    # 200 frames: k = floor(200 / 64) = 3 -> indices 0, 3, ..., 189
    assert (inputs.protocol, inputs.frame_format, len(inputs.frames)) == ("official", "jpeg", 64)
    assert [f.index for f in inputs.frames][:3] == [0, 3, 6] and inputs.frames[-1].index == 189
    with Image.open(av / inputs.frames[0].file) as frame:
        reference = Image.new("RGB", (64, 64))
        reference.save(tmp_path / "q70.jpg", "JPEG", quality=70)
        with Image.open(tmp_path / "q70.jpg") as q70:
            assert (frame.format, frame.size) == ("JPEG", (512, 288))  # 1280 x 720 scaled by 512 / 1280
            assert frame.quantization == q70.quantization  # libjpeg's tables for quality 70
    # the montage: 64 clips of min(10 s, what is left) starting every 20 / 64 s, one mono 16 kHz 16 kbit/s MP3
    assert inputs.audio_format == "mp3" and len(inputs.audio_clips) == 64
    assert inputs.audio_clips[1] == (0.3125, 10.0) and inputs.audio_clips[-1] == (19.6875, 0.3125)
    probe = json.loads(subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_name,sample_rate,"
                                       "channels,bit_rate:format=duration", "-of", "json", str(av / inputs.audio)],
                                      capture_output=True, text=True, check=True).stdout)
    stream = probe["streams"][0]
    assert (stream["codec_name"], stream["sample_rate"], stream["channels"], stream["bit_rate"]) == (
        "mp3", "16000", 1, "16000")
    total = sum(n for _, n in inputs.audio_clips)
    assert abs(float(probe["format"]["duration"]) - total) < 0.5
    # subtitles: one JSON-quoted line per frame, "" where no cue holds the frame's time
    subs = prepare_official_inputs(video, "0" * 64, srt, InputSetting.parse("official-video_subtitle"), None, tmp_path)
    lines = (subs / "subtitles.txt").read_text("utf-8").splitlines()
    times = [f.timestamp_s for f in MediaInputs.model_validate_json((subs / "inputs.json").read_text()).frames]
    assert len(lines) == 64
    for t, line in zip(times, lines, strict=True):
        expected = "First line" if 2 <= t <= 6 else 'Second "quoted" line' if 11 <= t <= 15 else ""
        assert json.loads(line) == expected, (t, line)


def test_the_official_request_is_one_user_message_the_scripted_model_answers_from_the_subtitles(hd_video, tmp_path):
    video, srt = hd_video
    folder = prepare_official_inputs(video, "0" * 64, srt, InputSetting.parse("official-video_subtitle-cw"),
                                     CclWindow(start_s=1, end_s=16), tmp_path)
    inputs = MediaInputs.model_validate_json((folder / "inputs.json").read_text("utf-8"))
    assert [f.timestamp_s for f in inputs.frames] == [1.0 + n for n in range(15)]  # 15 s < 64 s: one a second
    question = McqQuestion(id="q", question="What does the speaker say second?",
                           options=["Nothing", "Second quoted line", "Third line", "Fourth line"])
    messages = build_messages(question, inputs, folder)
    [user] = messages  # no system message
    parts = user["content"]
    assert user["role"] == "user" and parts[0]["type"] == "text"
    assert parts[0]["text"].endswith("Question: What does the speaker say second?\nOptions:\nA. Nothing\n"
                                     "B. Second quoted line\nC. Third line\nD. Fourth line")
    assert '"First line"' in parts[0]["text"] and '""' in parts[0]["text"]
    images = parts[1:]
    assert len(images) == 15 and all(p["type"] == "image_url" and p["image_url"]["detail"] == "low" for p in images)
    assert base64.b64decode(images[0]["image_url"]["url"].split(",", 1)[1])[:3] == b"\xff\xd8\xff"  # JPEG
    # the scripted model takes the official layout for a multiple-choice request, and reads its subtitles
    assert is_mcq({"messages": messages})
    assert solve(messages).startswith("B\n")


def test_the_snapshots_template_replaces_our_wording_in_the_official_request(hd_video, tmp_path):
    video, srt = hd_video
    folder = prepare_official_inputs(video, "0" * 64, srt, InputSetting.parse("official-video_subtitle-cw"),
                                     CclWindow(start_s=1, end_s=4), tmp_path)
    inputs = MediaInputs.model_validate_json((folder / "inputs.json").read_text("utf-8"))
    question = McqQuestion(id="q", question="What is said?", options=["a", "b", "c", "d"],
                           template="SUBS:\n{subtitles}\nQ: {question}\n{options}\nReply A-D.")
    [user] = build_messages(question, inputs, folder)
    # frames at 1, 2, 3 s: the first cue covers 2-6 s
    assert user["content"][0]["text"] == 'SUBS:\n""\n"First line"\n"First line"\nQ: What is said?\nA. a\nB. b\nC. c\nD. d\nReply A-D.'
