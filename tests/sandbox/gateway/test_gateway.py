"""The model gateway on loopback, between a raw-HTTP agent and fake OpenAI/Anthropic APIs.

Every test starts fake upstreams and a gateway on 127.0.0.1 (random ports), talks to the gateway
as an agent harness would (plain HTTP, dummy token), and checks what a user notices: the answer,
the upstream's view of the request, gateway.jsonl, and the state the controller reads.
"""

import asyncio
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from fake_model_api import FakeModelApi, LoopThread
from testkit import ROOT

from sandbox.gateway import GatewayConfig, start_gateway
from sandbox.models import Budget, GatewayExchange, GatewayState

pytestmark = pytest.mark.network

OPENAI_KEY = "sk-real-openai-3f9c2a7e51d04b88"
ANTHROPIC_KEY = "sk-ant-real-8d21c0b7a9e34f10"
AGENT_TOKEN = "attempt-dummy-5e7a1c93"
ADMIN_TOKEN = "controller-admin-b4d02f6e"
SECRETS = (OPENAI_KEY, ANTHROPIC_KEY, AGENT_TOKEN, ADMIN_TOKEN)


# ---- an agent's view: plain HTTP ----------------------------------------------------------------


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    text: str

    @property
    def json(self) -> Any:
        return json.loads(self.text)


@dataclass
class Streamed:
    status: int
    lines: list[tuple[float, str]]  # (seconds since the request was sent, line) as they arrived
    ended: bool = True  # False: the connection was cut before the end of the body

    @property
    def text(self) -> str:
        return "".join(line for _, line in self.lines)

    @property
    def data(self) -> list[Any]:
        """The `data:` payloads in order, JSON-decoded ("[DONE]" kept as text)."""
        out = []
        for _, line in self.lines:
            if line.startswith("data: "):
                payload = line[6:].strip()
                out.append(payload if payload == "[DONE]" else json.loads(payload))
        return out


def _headers(token: str | None, anthropic: bool) -> dict[str, str]:
    headers = {"Content-Type": "application/json"}
    if anthropic:
        headers["anthropic-version"] = "2023-06-01"
        if token is not None:
            headers["x-api-key"] = token
    elif token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _connection(url: str) -> tuple[http.client.HTTPConnection, str]:
    parts = urllib.parse.urlsplit(url)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=60), parts.path + (
        f"?{parts.query}" if parts.query else ""
    )


