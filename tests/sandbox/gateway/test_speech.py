"""Speech-to-text for a video without subtitles: the video skill cuts the window's audio and sends it to
the gateway's `/v1/audio/transcriptions`, which injects the real key, counts the request like a model call
and logs it in gateway.jsonl. The gateway and the fake OpenAI API run on loopback."""

import json
import os
import subprocess
import sys

import pytest
from test_gateway import AGENT_TOKEN, OPENAI_KEY, anthropic_api, gateway, loop, openai_api  # noqa: F401 - fixtures
from testkit import DEMO, ROOT, make_mp4

pytestmark = [pytest.mark.network, pytest.mark.media]


def transcript(tmp_path, video, gw_url: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(OMNIDR_CAPABILITY="video", OMNIDR_VIDEO=str(video), OMNIDR_REPORT_DIR=str(tmp_path / "report"),
               OMNIDR_CONTRACT=str(DEMO / "contract"), OMNIDR_SKILL_STATE=str(tmp_path / "state"),
               OPENAI_BASE_URL=f"{gw_url}/v1", OPENAI_API_KEY=AGENT_TOKEN, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "sandbox.skills", "video", "transcript", *args], env=env,
                          capture_output=True, text=True, timeout=120)


def test_speech_without_subtitles_is_transcribed_through_the_gateway_and_counted(tmp_path, gateway, openai_api):
    video = make_mp4(tmp_path / "talk.mp4", seconds=4.0)  # audio, no subtitle track
    gw = gateway(budget={"max_iterations": 1})
    r = transcript(tmp_path, video, gw.url, "--window", "0")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["transcript_source"] == "speech_to_text"
    # the fake API splits the audio it got in two halves: the WAV holds the window's 4 s (aac pads a few ms)
    assert [(c["start_s"], c["end_s"], c["text"]) for c in out["transcript"]] == [
        (0.0, pytest.approx(2.0, abs=0.02), "one"), (pytest.approx(2.0, abs=0.02), pytest.approx(4.0, abs=0.03), "two")]
    [sent] = [q for q in openai_api.received if q.path == "/v1/audio/transcriptions"]
    assert sent.headers["Authorization"] == f"Bearer {OPENAI_KEY}"  # the gateway's key, not the agent's token
    assert sent.body["model"] == "whisper-1" and sent.body["file"][:4] == b"RIFF"  # the window's audio as WAV
    [logged] = gw.exchanges()
    assert (logged.route, logged.counted, logged.status, logged.model) == ("audio_transcriptions", True, 200, "whisper-1")
    assert logged.request_body["files"] == [{"field": "file", "filename": "window.wav", "content_type": "audio/wav",
                                             "bytes": len(sent.body["file"])}]
    assert logged.usage.input_tokens == 50 and AGENT_TOKEN not in gw.log_text() and OPENAI_KEY not in gw.log_text()
    # budgeted like a model call: the second transcription is refused, in one line
    again = transcript(tmp_path, video, gw.url, "--window", "0", "--source", "speech")
    assert again.returncode == 1 and len(again.stderr.strip().splitlines()) == 1
    assert again.stderr.startswith("omnidr-skill video transcript: speech-to-text failed (400): ") and "Budget exhausted (max_iterations)" in again.stderr


def test_the_subtitle_track_comes_first_and_a_missing_track_is_said(tmp_path, gateway, openai_api):
    gw = gateway()
    r = transcript(tmp_path, DEMO / "tasks" / "pendant-lamp-safety" / "video.mp4", gw.url, "--window", "0")
    assert json.loads(r.stdout)["transcript_source"] == "subtitle_track" and openai_api.received == []
    bare = transcript(tmp_path, make_mp4(tmp_path / "bare.mp4"), gw.url, "--source", "subtitles")
    assert bare.returncode == 1 and "no subtitle track; use --source speech" in bare.stderr
