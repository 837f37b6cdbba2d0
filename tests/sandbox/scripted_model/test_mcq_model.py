"""The scripted model as a multiple-choice model, on the VideoOdyssey demo (snapshots/demo-odyssey): it answers the
questions it is built for from the request alone, and each ablation moves its score the way the questions are
built for (paper 004, Sec. 4.3, App. D.2: audio, subtitles and the certificate window)."""

import json
import shutil
import socket
import struct
import subprocess
import threading
import urllib.request
import zlib
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from omnidr.benchmark import CclWindow, InputSetting, McqProtocol, McqTask, McqVideo, open_snapshot
from omnidr.media import prepare_inputs
from sandbox.direct_agent import build_messages
from sandbox.models import MEDIA_DIR, MEDIA_MANIFEST, OPTION_LETTERS, QUESTION_FILE, McqQuestion, MediaInputs
from sandbox.scripted_model import make_handler
from sandbox.scripted_model._mcq import decode_png, solve

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "snapshots/demo-odyssey"

pytestmark = pytest.mark.media


# --------------------------------------------------------------------------- inputs
def prepare(snap_root: Path, video: McqVideo, setting: InputSetting, window: tuple[float, float] | None,
            cache: Path, protocol: McqProtocol) -> tuple[MediaInputs, Path]:
    """The inputs the host prepares for the runner (`omnidr.media.prepare_inputs`) and their folder."""
    subtitles = snap_root / video.subtitles.file if video.subtitles is not None else None
    ccl = CclWindow(start_s=window[0], end_s=window[1]) if window is not None else None
    folder = prepare_inputs(snap_root / video.file, video.sha256, subtitles, setting, ccl, protocol, cache)
    return MediaInputs.model_validate_json((folder / "inputs.json").read_text("utf-8")), folder


# --------------------------------------------------------------------------- scoring the demo


@pytest.fixture(scope="module")
def demo():
    snap = open_snapshot(DEMO)
    assert snap.ok and snap.mcq_protocol is not None
    return snap


@pytest.fixture(scope="module")
def run_setting(demo, tmp_path_factory) -> Callable[[str], dict[str, bool]]:
    """Setting label -> {question id: answered right}, every demo question asked once through `build_messages`."""
    cache = tmp_path_factory.mktemp("frames")
    protocol: McqProtocol = demo.mcq_protocol
    done: dict[str, dict[str, bool]] = {}

    def run(label: str) -> dict[str, bool]:
        setting = InputSetting.parse(label, protocol)
        if setting.label in done:
            return done[setting.label]
        out = {}
        for task_id, bundle in demo.tasks.items():
            task: McqTask = bundle.mcq
            video = demo.videos[task.video]
            window = None if setting.window == "full" else (task.ccl.start_s, task.ccl.end_s)
            inputs, folder = prepare(DEMO, video, setting, window, cache, protocol)
            question = McqQuestion(id=task.id, question=task.question, options=task.options)
            reply = solve(build_messages(question, inputs, folder))
            out[task_id] = reply.splitlines()[0] == task.answer
        done[setting.label] = out
        return out

    return run


def _accuracy(results: dict[str, bool], ids: list[str]) -> float:
    return sum(results[i] for i in ids) / len(ids)


def _ids(demo, predicate) -> list[str]:
    return [i for i, b in demo.tasks.items() if predicate(b.mcq)]


def test_with_every_modality_over_the_whole_video_it_answers_what_it_is_built_for(demo, run_setting):
    results = run_setting("full")
    wrong = sorted(i for i, ok in results.items() if not ok)
    # the short red-square flashes fall between the frames sampled over the whole video (the cw-frames test)
    assert wrong == ["harbour-flash-count", "workshop-flash-count"]