def call(method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> Answer:
    connection, path = _connection(url)
    try:
        connection.request(method, path, body=None if body is None else json.dumps(body), headers=headers or {})
        response = connection.getresponse()
        return Answer(response.status, dict(response.headers), response.read().decode())
    finally:
        connection.close()


def stream(url: str, body: Any, headers: dict[str, str], stop_after_lines: int | None = None) -> Streamed:
    """Read an SSE answer line by line as it arrives (until its end, a cut connection, or `stop_after_lines`)."""
    connection, path = _connection(url)
    try:
        start = time.perf_counter()
        connection.request("POST", path, body=json.dumps(body), headers=headers)
        response = connection.getresponse()
        lines: list[tuple[float, str]] = []
        pending = b""
        ended = True
        try:
            # read1, not readline: readline takes a cut chunked body for a clean end.
            while chunk := response.read1(65536):
                arrived = time.perf_counter() - start
                *complete, pending = (pending + chunk).split(b"\n")
                lines += [(arrived, line.decode() + "\n") for line in complete]
                if stop_after_lines is not None and len(lines) >= stop_after_lines:
                    break
        except (http.client.IncompleteRead, ConnectionError):
            ended = False
        return Streamed(response.status, lines, ended)
    finally:
        connection.close()


# ---- fixtures -----------------------------------------------------------------------------------


@pytest.fixture
def loop():
    thread = LoopThread()
    yield thread
    thread.close()


@pytest.fixture
def openai_api(loop):
    api = FakeModelApi("openai", OPENAI_KEY)
    loop.run(api.start())
    yield api
    loop.run(api.stop())


@pytest.fixture
def anthropic_api(loop):
    api = FakeModelApi("anthropic", ANTHROPIC_KEY)
    loop.run(api.start())
    yield api
    loop.run(api.stop())


@dataclass
class Gateway:
    """A running gateway as the agent and the controller see it."""

    url: str
    config: GatewayConfig

    def post(self, path: str, body: Any, token: str | None = AGENT_TOKEN, anthropic: bool = False) -> Answer:
        return call("POST", self.url + path, body, _headers(token, anthropic))

    def stream(self, path: str, body: Any, anthropic: bool = False, stop_after_lines: int | None = None) -> Streamed:
        return stream(self.url + path, body, _headers(AGENT_TOKEN, anthropic), stop_after_lines)

    def chat(self, **body: Any) -> Answer:
        request = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}], **body}
        return self.post("/v1/chat/completions", request)

    def message(self, **body: Any) -> Answer:
        request = {"model": "claude-test", "max_tokens": 256, "messages": [{"role": "user", "content": "hi"}], **body}
        return self.post("/v1/messages", request, anthropic=True)

    def state(self) -> GatewayState:
        answer = call("GET", self.url + "/_gateway/state", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        assert answer.status == 200, answer.text
        return GatewayState.model_validate_json(answer.text)

    def log_text(self) -> str:
        return self.config.log_path.read_text("utf-8")

    def exchanges(self) -> list[GatewayExchange]:
        return [GatewayExchange.model_validate_json(line) for line in self.log_text().splitlines()]


@pytest.fixture
def gateway(loop, tmp_path, openai_api, anthropic_api):
    """`gateway(budget=..., **config)` starts a gateway in front of both fake APIs."""
    running = []

    def start(budget: dict[str, Any] | None = None, **changes: Any) -> Gateway:
        settings: dict[str, Any] = {
            "host": "127.0.0.1",
            "port": 0,
            "agent_token": AGENT_TOKEN,
            "admin_token": ADMIN_TOKEN,
            "upstreams": {
                "openai": {"base_url": openai_api.url, "api_key": OPENAI_KEY},
                "anthropic": {"base_url": anthropic_api.url, "api_key": ANTHROPIC_KEY},
            },
            "budget": Budget(**(budget or {})),
            "log_path": tmp_path / "gateway.jsonl",
            "retry_backoff_s": 0.001,
        }
        config = GatewayConfig(**{**settings, **changes})
        handle = loop.run(start_gateway(config))
        running.append(handle)
        return Gateway(handle.url, config)

    yield start
    for handle in running:
        loop.run(handle.stop())


@pytest.fixture
def sse_upstream(loop):
    """`sse_upstream(chunks, pause_s)`: an OpenAI upstream config whose chat route streams these chunks (then
    [DONE]) with a pause after each: what a self-hosted server or a relay in between may send."""
    from aiohttp import web

    runners = []

    def start(chunks: list, pause_s: float = 0.0) -> dict:
        async def chat(request):
            await request.read()
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            for chunk in chunks:
                await response.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                await asyncio.sleep(pause_s)
            await response.write(b"data: [DONE]\n\n")
            return response

        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
        runner = web.AppRunner(app)
        loop.run(runner.setup())
        loop.run(web.TCPSite(runner, "127.0.0.1", 0).start())
        runners.append(runner)
        return {"openai": {"base_url": f"http://127.0.0.1:{runner.addresses[0][1]}/v1", "api_key": OPENAI_KEY}}

    yield start
    for runner in runners:
        loop.run(runner.cleanup())


def _logged(gw: "Gateway", within_s: float = 20) -> list[GatewayExchange]:
    """The exchanges once the first line is written (a dropped stream's line comes after the agent has gone)."""
    deadline = time.monotonic() + within_s
    while not gw.config.log_path.exists() or not gw.log_text():
        assert time.monotonic() < deadline, "no log line for the exchange"
        time.sleep(0.05)
    return gw.exchanges()


def free_port() -> int:
    """A port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---- pass-through and keys ----------------------------------------------------------------------


def test_chat_passes_through_with_the_real_key_and_is_logged(gateway, openai_api):
    gw = gateway()
    answer = gw.chat(temperature=0)

    assert answer.status == 200
    assert answer.json["choices"][0]["message"]["content"] == "Hello, world!"
    seen = openai_api.received[-1]
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["Authorization"] == f"Bearer {OPENAI_KEY}"
    assert seen.body == {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}], "temperature": 0,
                         "max_completion_tokens": 64000}  # the agent named no limit: the budget's (64K by default)

    [line] = gw.exchanges()
    assert (line.route, line.model, line.status, line.outcome) == ("chat_completions", "gpt-test", 200, "ok")
    assert line.retries == 0 and line.counted
    assert (line.usage.input_tokens, line.usage.output_tokens) == (100, 20)
    assert line.request_body["messages"][0]["content"] == "hi"
    assert line.response_body["choices"][0]["message"]["content"] == "Hello, world!"
    assert line.request_headers["Authorization"] == "[REDACTED]"
    assert line.latency_s > 0 and line.finished_at >= line.started_at
    state = gw.state()
    assert (state.requests, state.input_tokens, state.output_tokens, state.budget_exhausted) == (1, 100, 20, None)


def test_anthropic_message_uses_x_api_key_and_gets_max_tokens_when_missing(gateway, anthropic_api):
    gw = gateway(budget={"max_output_tokens": 4096})
    request = {"model": "claude-test", "messages": [{"role": "user", "content": "hi"}]}
    answer = gw.post("/v1/messages?beta=true", request, anthropic=True)

    assert answer.status == 200 and answer.json["content"][0]["text"] == "Hello, world!"
    seen = anthropic_api.received[-1]
    assert seen.path == "/v1/messages?beta=true"
    assert seen.headers["x-api-key"] == ANTHROPIC_KEY
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert "Authorization" not in seen.headers
    assert seen.body["max_tokens"] == 4096
    [line] = gw.exchanges()
    assert line.usage.input_tokens == 100 and line.usage.output_tokens == 20
    assert any("max_tokens set to 4096" in note for note in line.request_edits)


def test_wrong_or_missing_token_gets_401_and_nothing_reaches_upstream(gateway, openai_api, anthropic_api):
    gw = gateway()
    wrong = gw.post("/v1/chat/completions", {"model": "m", "messages": []}, token="not-the-token")
    missing = gw.post("/v1/chat/completions", {"model": "m", "messages": []}, token=None)
    anthropic = gw.post("/v1/messages", {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}, token="nope", anthropic=True)

    assert wrong.status == missing.status == anthropic.status == 401
    assert wrong.json["error"]["type"] == "authentication_error"
    assert anthropic.json["type"] == "error" and anthropic.json["error"]["type"] == "authentication_error"
    assert openai_api.received == [] and anthropic_api.received == []
    assert [line.outcome for line in gw.exchanges()] == ["unauthorized"] * 3
    assert gw.state().requests == 0
    # The agent's token does not open the controller's endpoint.
    assert call("GET", gw.url + "/_gateway/state", headers={"Authorization": f"Bearer {AGENT_TOKEN}"}).status == 401


def test_models_list_passes_through_without_counting(gateway, openai_api):
    gw = gateway(budget={"max_iterations": 1})
    answer = call("GET", gw.url + "/v1/models", headers=_headers(AGENT_TOKEN, anthropic=False))
    assert answer.status == 200 and answer.json["data"][0]["id"] == "fake-model"
    assert gw.state().requests == 0
    assert gw.chat().status == 200  # the one iteration is still available


def test_token_count_passes_through_and_unknown_routes_are_404(gateway, anthropic_api):
    gw = gateway()
    counted = gw.post("/v1/messages/count_tokens", {"model": "c", "messages": []}, anthropic=True)
    assert counted.status == 200 and counted.json == {"input_tokens": 100}
    assert anthropic_api.received[-1].headers["x-api-key"] == ANTHROPIC_KEY
    unknown = gw.post("/v1/embeddings", {"model": "m", "input": "x"})
    assert unknown.status == 404 and "no route POST /v1/embeddings" in unknown.json["error"]["message"]
    assert gw.state().requests == 0
    assert [(line.route, line.outcome) for line in gw.exchanges()] == [("count_tokens", "ok"), ("unknown", "not_found")]


def test_concurrent_requests_cannot_overrun_the_iteration_budget(gateway, openai_api):
    gw = gateway(budget={"max_iterations": 5})
    openai_api.pieces = ["slow"]
    with ThreadPoolExecutor(max_workers=12) as pool:
        statuses = sorted(pool.map(lambda _: gw.chat().status, range(12)))
    assert statuses == [200] * 5 + [400] * 7
    assert len(openai_api.received) == 5
    state = gw.state()
    assert (state.requests, state.refused_requests, state.budget_exhausted) == (5, 7, "max_iterations")


def test_oversized_request_gets_413_in_the_api_shape(gateway, openai_api):
    gw = gateway(max_request_mb=0.01)
    answer = gw.chat(padding="x" * 20_000)
    assert answer.status == 413 and answer.json["error"]["type"] == "request_too_large"
    assert openai_api.received == [] and gw.state().requests == 0


# ---- retries ------------------------------------------------------------------------------------


def test_two_503s_are_retried_and_the_agent_sees_success(gateway, openai_api):
    gw = gateway()
    openai_api.fail_next = [503, 503]
    answer = gw.chat()

    assert answer.status == 200 and answer.json["choices"][0]["message"]["content"] == "Hello, world!"
    assert len(openai_api.received) == 3
    [line] = gw.exchanges()
    assert line.retries == 2 and line.retry_reasons == ["upstream status 503", "upstream status 503"]
    assert line.outcome == "ok"
    state = gw.state()
    assert state.requests == 1 and state.upstream_retries == 2


def test_retry_after_is_honoured(gateway, openai_api):
    gw = gateway(retry_backoff_s=0.0)
    openai_api.fail_next = [429]
    openai_api.fail_headers = {"retry-after-ms": "400"}
    started = time.perf_counter()
    answer = gw.chat()
    assert answer.status == 200
    assert time.perf_counter() - started >= 0.4
    assert gw.exchanges()[0].retries == 1


def test_persistent_upstream_failure_is_relayed_after_the_retries(gateway, openai_api):
    gw = gateway(budget={"upstream_retries": 3})
    openai_api.fail_next = [500] * 10
    answer = gw.chat()
    assert answer.status == 500 and "fake upstream failure 500" in answer.json["error"]["message"]
    assert len(openai_api.received) == 4
    [line] = gw.exchanges()
    assert (line.retries, line.outcome, line.upstream_status) == (3, "upstream_error", 500)
    assert gw.state().failed_requests == 1


def test_upstream_down_gives_502_after_retries(gateway, openai_api):
    down = f"http://127.0.0.1:{free_port()}/v1"
    gw = gateway(upstreams={"openai": {"base_url": down, "api_key": OPENAI_KEY}})
    answer = gw.chat()

    assert answer.status == 502
    error = answer.json["error"]
    assert error["type"] == "upstream_unreachable"
    assert "could not reach the model API" in error["message"] and "after 6 tries" in error["message"]
    [line] = gw.exchanges()
    assert (line.outcome, line.status, line.retries, line.upstream_status) == ("upstream_unreachable", 502, 5, None)
    assert len(line.retry_reasons) == 6 and all("Connect" in reason for reason in line.retry_reasons)
    state = gw.state()
    assert state.requests == 1 and state.failed_requests == 1 and state.upstream_retries == 5


def test_an_upstream_reached_through_a_relay_is_named_by_the_users_url(gateway, openai_api):
    """A model server on the host's loopback is reached through a relay: logs and messages show the URL
    the user gave, and the relay's address only as `upstream_via`."""
    relay = openai_api.url
    gw = gateway(upstreams={"openai": {"base_url": relay, "display_url": "http://127.0.0.1:8000/v1",
                                       "api_key": OPENAI_KEY}})
    assert gw.chat().status == 200
    [line] = gw.exchanges()
    assert line.upstream_url == "http://127.0.0.1:8000/v1/chat/completions"
    assert line.upstream_via == relay.rstrip("/") + "/chat/completions"
    down = f"http://127.0.0.1:{free_port()}/v1"
    gw = gateway(upstreams={"openai": {"base_url": down, "display_url": "http://127.0.0.1:8000/v1",
                                       "api_key": OPENAI_KEY}}, budget={"upstream_retries": 0})
    message = gw.chat().json["error"]["message"]
    assert "at http://127.0.0.1:8000/v1/chat/completions" in message and down not in message


# ---- streaming and usage ------------------------------------------------------------------------


def test_chat_stream_is_counted_exactly_and_relayed_in_order(gateway, openai_api):
    gw = gateway()
    openai_api.input_tokens, openai_api.output_tokens = 1234, 567
    openai_api.pieces = [f"piece{i} " for i in range(30)]
    body = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    got = gw.stream("/v1/chat/completions", body)

    assert got.status == 200
    chunks = [d for d in got.data if d != "[DONE]"]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == "".join(openai_api.pieces)
    assert got.data[-1] == "[DONE]"
    # The agent did not ask for usage, so it does not get the usage-only chunk the gateway asked for.
    assert all(c["choices"] for c in chunks)
    assert openai_api.received[-1].body["stream_options"] == {"include_usage": True}

    [line] = gw.exchanges()
    assert line.stream and line.outcome == "ok"
    assert (line.usage.input_tokens, line.usage.output_tokens) == (1234, 567)
    assert '"prompt_tokens": 1234' in line.response_body  # the raw SSE text, usage chunk included
    state = gw.state()
    assert (state.input_tokens, state.output_tokens) == (1234, 567)


def test_chat_stream_keeps_the_usage_chunk_the_agent_asked_for(gateway, openai_api):
    gw = gateway()
    body = {"model": "gpt-test", "messages": [], "stream": True, "stream_options": {"include_usage": True}}
    got = gw.stream("/v1/chat/completions", body)
    usage_chunks = [d for d in got.data if d != "[DONE]" and d["choices"] == []]
    assert [c["usage"]["completion_tokens"] for c in usage_chunks] == [20]
    assert not any("stream_options" in note for note in gw.exchanges()[0].request_edits)  # the agent's own ask


def test_stream_reaches_the_agent_before_the_upstream_finishes(gateway, openai_api):
    gw = gateway()
    openai_api.first_event_pause_s = 1.0
    got = gw.stream("/v1/chat/completions", {"model": "gpt-test", "messages": [], "stream": True})
    data_times = [t for t, line in got.lines if line.startswith("data: ")]
    assert data_times[0] < 0.5, "the first event was held back"
    assert data_times[-1] >= 1.0
    line = gw.exchanges()[0]
    assert line.first_byte_s < 0.5 and line.latency_s >= 1.0


def test_anthropic_stream_counts_message_start_and_the_last_cumulative_delta(gateway, anthropic_api):
    gw = gateway()
    anthropic_api.input_tokens, anthropic_api.output_tokens = 321, 90
    anthropic_api.message_deltas = 3  # cumulative 30, 60, 90: the total is 90, not 180
    body = {"model": "claude-test", "max_tokens": 1000, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    got = gw.stream("/v1/messages", body, anthropic=True)

    assert got.status == 200
    kinds = [d["type"] for d in got.data]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    text = "".join(d["delta"]["text"] for d in got.data if d["type"] == "content_block_delta")
    assert text == "Hello, world!"
    [line] = gw.exchanges()
    assert (line.usage.input_tokens, line.usage.output_tokens) == (321, 90)
    assert "event: message_delta" in line.response_body
    assert (gw.state().input_tokens, gw.state().output_tokens) == (321, 90)


def test_responses_usage_from_response_completed(gateway, openai_api):
    gw = gateway()
    openai_api.input_tokens, openai_api.output_tokens = 777, 55
    got = gw.stream("/v1/responses", {"model": "gpt-test", "input": "hi", "stream": True})
    assert [d["type"] for d in got.data][-1] == "response.completed"
    plain = gw.post("/v1/responses", {"model": "gpt-test", "input": "hi"})
    assert plain.status == 200 and plain.json["usage"]["input_tokens"] == 777

    streamed_line, plain_line = gw.exchanges()
    assert (streamed_line.usage.input_tokens, streamed_line.usage.output_tokens) == (777, 55)
    assert (plain_line.usage.input_tokens, plain_line.usage.output_tokens) == (777, 55)
    assert (gw.state().input_tokens, gw.state().output_tokens) == (2 * 777, 2 * 55)


def test_a_broken_upstream_stream_is_not_passed_off_as_complete(gateway, anthropic_api):
    gw = gateway()
    anthropic_api.break_after_events = 4  # message_start, block start, ping, one delta; then the line drops
    body = {"model": "claude-test", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    got = gw.stream("/v1/messages", body, anthropic=True)

    kinds = [d["type"] for d in got.data]
    assert kinds[:4] == ["message_start", "content_block_start", "ping", "content_block_delta"]
    assert kinds[-1] == "error" and "message_stop" not in kinds
    assert "upstream stream broke" in got.data[-1]["error"]["message"]
    assert not got.ended  # the gateway cut the connection instead of ending the body cleanly
    [line] = gw.exchanges()
    assert line.outcome == "stream_broken" and "upstream stream broke" in line.error
    assert line.usage.input_tokens == 100  # what message_start announced is still counted
    assert gw.state().failed_requests == 1
    assert gw.chat().status == 200  # the gateway carries on


def test_agent_leaving_mid_stream_is_logged(gateway, openai_api):
    gw = gateway()
    openai_api.pieces = [f"p{i}" for i in range(50)]
    openai_api.event_pause_s = 0.05
    got = gw.stream("/v1/chat/completions", {"model": "m", "messages": [], "stream": True}, stop_after_lines=2)
    assert got.status == 200 and len(got.lines) >= 2
    [line] = _logged(gw)
    assert line.outcome == "client_disconnected"
    # the provider bills what it generates, read or not: the gateway read the rest for the usage and charged it
    assert (line.charged, line.usage.input_tokens, line.usage.output_tokens) == ("usage", 100, 20)
    assert openai_api.abandoned_streams == 0
    assert gw.chat().status == 200


_STREAMS = {
    "chat": ("/v1/chat/completions", {"model": "m", "messages": [], "stream": True}, False),
    "responses": ("/v1/responses", {"model": "m", "input": "hi", "stream": True}, False),
    "messages": ("/v1/messages", {"model": "c", "max_tokens": 256, "stream": True,
                                  "messages": [{"role": "user", "content": "hi"}]}, True),
}


@pytest.mark.parametrize("api", list(_STREAMS))
def test_an_agent_that_drops_a_stream_after_the_content_is_charged_the_full_usage(gateway, openai_api, anthropic_api,
                                                                                   api):
    """Dropping the connection before the usage arrives (Chat's usage chunk, Responses' response.completed,
    Messages' last message_delta) saves the agent nothing: the gateway reads the stream to its end."""
    path, body, anthropic = _STREAMS[api]
    upstream = anthropic_api if anthropic else openai_api
    upstream.pieces = ["one ", "two ", "three"]
    upstream.event_pause_s = 0.1
    gw = gateway()
    got = gw.stream(path, body, anthropic=anthropic, stop_after_lines=3)
    final = ('"completion_tokens": 20', "response.completed", '"output_tokens": 20')  # each API's final usage
    assert got.status == 200 and not any(f in line for _, line in got.lines for f in final)  # gone before it
    [line] = _logged(gw)
    assert (line.outcome, line.charged) == ("client_disconnected", "usage")
    assert (line.usage.input_tokens, line.usage.output_tokens) == (100, 20)
    state = gw.state()
    assert (state.total_tokens, state.charged_caps, state.requests) == (120, 0, 1)


def test_a_dropped_stream_whose_rest_outlasts_half_the_seal_grace_is_charged_its_cap(gateway, openai_api):
    """The rest of a long answer is read for at most half the seal's grace, so the line is always written before
    an ended attempt's logs close; what was not read to its end is charged what it could cost."""
    openai_api.pieces = [f"p{i}" for i in range(40)]
    openai_api.event_pause_s = 0.1  # about 4 s of stream; the gateway reads on for 0.5 s after the agent left
    gw = gateway(seal_grace_s=1.0, budget={"max_output_tokens": 300})
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    started = time.monotonic()
    assert gw.stream("/v1/chat/completions", body, stop_after_lines=2).status == 200
    [line] = _logged(gw)
    assert time.monotonic() - started < 3.5  # written well before the upstream's stream would have ended
    assert line.charged == "cap" and line.usage.output_tokens == 300 and "not over within 0.5 s" in line.error
    assert gw.state().charged_caps == 1


def test_a_dropped_stream_whose_upstream_reports_no_usage_is_charged_what_it_could_cost(gateway, sse_upstream):
    """An upstream that never reports usage (a self-hosted server without include_usage): the request is charged
    its size in bytes as input and its output cap, and the state says how many were charged so."""
    chunks = [{"choices": [{"index": 0, "delta": {"content": piece}}]} for piece in "abcdef"]
    gw = gateway(upstreams=sse_upstream(chunks, pause_s=0.1), budget={"max_output_tokens": 500})
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    assert gw.stream("/v1/chat/completions", body, stop_after_lines=2).status == 200
    [line] = _logged(gw)
    assert line.charged == "cap" and line.usage.output_tokens == 500
    assert line.usage.input_tokens == len(json.dumps(body).encode())
    assert gw.state().charged_caps == 1


# ---- budgets ------------------------------------------------------------------------------------


def test_output_tokens_are_clamped_in_the_upstream_request(gateway, openai_api, anthropic_api):
    gw = gateway(budget={"max_output_tokens": 1000})
    gw.chat(max_tokens=100_000)
    gw.chat(max_completion_tokens=50)
    gw.post("/v1/responses", {"model": "gpt-test", "input": "hi", "max_output_tokens": 99_999})
    gw.message(max_tokens=64_000, thinking={"type": "enabled", "budget_tokens": 5000})

    chat_big, chat_small, responses = (r.body for r in openai_api.received)
    assert chat_big["max_tokens"] == 1000
    assert chat_small["max_completion_tokens"] == 50
    assert responses["max_output_tokens"] == 1000
    anthropic = anthropic_api.received[-1].body
    assert anthropic["max_tokens"] == 1000 and anthropic["thinking"]["budget_tokens"] == 999
    notes = [line.request_edits for line in gw.exchanges()]
    assert notes[0] == ["max_tokens clamped from 100000 to 1000 (budget max_output_tokens)"]
    assert notes[1] == []


def test_every_request_reaches_the_upstream_with_an_output_cap_whatever_its_spelling(gateway, openai_api,
                                                                                    anthropic_api):
    """An agent that leaves the limit out, or spells it as a string or a float (pydantic-based servers such as
    vLLM read "100000"), still reaches the upstream with a whole-number cap within the budget."""
    gw = gateway(budget={"max_output_tokens": 1000})
    for limit in (None, "100000", 5000.0, "50", 64.9):
        assert gw.chat(**({} if limit is None else {"max_tokens": limit})).status == 200
    assert gw.post("/v1/responses", {"model": "gpt-test", "input": "hi"}).status == 200
    assert gw.post("/v1/responses", {"model": "gpt-test", "input": "hi", "max_output_tokens": "99999"}).status == 200
    request = {"model": "claude-test", "max_tokens": "64000", "messages": [{"role": "user", "content": "hi"}]}
    assert gw.post("/v1/messages", request, anthropic=True).status == 200

    chats = [r.body for r in openai_api.received[:5]]
    assert chats[0]["max_completion_tokens"] == 1000 and "max_tokens" not in chats[0]  # absent: the budget's
    assert [c.get("max_tokens") for c in chats[1:]] == [1000, 1000, 50, 64]
    assert all(type(c.get("max_tokens", c.get("max_completion_tokens"))) is int for c in chats)
    assert [r.body["max_output_tokens"] for r in openai_api.received[5:]] == [1000, 1000]
    assert anthropic_api.received[-1].body["max_tokens"] == 1000
    notes = [line.request_edits for line in gw.exchanges()]
    assert notes[1] == ['max_tokens clamped from "100000" to 1000 (budget max_output_tokens)']
    assert notes[3] == ['max_tokens "50" sent as the whole number 50']


@pytest.mark.parametrize("field, value", [("n", 2), ("n", "4"), ("best_of", 3), ("max_tokens", "lots"),
                                          ("max_tokens", -5), ("max_tokens", 0), ("max_completion_tokens", True),
                                          ("max_tokens", float("inf"))])
def test_several_answers_or_an_unreadable_limit_are_refused_logged_and_cost_no_iteration(gateway, openai_api,
                                                                                        field, value):
    gw = gateway(budget={"max_iterations": 2})
    body = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}], field: value}
    raw = json.dumps(body).replace("Infinity", "1e999")  # JSON has no infinity; a huge number reads as one
    connection, path = _connection(gw.url + "/v1/chat/completions")
    connection.request("POST", path, body=raw, headers=_headers(AGENT_TOKEN, anthropic=False))
    refused = connection.getresponse()
    text = refused.read().decode()
    connection.close()
    assert refused.status == 400, text
    assert json.loads(text)["error"]["type"] == "invalid_request_error" and field in json.loads(text)["error"]["message"]
    assert openai_api.received == []  # nothing went upstream
    assert gw.chat(n=1).status == 200 and gw.chat().status == 200  # both iterations are still there
    first = gw.exchanges()[0]
    assert (first.status, first.outcome, first.counted) == (400, "bad_request", False) and field in first.error
    assert gw.state().requests == 2


