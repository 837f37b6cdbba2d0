"""One upstream limit shared by every gateway of a run: twelve gateways (twelve attempts' doors) in front of one
upstream that answers a burst with 429 and Retry-After. After the first 429 the run backs off together: nothing
reaches the upstream until the Retry-After has passed, it resumes at half the limit and grows back, every request
still completes, and each gateway's log says how long it waited."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from fake_model_api import FakeModelApi
from test_gateway import (  # noqa: F401 - fixtures
    AGENT_TOKEN,
    OPENAI_KEY,
    call,
    loop,
)
from test_gateway import _headers as agent_headers

from omnidr.attempts import SharedLimiter
from sandbox.gateway import GatewayConfig, start_gateway
from sandbox.models import GatewayExchange

pytestmark = pytest.mark.network
CAP = 4


def test_a_429_burst_makes_every_gateway_of_the_run_back_off_together(loop, tmp_path):
    api = FakeModelApi("openai", OPENAI_KEY, answer_delay_s=0.3, fail_next=[429, 429],
                       fail_headers={"Retry-After": "1"})
    loop.run(api.start())
    limiter = SharedLimiter("127.0.0.1", cap=CAP)
    gateways = []
    try:
        for n in range(12):
            config = GatewayConfig(
                host="127.0.0.1", port=0, agent_token=AGENT_TOKEN, admin_token=f"admin-token-{n:04d}",
                upstreams={"openai": {"base_url": api.url, "api_key": OPENAI_KEY}}, log_path=tmp_path / f"g{n}.jsonl",
                retry_backoff_s=0.05, upstream_limit={"url": limiter.url, "token": limiter.token})
            gateways.append(loop.run(start_gateway(config)))
        body = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}
        with ThreadPoolExecutor(max_workers=12) as pool:
            answers = list(pool.map(lambda g: call("POST", g.url + "/v1/chat/completions", body,
                                                   agent_headers(AGENT_TOKEN, False)), gateways))
        assert [a.status for a in answers] == [200] * 12  # every attempt's request completes

        state = limiter.state()[api.url]
        assert state["cuts"] >= 1 and state["in_flight"] == 0 and state["most_in_flight"] <= CAP
        cut = state["first_cut"]  # when the first 429 reached the limiter (the same monotonic clock as the fake's)
        starts = api.starts
        assert max(n for _, n, _ in starts) <= CAP  # the limit held before any 429 too
        after = [(t, n) for t, n, _ in starts if t > cut]
        # the Retry-After pauses the whole run: nothing reaches the upstream within it, however many gateways, but
        # the requests admitted with the first one that failed (they arrive a few milliseconds after the cut)
        early = [round(t - cut, 3) for t, _ in after if t < cut + 0.95]
        assert len(early) <= CAP - 1 and all(d < 0.1 for d in early), early
        assert len(after) - len(early) >= 10  # the ten others, and the two failed ones again, came after the pause
        # the halved limit holds when the run resumes, then grows back by successes (AIMD), never past the cap
        resumed = [n for t, n in after if cut + 0.95 <= t < cut + 1.25]
        assert resumed and max(resumed) <= CAP // 2, resumed
        assert max(n for _, n in after) <= CAP and state["limit"] > CAP // 2

        lines = [GatewayExchange.model_validate_json(line)
                 for n in range(12) for line in (tmp_path / f"g{n}.jsonl").read_text().splitlines()]
        assert len(lines) == 12 and all(line.upstream_wait_s is not None for line in lines)
        assert sum(line.upstream_wait_s > 0.5 for line in lines) >= 6  # the waits are in the log
        assert not any(line.upstream_limit_error for line in lines)
    finally:
        for g in gateways:
            loop.run(g.stop())
        limiter.close()
        loop.run(api.stop())


def test_a_gateway_whose_limiter_is_gone_still_sends_and_says_so(loop, tmp_path):
    api = FakeModelApi("openai", OPENAI_KEY)
    loop.run(api.start())
    config = GatewayConfig(host="127.0.0.1", port=0, agent_token=AGENT_TOKEN, admin_token="admin-token-gone",
                           upstreams={"openai": {"base_url": api.url, "api_key": OPENAI_KEY}},
                           log_path=tmp_path / "g.jsonl", upstream_limit={"url": "http://127.0.0.1:9", "token": "t" * 12})
    gateway = loop.run(start_gateway(config))
    try:
        answer = call("POST", gateway.url + "/v1/chat/completions",
                      {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]},
                      agent_headers(AGENT_TOKEN, False))
        assert answer.status == 200
        [line] = [GatewayExchange.model_validate_json(x) for x in (tmp_path / "g.jsonl").read_text().splitlines()]
        assert line.upstream_limit_error and "sent anyway" in line.upstream_limit_error
        assert "t" * 12 not in (tmp_path / "g.jsonl").read_text()  # the limiter's token is redacted
    finally:
        loop.run(gateway.stop())
        loop.run(api.stop())


def test_aimd_halves_once_per_congestion_event_and_grows_back_by_one_over_the_limit():
    from omnidr.attempts._limiter import Aimd

    a = Aimd(cap=8)
    tickets = [a.admit(now=0.0) for _ in range(8)]
    assert not a.room(now=0.0)
    a.release(tickets[0], 429, 2.0, now=1.0)  # the first 429 cuts 8 -> 4 and pauses until t=3
    a.release(tickets[1], 429, None, now=1.1)  # admitted before the cut: the same event, no second cut
    assert (a.limit, a.cuts, a.paused_until) == (4.0, 1, 3.0)
    for t in tickets[2:]:
        a.release(t, 200, None, now=1.2)  # six successes: 4 -> 4.25 -> ~4.49 -> ... (+1/limit each)
    assert 5.0 < a.limit < 5.5 and a.in_flight == 0
    assert not a.room(now=2.9) and a.room(now=3.0)  # the Retry-After pause, then room
    late = a.admit(now=3.0)
    a.release(late, 503, None, now=3.5)  # admitted after the cut: a new event
    assert a.cuts == 2 and a.limit == pytest.approx(5.0 / 2, rel=0.1)


def test_a_translated_request_asks_the_limit_of_the_upstream_it_goes_to(loop, tmp_path):
    """Claude Code's Messages request to a gateway whose only upstream speaks OpenAI: the limit asked is the
    OpenAI upstream's (the one the request reaches), not the agent's API's."""
    api = FakeModelApi("openai", OPENAI_KEY)
    loop.run(api.start())
    limiter = SharedLimiter("127.0.0.1", cap=2)
    config = GatewayConfig(host="127.0.0.1", port=0, agent_token=AGENT_TOKEN, admin_token="admin-token-translated",
                           upstreams={"openai": {"base_url": api.url, "api_key": OPENAI_KEY}},
                           log_path=tmp_path / "g.jsonl", upstream_limit={"url": limiter.url, "token": limiter.token})
    gateway = loop.run(start_gateway(config))
    try:
        answer = call("POST", gateway.url + "/v1/messages",
                      {"model": "claude-test", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]},
                      agent_headers(AGENT_TOKEN, True))
        assert answer.status == 200, answer.text
        [line] = [GatewayExchange.model_validate_json(x) for x in (tmp_path / "g.jsonl").read_text().splitlines()]
        assert line.translation and line.upstream_wait_s is not None and not line.upstream_limit_error
        assert limiter.state() == {api.url: {"limit": 2.0, "in_flight": 0, "cuts": 0, "most_in_flight": 1, "cap": 2,
                                             "first_cut": None}}
    finally:
        loop.run(gateway.stop())
        limiter.close()
        loop.run(api.stop())