def test_without_audio_the_sound_and_music_questions_fall_to_guesses(demo, run_setting):
    audio_only = _ids(demo, lambda q: q.audio_type is not None and q.audio_type.value in ("sound", "music"))
    with_audio, without = run_setting("video+subtitles+audio-32f-full"), run_setting("video+subtitles-32f-full")
    assert _accuracy(with_audio, audio_only) == 1.0
    assert _accuracy(without, audio_only) <= 0.5
    speech = _ids(demo, lambda q: q.audio_type is not None and q.audio_type.value == "speech")
    assert _accuracy(without, speech) == 1.0  # the subtitles still carry the speech


def test_without_subtitles_the_speech_questions_fall_to_guesses(demo, run_setting):
    speech = _ids(demo, lambda q: q.audio_type is not None and q.audio_type.value == "speech")
    assert _accuracy(run_setting("video+audio-32f-full"), speech) <= 0.5
    assert _accuracy(run_setting("video+subtitles+audio-32f-full"), speech) == 1.0


def test_frames_inside_the_certificate_window_catch_the_short_flashes(demo, run_setting):
    flashes = _ids(demo, lambda q: q.task_type == "counting" and "red square" in q.question)
    assert len(flashes) == 2
    assert _accuracy(run_setting("video-32f-full"), flashes) == 0.0
    assert _accuracy(run_setting("video-32f-cw-frames"), flashes) == 1.0


def test_the_visual_questions_need_no_audio_and_no_subtitles(demo, run_setting):
    visual = _ids(demo, lambda q: q.subset.value == "V" and "red square" not in q.question)
    assert _accuracy(run_setting("video-32f-full"), visual) == 1.0


@pytest.mark.network
def test_the_server_routes_the_multiple_choice_request_and_a_guess_says_so(demo, tmp_path):
    task = demo.tasks["harbour-ferry"].mcq
    inputs, folder = prepare(DEMO, demo.videos[task.video], InputSetting.parse("video-16f-full", demo.mcq_protocol),
                             None, tmp_path / "cache", demo.mcq_protocol)
    messages = build_messages(McqQuestion(id=task.id, question=task.question, options=task.options), inputs, folder)
    body = {"model": "scripted-mcq", "messages": messages}
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler([]))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions"
    try:
        replies = []
        for _ in range(2):
            request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
            with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=60) as response:
                replies.append(json.loads(response.read())["choices"][0]["message"]["content"])
    finally:
        server.shutdown()
    letter, sentence = replies[0].splitlines()
    assert letter in OPTION_LETTERS and sentence.startswith("I am guessing: neither subtitles")
    assert replies[1] == replies[0]  # the same guess every time


def test_the_png_decoder_reads_ffmpeg_pngs_pixel_for_pixel(tmp_path):
    # a test pattern with gradients and noise, so that ffmpeg's encoder uses several filter types
    source = ["-f", "lavfi", "-i", "testsrc2=s=64x36:d=1,noise=alls=40:allf=t", "-frames:v", "1"]
    for pix_fmt in ("rgb24", "rgba"):
        png, raw = tmp_path / f"{pix_fmt}.png", tmp_path / f"{pix_fmt}.raw"
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", *source, "-pix_fmt", pix_fmt,
                        "-pred", "mixed", str(png)], check=True)
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-i", str(png), "-f", "rawvideo",
                        "-pix_fmt", pix_fmt, str(raw)], check=True)
        image = decode_png(png.read_bytes())
        assert (image.width, image.height) == (64, 36)
        assert b"".join(image.rows) == raw.read_bytes()
        filters = _filter_types(png.read_bytes(), image.width * image.channels)
        assert len(filters) >= 3, filters