def test_a_request_the_translator_cannot_read_is_refused_and_logged_without_an_iteration(gateway, anthropic_api):
    """Chat Completions on an Anthropic-only upstream goes through the translator: a malformed tool call there
    is a logged 400 (it was a 500, an iteration spent and no log line)."""
    gw = gateway(upstreams={"anthropic": {"base_url": anthropic_api.url, "api_key": ANTHROPIC_KEY}},
                 budget={"max_iterations": 1})
    bad = gw.chat(messages=[{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [5]}])
    assert bad.status == 400 and "could not translate" in bad.json["error"]["message"], bad.text
    [line] = gw.exchanges()
    assert (line.status, line.outcome, line.counted) == (400, "bad_request", False)
    assert anthropic_api.received == []
    assert gw.chat().status == 200  # the one iteration is still there
    assert gw.state().requests == 1


def test_an_upstream_stream_with_malformed_chunks_ends_in_one_logged_line(gateway, sse_upstream):
    """An upstream (or a relay in between) that sends chunks whose fields have the wrong types: the tallies read
    what they can, the agent gets the stream, and the exchange is logged and counted."""
    chunks = [{"choices": 5}, {"choices": [{"delta": {"tool_calls": 7}}]}, {"choices": ["x"]},
              {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 3}}]
    gw = gateway(upstreams=sse_upstream(chunks))
    got = gw.stream("/v1/chat/completions", {"model": "m", "messages": [], "stream": True})
    assert got.status == 200 and got.ended and got.data[-1] == "[DONE]"
    [line] = gw.exchanges()
    assert (line.status, line.outcome, line.tool_calls) == (200, "ok", 0)
    assert (line.usage.input_tokens, line.usage.output_tokens) == (9, 3)
    assert gw.state().total_tokens == 12


