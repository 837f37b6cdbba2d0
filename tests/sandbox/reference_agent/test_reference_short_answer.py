"""The reference agent on a short-answer task (OpenDS-World, paper 002 App. C.2.3), with the real gateway in front
of the scripted model (or of a fake paid API), on loopback: research ends with /output/answer.json whatever ends
it, and the gateway's finalization stage answers when research did not."""

import json
import os
import re
import subprocess
import sys
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from testkit import ROOT

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gateway"))
from fake_model_api import FakeModelApi, LoopThread  # noqa: E402 - the gateway tests' fake paid API

from omnidr.benchmark import TaskFormat as TaskKind  # noqa: E402
from sandbox.gateway import GatewayConfig, start_gateway  # noqa: E402
from sandbox.models import (  # noqa: E402
    SHORT_ANSWER_KIND,
    AnswerFile,
    Budget,
    FinalizationResult,
    GatewayExchange,
    GatewayState,
    ShortAnswerProtocol,
)
from sandbox.reference_agent._loop import NativeLog  # noqa: E402
from sandbox.reference_agent._short_answer import research, short_answer_capability, user_message  # noqa: E402
from sandbox.reference_agent._tools import ToolBox  # noqa: E402
from sandbox.scripted_model import load_scripts, make_handler  # noqa: E402

pytestmark = pytest.mark.network

AGENT_TOKEN = "attempt-dummy-short-5e7a1c93"
ADMIN_TOKEN = "controller-admin-short-b4d02f6e"
QUESTION = "Which river does the bridge in the video cross? (task bridge-river)"
PAGES = {"pages": [{"url": f"https://river{i}.example/bridge", "title": f"Bridge over river {i}"} for i in range(6)]}
SCRIPT = {  # five searches, then an answer; the finalization stage first asks for one more search
    "task": "bridge-river", "match": "task bridge-river", "model": "scripted-demo",
    "steps": [{"content": "", "tool_calls": [{"id": f"s{i}", "name": "search_web", "arguments": {
        "query": f"bridge river {i}"}}]} for i in range(5)] + [{"content": "The bridge crosses the Vltava."}],
    "finalization_first": {"tool_calls": [{"name": "search_web", "arguments": {"query": "one more"}}]},
    "finalization": "From the evidence collected, the bridge crosses the Vltava.",
}


def test_the_sandbox_names_the_task_kind_as_the_host_does():
    assert SHORT_ANSWER_KIND == TaskKind.short_answer.value


@pytest.fixture
def loop():
    thread = LoopThread()
    yield thread
    thread.close()