def _filter_types(png: bytes, stride: int) -> set[int]:
    """The PNG filter types the rows of `png` use."""
    at, idat = 8, b""
    while at < len(png):
        length, kind = struct.unpack(">I4s", png[at:at + 8])
        if kind == b"IDAT":
            idat += png[at + 8:at + 8 + length]
        at += 12 + length
    raw = zlib.decompress(idat)
    return {raw[y * (stride + 1)] for y in range(len(raw) // (stride + 1))}


def test_every_ablation_scores_below_all_modalities_and_the_window_scores_best(demo, run_setting, capsys):
    """The demo's score table (printed): taking a modality away lowers the score, the window raises it."""
    rows = {label: run_setting(label) for label in (
        "full", "video+subtitles-32f-full", "video+audio-32f-full", "video-32f-full", "video-32f-cw-frames",
        "video+subtitles+audio-32f-cw-frames", "video+subtitles+audio-16f-full", "video+subtitles+audio-64f-full")}
    with capsys.disabled():
        for label, results in rows.items():
            print(f"\n{label:40s} {sum(results.values()):2d}/{len(results)}", end="")
        print()
    score = {label: sum(results.values()) for label, results in rows.items()}
    assert all(score[label] < score["full"] for label in ("video+subtitles-32f-full", "video+audio-32f-full",
                                                          "video-32f-full"))
    assert score["video+subtitles+audio-32f-cw-frames"] == len(demo.tasks) > score["full"]


def _serve(handler) -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def _answering(status: int, body: bytes):
    from http.server import BaseHTTPRequestHandler

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the http.server name
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args):
            pass

    return Handler


@pytest.mark.network
def test_the_direct_runner_posts_its_one_request_and_records_each_way_it_can_fail(demo, tmp_path, monkeypatch):
    """The runner's own HTTP client (no SDK) against loopback servers: the scripted model answers; the gateway's
    budget refusal, a port nobody listens on and an answer that is not JSON each end the attempt with exit 3 and
    an answer file that says why."""
    from sandbox.direct_agent.__main__ import main

    task = demo.tasks["harbour-ferry"].mcq
    inputs, folder = prepare(DEMO, demo.videos[task.video], InputSetting.parse("video-16f-full", demo.mcq_protocol),
                             None, tmp_path / "cache", demo.mcq_protocol)
    given = tmp_path / "input"
    shutil.copytree(folder, given / MEDIA_DIR)  # the prepared inputs, as the host mounts them
    assert MediaInputs.model_validate_json((given / MEDIA_DIR / MEDIA_MANIFEST).read_text()) == inputs
    (given / QUESTION_FILE).write_text(McqQuestion(id=task.id, question=task.question,
                                                   options=task.options).model_dump_json())
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "attempt-token")
    refusal = json.dumps({"error": {"type": "budget_exhausted", "code": "budget_exhausted",
                                    "message": "the attempt's budget is spent: model_calls"}}).encode()
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    cases = [("answers", make_handler([]), 0, "complete_answer"),
             ("budget", _answering(400, refusal), 3, "budget_exhausted"),
             ("closed", None, 3, "execution_error"),
             ("garbled", _answering(200, b"<html>not json</html>"), 3, "execution_error")]
    for name, handler, code, termination in cases:
        server, url = _serve(handler) if handler is not None else (None, closed)
        out = tmp_path / name
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        monkeypatch.setenv("OMNIDR_OUTPUT_DIR", str(out))
        monkeypatch.setenv("OMNIDR_LOGS_DIR", str(out / "logs"))
        try:
            assert main(["--model", "scripted-mcq", "--input", str(given), "--timeout-s", "30"]) == code, name
        finally:
            if server is not None:
                server.shutdown()
        answer = json.loads((out / "answer.json").read_text())
        [line] = [json.loads(x) for x in (out / "logs" / "direct.jsonl").read_text().splitlines()]
        assert answer["termination"] == termination, (name, answer)
        if code == 0:
            assert answer["answer"].splitlines()[0] in OPTION_LETTERS and line["type"] == "answered"
            assert line["usage"]["total_tokens"] > 0
        else:
            assert answer["answer"] == "" and line["type"] == "failed" and line["termination"] == termination
    assert "HTTP 400" in json.loads((tmp_path / "budget" / "answer.json").read_text())["execution_error"]
    assert "no answer from" in json.loads((tmp_path / "closed" / "answer.json").read_text())["execution_error"]
    assert "not JSON" in json.loads((tmp_path / "garbled" / "answer.json").read_text())["execution_error"]