@pytest.mark.parametrize("stream", [False, True])
def test_a_fault_of_the_gateway_itself_still_ends_the_exchange_in_one_logged_line(gateway, openai_api, monkeypatch,
                                                                                  stream):
    """Whatever no branch expected (here a tally that raises, standing in for a bug): the agent gets a 500 in its
    API's shape or a cut stream, never a bare error page; the line says why; the admitted request counts as failed."""
    from sandbox.gateway import _app

    def broken(*_args, **_kwargs):
        raise TypeError("a shape no one expected")

    monkeypatch.setattr(_app, "tally_body", broken)
    monkeypatch.setattr(_app.StreamTally, "feed", broken)
    gw = gateway()
    if stream:
        got = gw.stream("/v1/chat/completions", {"model": "m", "messages": [], "stream": True})
        assert got.status == 200 and not got.ended  # cut: the agent cannot take it for a whole answer
    else:
        got = gw.chat()
        assert got.status == 500 and "a shape no one expected" in got.json["error"]["message"]
    [line] = gw.exchanges()
    assert line.outcome == "gateway_error" and "TypeError: a shape no one expected" in line.error
    state = gw.state()
    assert (state.requests, state.failed_requests) == (1, 1)


def test_concurrent_requests_cannot_run_past_a_total_token_budget(gateway, openai_api):
    """Eight requests at once against a total-token budget that fits three (120 tokens each): admission reserves
    what each may cost, so the tokens counted pass the limit by at most one request's cost, not by five."""
    gw = gateway(budget={"max_total_tokens": 360, "max_output_tokens": 20})
    openai_api.pieces = ["a", "b", "c", "d"]
    openai_api.event_pause_s = 0.1  # each answer takes a while: all eight are in flight together
    body = {"model": "gpt-test", "stream": True, "messages": [{"role": "user", "content": "hello " * 40}]}
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda _: gw.stream("/v1/chat/completions", body), range(8)))
    statuses = sorted(a.status for a in answers)
    state = gw.state()
    assert state.total_tokens <= 360 + 120, (state.total_tokens, statuses)
    assert statuses == [200] * 3 + [400] * 5 and len(openai_api.received) == 3
    assert (state.requests, state.budget_exhausted) == (3, "max_total_tokens")