@pytest.fixture
def scripted(tmp_path):
    folder = tmp_path / "scripts"
    folder.mkdir()
    (folder / "bridge-river.json").write_text(json.dumps(SCRIPT), "utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(load_scripts(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def _gateway(loop, tmp_path: Path, base_url: str, **budget: Any):
    config = GatewayConfig(host="127.0.0.1", port=0, agent_token=AGENT_TOKEN, admin_token=ADMIN_TOKEN,
                           upstreams={"openai": {"base_url": base_url}}, budget=Budget(**budget),
                           log_path=tmp_path / "logs" / "gateway.jsonl", retry_backoff_s=0.001)
    running = loop.run(start_gateway(config))
    return running, config


def _agent(tmp_path: Path, gateway_url: str, protocol: dict | None = None) -> subprocess.CompletedProcess:
    (tmp_path / "input").mkdir(exist_ok=True)
    (tmp_path / "input" / "instruction.txt").write_text(QUESTION, "utf-8")
    if protocol is not None:
        (tmp_path / "input" / "protocol.json").write_text(json.dumps(protocol), "utf-8")
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(PYTHONPATH=str(ROOT), OMNIDR_TASK_KIND="short_answer", OPENAI_BASE_URL=gateway_url + "/v1",
               OPENAI_API_KEY=AGENT_TOKEN, OMNIDR_INSTRUCTION=str(tmp_path / "input" / "instruction.txt"),
               OMNIDR_PROTOCOL=str(tmp_path / "input" / "protocol.json"), OMNIDR_VIDEO=str(tmp_path / "video.mp4"),
               OMNIDR_SEARCH_INDEX=json.dumps(PAGES), OMNIDR_OUTPUT_DIR=str(tmp_path / "output"),
               OMNIDR_LOGS_DIR=str(tmp_path / "output" / "harness-logs"),
               OMNIDR_REPORT_DIR=str(tmp_path / "output" / "report"), OMNIDR_CONTRACT=str(tmp_path / "input"),
               OMNIDR_MODEL="scripted-demo", NO_PROXY="127.0.0.1")
    return subprocess.run([sys.executable, "-m", "sandbox.reference_agent", "--capability", "full"], env=env,
                          capture_output=True, text=True, timeout=180)


def _answer_file(tmp_path: Path) -> AnswerFile:
    return AnswerFile.model_validate_json((tmp_path / "output" / "answer.json").read_text("utf-8"))


def _post(url: str, body: dict) -> tuple[int, str]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, json.dumps(body).encode(), {
        "Content-Type": "application/json", "Authorization": f"Bearer {ADMIN_TOKEN}"})
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_a_spent_tool_call_budget_ends_research_and_the_finalization_stage_answers(loop, tmp_path, scripted):
    running, config = _gateway(loop, tmp_path, scripted, max_tool_calls=3)
    try:
        done = _agent(tmp_path, running.url, {"compaction": {"keep_observations": 1}})
        assert done.returncode == 0, done.stderr
        ended = _answer_file(tmp_path)
        assert (ended.answer, ended.termination, ended.source) == ("", "budget_exhausted", "none")
        state = GatewayState.model_validate_json(config.state_path.read_text())
        assert (state.tool_calls, state.budget_exhausted, state.refused_requests) == (3, "max_tool_calls", 1)

        status, text = _post(running.url + "/_gateway/finalize", {"question": QUESTION})
        assert status == 200, text
        final = FinalizationResult.model_validate_json(text)
    finally:
        loop.run(running.stop())
    assert (final.accepted, final.requests) == (True, 2)  # the first answer called a tool: rejected
    assert final.answer == SCRIPT["finalization"] and "called a tool" in final.rejected[0]
    assert final.answer_file(ended.termination).model_dump() == {
        "answer": SCRIPT["finalization"], "termination": "budget_exhausted", "source": "finalization",
        "execution_error": None}

    lines = [GatewayExchange.model_validate_json(x) for x in config.log_path.read_text().splitlines()]
    assert [(x.phase, x.outcome) for x in lines] == [("research", "ok")] * 3 + [("research", "budget_exhausted")] + [
        ("finalization", "ok")] * 2
    finalization = lines[-2].request_body
    assert "tools" not in finalization and finalization["max_completion_tokens"] == 4000
    assert [m["role"] for m in finalization["messages"]][-4:] == ["tool", "assistant", "tool", "user"]
    assert sum(1 for m in finalization["messages"] if m["role"] == "tool") == 3  # every search result is evidence
    assert lines[-1].request_body["max_completion_tokens"] == 5000 - lines[-2].usage.output_tokens

    config_json = json.loads((tmp_path / "output" / "harness-logs" / "config.json").read_text())
    assert config_json["context_handling"] == "paper-compaction"
    assert config_json["compaction"]["keep_observations"] == 1
    assert "search_web" in config_json["capability"]["tools"]
    assert not {"write_report", "check_report", "record_evidence"} & set(config_json["capability"]["tools"])
    # the agent sent the older search results compacted (one observation kept whole), and the gateway saw that
    third = lines[3].request_body["messages"]
    older = [json.loads(m["content"]) for m in third if m["role"] == "tool"][:-1]
    assert older and all(len(o["results"]) <= 2 for o in older)
    log = [json.loads(x) for x in (tmp_path / "output" / "harness-logs" / "reference.jsonl").read_text().splitlines()]
    assert log[-1]["type"] == "run_end" and log[-1]["termination"] == "budget_exhausted"


def test_the_agent_runs_no_call_past_the_protocols_research_budget(loop, tmp_path, scripted):
    """Sec. 3.1: research ends at the protocol's tool-call budget; the agent itself stops there, so a harness
    whose gateway allows more (or a response holding several calls) runs no call past it."""
    running, config = _gateway(loop, tmp_path, scripted)  # no gateway budget: only the protocol's
    try:
        done = _agent(tmp_path, running.url, {"research_tool_calls": 2})
    finally:
        loop.run(running.stop())
    assert done.returncode == 0, done.stderr
    ended = _answer_file(tmp_path)
    assert (ended.answer, ended.termination, ended.source) == ("", "budget_exhausted", "none")
    log = [json.loads(x) for x in (tmp_path / "output" / "harness-logs" / "reference.jsonl").read_text().splitlines()]
    assert sum(1 for e in log if e["type"] == "tool_call") == 2
    assert sum(1 for e in log if e["type"] == "model_call") == 2  # no request after the budget was spent
    assert len(config.log_path.read_text().splitlines()) == 2


def test_a_final_message_without_tool_calls_is_the_answer(loop, tmp_path, scripted):
    running, _config = _gateway(loop, tmp_path, scripted)
    try:
        done = _agent(tmp_path, running.url)  # no protocol file: the paper's defaults
    finally:
        loop.run(running.stop())
    assert done.returncode == 0, done.stderr
    answered = _answer_file(tmp_path)
    assert (answered.answer, answered.termination, answered.source) == (
        "The bridge crosses the Vltava.", "complete_answer", "research")
    assert json.loads(done.stdout.splitlines()[-1])["tool_calls"] == 5


# ---- how research ends when the model API does not answer: the loop in process, a fake paid API behind the gateway


@pytest.fixture
def fake_api(loop):
    api = FakeModelApi("openai", "sk-real-openai-3f9c2a7e51d04b88")
    loop.run(api.start())
    yield api
    loop.run(api.stop())


