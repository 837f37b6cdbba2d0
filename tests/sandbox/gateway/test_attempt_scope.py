"""One gateway serving attempts one after another (a reused helper pair): the controller seals the attempt
that ended and opens the next one, and nothing of the first is counted, logged or accepted in the second."""

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from test_gateway import (  # noqa: F401 - fixtures
    ADMIN_TOKEN,
    AGENT_TOKEN,
    Answer,
    _headers,
    anthropic_api,
    call,
    gateway,
    loop,
    openai_api,
    stream,
)

from sandbox.models import Budget, GatewayExchange, GatewayState, ScopeReport

pytestmark = pytest.mark.network

NEXT_TOKEN = "attempt-dummy-second-9a8b7c6d"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
CHAT = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}


def _control(url: str, action: str, body: Any = None, headers: dict | None = None) -> Answer:
    return call("POST", f"{url}/_gateway/{action}", body, {"Content-Type": "application/json", **(headers or ADMIN)})


def _open(url: str, folder: Path, token: str = NEXT_TOKEN, **budget: Any) -> Answer:
    return _control(url, "open", {
        "generation": folder.name, "agent_token": token, "budget": Budget(**budget).model_dump(mode="json"),
        "log_path": str(folder / "gateway.jsonl"), "summary_path": str(folder / "gateway_state.json"),
    })


def _chat(url: str, token: str) -> Answer:
    return call("POST", url + "/v1/chat/completions", CHAT, _headers(token, anthropic=False))


def _lines(path: Path) -> list[GatewayExchange]:
    return [GatewayExchange.model_validate_json(line) for line in path.read_text().splitlines()]


def test_the_next_attempt_gets_a_new_token_zero_counts_and_its_own_logs(gateway, tmp_path):
    gw = gateway(budget={"max_iterations": 2})
    assert _chat(gw.url, AGENT_TOKEN).status == 200
    sealed = ScopeReport.model_validate_json(_control(gw.url, "seal").text)
    assert (sealed.generation, sealed.sealed, sealed.state.requests) == ("initial", True, 1)
    assert _chat(gw.url, AGENT_TOKEN).status == 401  # a sealed attempt's token is refused

    second = tmp_path / "second"
    opened = _open(gw.url, second, max_iterations=2)
    assert opened.status == 200, opened.text
    report = ScopeReport.model_validate_json(opened.text)
    assert (report.generation, report.sealed, report.state.requests, report.state.budget_exhausted) == (
        "second", False, 0, None)
    assert _chat(gw.url, AGENT_TOKEN).status == 401  # the first attempt's token is refused in the second
    assert _chat(gw.url, NEXT_TOKEN).status == 200
    assert _chat(gw.url, NEXT_TOKEN).status == 200
    assert _chat(gw.url, NEXT_TOKEN).status == 400  # the second attempt's own budget of 2, not the first's

    first_lines, second_lines = _lines(gw.config.log_path), _lines(second / "gateway.jsonl")
    assert [line.status for line in first_lines] == [200]  # closed at the seal: the later refusal is not its
    assert [line.status for line in second_lines] == [401, 200, 200, 400]
    assert [line.seq for line in second_lines] == [1, 2, 3, 4]
    text = (second / "gateway.jsonl").read_text()
    assert NEXT_TOKEN not in text and AGENT_TOKEN not in text  # both attempts' tokens are redacted
    first_state = GatewayState.model_validate_json(gw.config.state_path.read_text())
    assert first_state.requests == 1
    state = GatewayState.model_validate_json(call("GET", gw.url + "/_gateway/state", headers=ADMIN).text)
    assert (state.requests, state.budget_exhausted) == (2, "max_iterations")


def test_control_needs_the_admin_token_a_seal_first_and_empty_files(gateway, tmp_path):
    gw = gateway()
    for action in ("seal", "open"):
        refused = _control(gw.url, action, {}, headers={"Authorization": f"Bearer {AGENT_TOKEN}"})
        assert refused.status == 401 and "admin token" in refused.text
    not_sealed = _open(gw.url, tmp_path / "b")
    assert not_sealed.status == 409 and "not sealed" in not_sealed.json["error"]["message"]
    assert _chat(gw.url, AGENT_TOKEN).status == 200  # the running attempt is untouched
    _control(gw.url, "seal")
    used = tmp_path / "used"
    used.mkdir()
    (used / "gateway.jsonl").write_text('{"seq": 1}\n')
    refused = _open(gw.url, used)
    assert refused.status == 409 and "already hold data" in refused.text
    bad = _control(gw.url, "open", {"generation": "x"})
    assert bad.status == 400 and "agent_token" in bad.text


def test_an_exchange_in_flight_at_the_seal_ends_in_its_own_attempt(gateway, openai_api, tmp_path):
    gw = gateway()
    openai_api.first_event_pause_s = 1.0
    result: list = []
    agent = threading.Thread(target=lambda: result.append(stream(
        gw.url + "/v1/chat/completions", {**CHAT, "stream": True}, _headers(AGENT_TOKEN, anthropic=False))))
    agent.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    sealed = ScopeReport.model_validate_json(_control(gw.url, "seal").text)
    waited = time.monotonic() - t0
    agent.join()
    assert waited >= 0.4, "the seal did not wait for the exchange in flight"
    assert result[0].status == 200 and result[0].ended
    assert (sealed.in_flight, sealed.state.requests, sealed.state.output_tokens) == (0, 1, 20)
    assert [line.outcome for line in _lines(gw.config.log_path)] == ["ok"]
    assert _open(gw.url, tmp_path / "next").status == 200
    state = GatewayState.model_validate_json(call("GET", gw.url + "/_gateway/state", headers=ADMIN).text)
    assert (state.requests, state.output_tokens) == (0, 0)


def test_an_exchange_outliving_the_grace_is_logged_in_neither_attempt(gateway, openai_api, tmp_path):
    gw = gateway(seal_grace_s=0.2)
    openai_api.first_event_pause_s = 1.5
    agent = threading.Thread(target=lambda: stream(
        gw.url + "/v1/chat/completions", {**CHAT, "stream": True}, _headers(AGENT_TOKEN, anthropic=False)))
    agent.start()
    time.sleep(0.3)
    sealed = ScopeReport.model_validate_json(_control(gw.url, "seal").text)
    assert sealed.in_flight == 1
    nxt = tmp_path / "next"
    assert _open(gw.url, nxt).status == 200
    agent.join()
    assert gw.config.log_path.read_text() == ""  # closed before the late exchange ended
    assert not (nxt / "gateway.jsonl").read_text()
    state = GatewayState.model_validate_json(call("GET", gw.url + "/_gateway/state", headers=ADMIN).text)
    assert (state.requests, state.output_tokens) == (0, 0)