def test_iteration_budget_refuses_the_third_request(gateway, openai_api):
    gw = gateway(budget={"max_iterations": 2})
    assert gw.chat().status == 200
    assert gw.chat().status == 200
    third = gw.chat()

    assert third.status == 400
    assert third.headers.get("x-should-retry") == "false"
    error = third.json["error"]
    assert error["type"] == error["code"] == "budget_exhausted"
    assert "max_iterations" in error["message"] and "do not retry" in error["message"]
    assert len(openai_api.received) == 2
    # Every further request, on any API, gets the same answer, in that API's error shape.
    again = gw.message()
    assert again.status == 400 and again.json["type"] == "error"
    assert again.json["error"]["type"] == "budget_exhausted"

    state = gw.state()
    assert (state.requests, state.refused_requests, state.budget_exhausted) == (2, 2, "max_iterations")
    lines = gw.exchanges()
    assert [line.outcome for line in lines] == ["ok", "ok", "budget_exhausted", "budget_exhausted"]
    assert lines[2].budget_exhausted == "max_iterations" and not lines[2].counted


def test_total_token_budget(gateway, openai_api):
    gw = gateway(budget={"max_total_tokens": 250})
    assert gw.chat().status == 200  # 120 tokens
    assert gw.state().budget_exhausted is None
    assert gw.chat().status == 200  # 240: still under
    assert gw.chat().status == 200  # 360: this answer crosses the limit; it is delivered
    refused = gw.chat()
    assert refused.status == 400 and "max_total_tokens" in refused.json["error"]["message"]
    state = gw.state()
    assert (state.total_tokens, state.budget_exhausted, state.requests) == (360, "max_total_tokens", 3)


