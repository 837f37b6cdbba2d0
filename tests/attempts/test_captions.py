"""A task's caption track (fetched with its video, declared in task.json) reaches the agent: mounted read-only
beside the video, named in OMNIDR_CAPTIONS, and read by the video skill in the agent's image."""

import hashlib
import json
import subprocess
import sys

import pytest
from attempt_helpers import HERE
from testkit import edit_json

ROOT = HERE.parents[1]
TASK = "pendant-lamp-safety"
VTT = "WEBVTT\n\n00:00:02.000 --> 00:00:05.000\nKill the breaker before you touch the wires\n"

pytestmark = [pytest.mark.docker, pytest.mark.images("reference")]


def test_the_agent_reads_the_caption_track_beside_the_video(tmp_path, demo_copy, upstream_factory, real_key):
    from omnidr.images import build_images

    network, _ = upstream_factory()
    folder = demo_copy / "tasks" / TASK
    (folder / "video.en.vtt").write_text(VTT, "utf-8")
    edit_json(folder / "task.json", lambda d: d["video"].update(captions=[{
        "file": "video.en.vtt", "sha256": hashlib.sha256(VTT.encode()).hexdigest(), "language": "en",
        "automatic": False}]))
    run_dir = tmp_path / "run"
    r = subprocess.run(
        [sys.executable, "-m", "omnidr.cli", "run", "--snapshot", str(demo_copy), "--run-dir", str(run_dir), "--task",
         TASK, "--image", build_images(["reference"])[-1].tag, "--openai-base-url", "http://upstream:9000/v1",
         "--openai-key-env", "OMNIDR_TEST_REAL_KEY", "--outside-network", network, "--attempts", "1", "--",
         "sh", "-c", "echo CAPTIONS=$OMNIDR_CAPTIONS; (echo x >> /input/video.en.vtt) 2>/dev/null || echo READ-ONLY; "
                     "omnidr-skill video transcript --window 0 --source captions"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and "no_report" in r.stdout, r.stdout + r.stderr  # the command writes no report
    log = (run_dir / "attempts" / TASK / "1" / "logs" / "agent.log").read_text()
    assert "CAPTIONS=/input/video.en.vtt" in log and "READ-ONLY" in log, log
    assert (folder / "video.en.vtt").read_text("utf-8") == VTT
    got = json.loads(log[log.index("{"):log.rindex("}") + 1])
    assert got["transcript_source"] == "captions" and got["transcript"] == [
        {"start_s": 2.0, "end_s": 5.0, "text": "Kill the breaker before you touch the wires"}]
