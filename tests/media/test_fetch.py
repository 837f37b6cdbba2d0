"""`omnidr snapshot fetch-videos`: real yt-dlp against a loopback HTTP server, real ffprobe."""

import functools
import hashlib
import json
import os
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from testkit import ROOT, edit_json, make_mp4, run_cli

pytestmark = [pytest.mark.media, pytest.mark.network]


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def video_server(tmp_path: Path):
    """A loopback HTTP server serving a folder of mp4 files made by ffmpeg."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(served))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield served, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _point_tasks_at(snapshot: Path, urls: dict[str, tuple[str, str, float]]) -> None:
    for task_id, (url, sha, duration) in urls.items():
        task_json = snapshot / "tasks" / task_id / "task.json"
        edit_json(task_json, lambda d, url=url, sha=sha, duration=duration: d["video"].update(url=url, sha256=sha, duration_s=duration))
        (snapshot / "tasks" / task_id / "video.mp4").unlink(missing_ok=True)


def test_fetch_downloads_verifies_and_probes(demo_copy, video_server):
    served, base = video_server
    tasks = json.loads((demo_copy / "snapshot.json").read_text())["tasks"]
    good = make_mp4(served / "good.mp4", seconds=3, color="red")
    make_mp4(served / "other.mp4", seconds=2, color="green")
    sha_good = hashlib.sha256(good.read_bytes()).hexdigest()
    _point_tasks_at(demo_copy, {
        tasks[0]: (f"{base}/good.mp4", sha_good, 3.0),
        tasks[1]: (f"{base}/missing.mp4", sha_good, 3.0),  # 404
        tasks[2]: (f"{base}/other.mp4", "0" * 64, 2.0),  # wrong checksum
    })

    r = run_cli("snapshot", "fetch-videos", demo_copy)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    lines = r.stdout.splitlines()
    ok = next(x for x in lines if tasks[0] in x)
    assert ok.startswith("downloaded") and "3.0 s, 160x90, 10 fps, audio yes (aac)" in ok
    assert (demo_copy / "tasks" / tasks[0] / "video.mp4").read_bytes() == good.read_bytes()
    missing = next(x for x in lines if tasks[1] in x)
    assert missing.startswith("failed") and "404" in missing
    bad = next(x for x in lines if tasks[2] in x)
    assert bad.startswith("failed") and "checksum mismatch" in bad
    assert not (demo_copy / "tasks" / tasks[2] / "video.mp4").exists()
    assert not list((demo_copy / "tasks" / tasks[2]).glob(".fetch-*"))
    assert "1 of 3 video(s) ready" in r.stdout

    again = run_cli("snapshot", "fetch-videos", "--task", tasks[0], demo_copy)
    assert again.returncode == 0
    assert again.stdout.splitlines()[0].startswith("present")


def test_fetch_unknown_task_is_a_usage_error(demo_copy):
    r = run_cli("snapshot", "fetch-videos", "--task", "nope", demo_copy)
    assert r.returncode == 2
    assert "unknown task id(s): nope" in r.stderr


def test_probe_reads_duration_resolution_and_audio(tmp_path):
    from omnidr.media import probe_video

    p = probe_video(make_mp4(tmp_path / "v.mp4", seconds=2.0))
    assert abs(p.duration_s - 2.0) < 0.2
    assert (p.width, p.height, p.fps, p.has_audio) == (160, 90, 10.0, True)


def test_probe_of_a_non_video_says_so(tmp_path):
    from omnidr.media import ProbeError, probe_video

    bad = tmp_path / "not-a-video.mp4"
    bad.write_text("hello")
    with pytest.raises(ProbeError, match="ffprobe failed"):
        probe_video(bad)


_VTT = "WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nThe pendant hangs at 2.1 m\n\n00:00:01.500 --> 00:00:03.000\nover the table\n"


@pytest.mark.browser  # `snapshot validate` renders the demo's reports in Chromium (the empty-report check)
def test_captions_are_fetched_with_the_video_recorded_verified_and_read(demo_copy, video_server):
    """A page whose <video> carries a <track kind=captions>: yt-dlp's generic extractor finds the track. With
    --add-captions it is stored beside the video and recorded in task.json with its checksum; later fetches
    verify it like the video, a changed track fails the task, and the video skill reads it as its captions."""
    served, base = video_server
    task = json.loads((demo_copy / "snapshot.json").read_text())["tasks"][0]
    video = make_mp4(served / "talk.mp4", seconds=3, color="red")
    (served / "talk.en.vtt").write_text(_VTT, "utf-8")
    (served / "talk.html").write_text(
        '<html><head><title>Pendant talk</title></head><body><video controls><source src="talk.mp4" type="video/mp4">'
        '<track kind="captions" src="talk.en.vtt" srclang="en" label="English"></video></body></html>', "utf-8")
    _point_tasks_at(demo_copy, {task: (f"{base}/talk.html", hashlib.sha256(video.read_bytes()).hexdigest(), 3.0)})
    folder = demo_copy / "tasks" / task

    plain = run_cli("snapshot", "fetch-videos", "--task", task, demo_copy)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "captions" not in plain.stdout and not (folder / "video.en.vtt").exists()  # none declared, none asked for

    added = run_cli("snapshot", "fetch-videos", "--task", task, "--add-captions", demo_copy)
    assert added.returncode == 0, added.stdout + added.stderr
    assert "captions downloaded video.en.vtt: en (uploader's); recorded in task.json" in added.stdout
    assert f"task.json changed: run `omnidr snapshot freeze {demo_copy}`" in added.stdout
    assert (folder / "video.en.vtt").read_text("utf-8") == _VTT
    [track] = json.loads((folder / "task.json").read_text())["video"]["captions"]
    assert track == {"file": "video.en.vtt", "sha256": hashlib.sha256(_VTT.encode()).hexdigest(), "language": "en",
                     "automatic": False}

    again = run_cli("snapshot", "fetch-videos", "--task", task, demo_copy)
    assert again.returncode == 0 and "captions present    video.en.vtt: en (uploader's)" in again.stdout, again.stdout

    (folder / "video.en.vtt").unlink()
    (served / "talk.en.vtt").write_text(_VTT.replace("2.1 m", "3 m"), "utf-8")  # the source changed its track
    changed = run_cli("snapshot", "fetch-videos", "--task", task, demo_copy)
    assert changed.returncode == 1 and "Traceback" not in changed.stdout + changed.stderr
    assert f"failed     {task}: captions video.en.vtt: checksum mismatch: expected {track['sha256']}" in changed.stdout
    assert not (folder / "video.en.vtt").exists()
    validate = run_cli("snapshot", "validate", demo_copy)
    assert f"captions tasks/{task}/video.en.vtt are missing; run `omnidr snapshot fetch-videos" in validate.stdout

    # the video skill reads the track the sandbox mounts beside the video (OMNIDR_CAPTIONS)
    (served / "talk.en.vtt").write_text(_VTT, "utf-8")
    assert run_cli("snapshot", "fetch-videos", "--task", task, demo_copy).returncode == 0
    skill = subprocess.run(
        [sys.executable, "-m", "sandbox.skills", "video", "transcript", "--window", "0"], capture_output=True, text=True,
        env={**os.environ, "OMNIDR_VIDEO": str(folder / "video.mp4"), "OMNIDR_CAPTIONS": str(folder / "video.en.vtt"),
             "OMNIDR_SKILL_STATE": str(demo_copy.parent / "skills"), "OMNIDR_CAPABILITY": "video",
             "OMNIDR_REPORT_DIR": str(demo_copy.parent / "report"), "OPENAI_BASE_URL": ""}, cwd=ROOT, timeout=60)
    assert skill.returncode == 0, skill.stderr
    got = json.loads(skill.stdout)
    assert got["transcript_source"] == "captions" and [c["text"] for c in got["transcript"]] == [
        "The pendant hangs at 2.1 m", "over the table"]