def test_tool_call_budget_counts_tool_use_blocks_and_ends_research_at_the_limit(gateway, openai_api, anthropic_api):
    """OpenDS-World's research ends at 100 tool calls (paper 002, Sec. 3.1): the answer that reaches the limit is
    delivered (the agent may run its calls), and the next request is refused; the model never asks for one more."""
    gw = gateway(budget={"max_tool_calls": 3})
    openai_api.tool_calls = 2
    anthropic_api.tool_calls = 1
    assert gw.chat().status == 200  # 2 tool calls
    assert gw.state().budget_exhausted is None
    got = gw.stream("/v1/messages", {"model": "c", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], "stream": True}, anthropic=True)
    assert got.status == 200  # 3: the limit reached; this answer is delivered whole
    assert gw.state().budget_exhausted == "max_tool_calls"
    refused = gw.message()
    assert refused.status == 400 and refused.json["error"]["type"] == "budget_exhausted"
    assert "max_tool_calls" in refused.json["error"]["message"]
    assert [line.tool_calls for line in gw.exchanges()] == [2, 1, 0]
    state = gw.state()
    assert (state.tool_calls, state.budget_exhausted, state.requests) == (3, "max_tool_calls", 2)


def test_answers_without_tool_calls_never_spend_the_tool_call_budget(gateway, openai_api):
    gw = gateway(budget={"max_tool_calls": 1})
    assert gw.chat().status == 200 and gw.chat().status == 200  # no tool calls: the budget stays
    openai_api.tool_calls = 1
    assert gw.chat().status == 200
    assert gw.chat().status == 400
    assert gw.state().budget_exhausted == "max_tool_calls"