def _research(loop, tmp_path: Path, api: FakeModelApi, **protocol: Any):
    from openai import OpenAI

    config = GatewayConfig(host="127.0.0.1", port=0, agent_token=AGENT_TOKEN, admin_token=ADMIN_TOKEN,
                           upstreams={"openai": {"base_url": api.url, "api_key": api.api_key}},
                           log_path=tmp_path / "gateway.jsonl", retry_backoff_s=0.001,
                           budget=Budget(upstream_retries=0))
    running = loop.run(start_gateway(config))
    try:
        client = OpenAI(base_url=running.url + "/v1", api_key=AGENT_TOKEN, max_retries=0)
        tools = ToolBox(short_answer_capability("full"), str(tmp_path / "video.mp4"), tmp_path / "report",
                        tmp_path / "contract")
        return research(client, "gpt-test", tools, user_message(QUESTION, str(tmp_path / "video.mp4")),
                        NativeLog(tmp_path / "reference.jsonl"), ShortAnswerProtocol(**protocol))
    finally:
        loop.run(running.stop())


def test_an_answer_cut_at_the_token_cap_is_incomplete_output(loop, tmp_path, fake_api):
    fake_api.truncated = True
    run = _research(loop, tmp_path, fake_api)
    assert (run.answer.answer, run.answer.termination, run.answer.source) == ("", "incomplete_output", "none")


def test_a_context_length_error_is_context_overflow(loop, tmp_path, fake_api):
    fake_api.fail_next = [400]
    fake_api.fail_message = "This model's maximum context length is 128000 tokens. However, you requested 131072."
    run = _research(loop, tmp_path, fake_api)
    assert (run.answer.termination, run.answer.source, run.answer.execution_error) == ("context_overflow", "none", None)


def test_another_failure_is_an_execution_error_with_its_text(loop, tmp_path, fake_api):
    fake_api.fail_next = [422]
    fake_api.fail_message = "model gpt-test does not exist"
    run = _research(loop, tmp_path, fake_api)
    assert run.answer.termination == "execution_error" and run.answer.answer == ""
    assert "model gpt-test does not exist" in (run.answer.execution_error or "")


def test_the_research_wall_clock_ends_research_as_a_spent_budget(loop, tmp_path, fake_api):
    fake_api.tool_calls = 1  # the model keeps searching
    ticks = iter(range(0, 10_000, 1000))
    from openai import OpenAI

    config = GatewayConfig(host="127.0.0.1", port=0, agent_token=AGENT_TOKEN, admin_token=ADMIN_TOKEN,
                           upstreams={"openai": {"base_url": fake_api.url, "api_key": fake_api.api_key}},
                           log_path=tmp_path / "gateway.jsonl")
    running = loop.run(start_gateway(config))
    try:
        client = OpenAI(base_url=running.url + "/v1", api_key=AGENT_TOKEN, max_retries=0)
        tools = ToolBox(short_answer_capability("full"), str(tmp_path / "v.mp4"), tmp_path / "r", tmp_path / "c")
        run = research(client, "gpt-test", tools, user_message(QUESTION, "v.mp4"), NativeLog(tmp_path / "log.jsonl"),
                       ShortAnswerProtocol(research_wall_s=3600), clock=lambda: next(ticks))
    finally:
        loop.run(running.stop())
    assert run.answer.termination == "budget_exhausted" and run.model_calls == 3  # at 1000, 2000 and 3000 s of 3600


@pytest.mark.media
def test_sampled_frames_reach_the_model_as_images(loop, tmp_path):
    """App. C.1.2: the video reader's frames are shown to the model (image parts after the tool results)."""
    subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=duration=4:size=160x120:rate=10",
                    "-pix_fmt", "yuv420p", str(tmp_path / "video.mp4")], check=True)
    folder = tmp_path / "scripts"
    folder.mkdir()
    (folder / "frames.json").write_text(json.dumps({
        "task": "frames", "match": "task bridge-river", "model": "scripted-demo",
        "steps": [{"content": "", "tool_calls": [{"id": "v1", "name": "sample_video", "arguments": {"count": 2}}]},
                  {"content": "The bridge crosses the Vltava."}]}), "utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(load_scripts(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    running, config = _gateway(loop, tmp_path, f"http://127.0.0.1:{server.server_address[1]}/v1")
    try:
        done = _agent(tmp_path, running.url)
    finally:
        loop.run(running.stop())
        server.shutdown()
    assert done.returncode == 0, done.stderr
    second = GatewayExchange.model_validate_json(config.log_path.read_text().splitlines()[1]).request_body
    images = [p for m in second["messages"] if isinstance(m.get("content"), list) for p in m["content"]
              if p.get("type") == "image_url"]
    # the gateway log keeps each frame by its hash and size (gateway.jsonl does not copy inline media)
    assert len(images) == 2 and all(re.fullmatch(r"data:image/jpeg;omitted;sha256=[0-9a-f]{64};bytes=[1-9]\d+",
                                                 i["image_url"]["url"]) for i in images)