def test_streamed_chat_and_responses_tool_calls_are_counted(gateway, openai_api):
    gw = gateway()
    openai_api.tool_calls = 3
    gw.stream("/v1/chat/completions", {"model": "m", "messages": [], "stream": True})
    gw.stream("/v1/responses", {"model": "m", "input": "hi", "stream": True})
    gw.post("/v1/responses", {"model": "m", "input": "hi"})
    assert [line.tool_calls for line in gw.exchanges()] == [3, 3, 3]
    assert gw.state().tool_calls == 9


def test_provider_side_web_searches_are_counted(gateway, openai_api, anthropic_api):
    """Server-side search runs at the provider and never passes the egress proxy; the gateway counts
    what the upstream reports: Anthropic's usage.server_tool_use, Responses' web_search_call items."""
    gw = gateway()
    anthropic_api.web_searches, openai_api.web_searches = 2, 1
    gw.stream("/v1/messages", {"model": "c", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], "stream": True}, anthropic=True)
    gw.stream("/v1/responses", {"model": "m", "input": "hi", "stream": True})
    gw.post("/v1/responses", {"model": "m", "input": "hi"})
    assert [line.usage.server_search_requests for line in gw.exchanges()] == [2, 1, 1]
    assert gw.state().server_search_requests == 4


# ---- secrets ------------------------------------------------------------------------------------


def test_real_key_never_reaches_the_agent_or_the_log(gateway, openai_api, anthropic_api, tmp_path):
    gw = gateway()
    openai_api.echo_key = anthropic_api.echo_key = True  # an upstream that quotes the key back
    answers = [gw.chat().text, gw.message().text]
    answers.append(gw.stream("/v1/chat/completions", {"model": "m", "messages": [], "stream": True}).text)
    streamed_message = {"model": "c", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    answers.append(gw.stream("/v1/messages", streamed_message, anthropic=True).text)
    openai_api.fail_next = [503] * 6
    answers.append(gw.chat().text)
    answers.append(call("GET", gw.url + "/_gateway/state", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}).text)

    assert all("[REDACTED]" in answer for answer in answers[:5])
    for answer in answers:
        assert OPENAI_KEY not in answer and ANTHROPIC_KEY not in answer
    log = gw.log_text()
    assert len(log.splitlines()) == 5 and "[REDACTED]" in log
    for secret in SECRETS:
        assert secret not in log
    for path in tmp_path.iterdir():
        for secret in SECRETS:
            assert secret not in path.read_text("utf-8"), path


# ---- the process as the controller runs it ------------------------------------------------------


def test_cli_serves_and_writes_the_summary_on_sigterm(loop, openai_api, tmp_path):
    config = {
        "host": "127.0.0.1",
        "port": 0,
        "agent_token": AGENT_TOKEN,
        "admin_token": ADMIN_TOKEN,
        "upstreams": {"openai": {"base_url": openai_api.url, "api_key_env": "OMNIDR_TEST_OPENAI_KEY"}},
        "budget": {"max_iterations": 7},
        "log_path": str(tmp_path / "logs" / "gateway.jsonl"),
        "summary_path": str(tmp_path / "logs" / "summary.json"),
    }
    config_path = tmp_path / "gateway.json"
    config_path.write_text(json.dumps(config), "utf-8")
    env = {**os.environ, "OMNIDR_TEST_OPENAI_KEY": OPENAI_KEY}
    process = subprocess.Popen(
        [sys.executable, "-m", "sandbox.gateway", "--config", str(config_path)],
        cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        banner = process.stderr.readline()
        assert "listening on 127.0.0.1:" in banner, banner
        port = int(banner.split("listening on 127.0.0.1:")[1].split()[0])
        headers = _headers(AGENT_TOKEN, anthropic=False)
        answer = call("POST", f"http://127.0.0.1:{port}/v1/chat/completions", {"model": "m", "messages": []}, headers)
        assert answer.status == 200
        assert openai_api.received[-1].headers["Authorization"] == f"Bearer {OPENAI_KEY}"
        # The line is on disk while the gateway still runs.
        assert len((tmp_path / "logs" / "gateway.jsonl").read_text("utf-8").splitlines()) == 1
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.stderr.close()
    summary = GatewayState.model_validate_json((tmp_path / "logs" / "summary.json").read_text("utf-8"))
    assert (summary.requests, summary.input_tokens, summary.output_tokens) == (1, 100, 20)
    assert summary.budget.max_iterations == 7 and summary.budget_exhausted is None


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda c: c.pop("agent_token"), "agent_token: Field required"),
        (lambda c: c["upstreams"]["openai"].update(api_key_env="OMNIDR_TEST_UNSET_VARIABLE"), "is not set"),
        (lambda c: c.update(admin_token=c["agent_token"]), "must differ"),
    ],
)
def test_cli_bad_config_is_one_line_and_exit_2(tmp_path, change, expected):
    config = {
        "agent_token": AGENT_TOKEN,
        "admin_token": ADMIN_TOKEN,
        "upstreams": {"openai": {"base_url": "http://127.0.0.1:9/v1"}},
        "log_path": str(tmp_path / "gateway.jsonl"),
    }
    change(config)
    config_path = tmp_path / "gateway.json"
    config_path.write_text(json.dumps(config), "utf-8")
    env = {k: v for k, v in os.environ.items() if k != "OMNIDR_TEST_UNSET_VARIABLE"}
    result = subprocess.run(
        [sys.executable, "-m", "sandbox.gateway", "--config", str(config_path)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert expected in result.stderr


def test_a_cookie_an_upstream_sets_never_goes_back_upstream(gateway, openai_api):
    """A reused gateway serves attempt after attempt: a cookie one attempt's upstream answer set (here with a 429
    the gateway retries) must not ride along on later requests, this attempt's or the next one's. The upstream is
    named (localhost), not an IP address, since a cookie jar keeps no cookie of an IP address."""
    openai_api.fail_next = [429]
    openai_api.fail_headers = {"Set-Cookie": "session=attempt-one; Path=/; Max-Age=3600"}
    gw = gateway(upstreams={"openai": {"base_url": openai_api.url.replace("127.0.0.1", "localhost"),
                                       "api_key": OPENAI_KEY}})
    for _ in range(2):
        assert gw.post("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}]}).status == 200
    assert len(openai_api.received) == 3  # the 429, its retry, the next request
    assert [r.headers.get("Cookie") for r in openai_api.received] == [None, None, None]


def test_only_the_current_attempts_agent_address_is_served(gateway, openai_api):
    """A client at another address than the attempt's agent (a last attempt's agent still alive) is refused with
    403 even with the right token, and nothing goes upstream; the agent's own address is served."""
    gw = gateway(agent_address="198.18.0.14")
    answer = gw.chat()
    assert answer.status == 403 and "current attempt's agent" in answer.text
    assert openai_api.received == [] and gw.state().requests == 0
    assert gw.exchanges()[0].outcome == "unauthorized"
    assert gateway(agent_address="127.0.0.1").chat().status == 200
