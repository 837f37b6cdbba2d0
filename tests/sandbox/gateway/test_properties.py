"""Property tests (hypothesis, a fixed seed): the gateway reads whatever JSON an agent or an upstream sends.

Requests of arbitrary shape, sent as an agent would to a real gateway whose upstream speaks the other API (so
each one goes through a translator), get an answer of 2xx or 4xx, never a 5xx, and leave exactly one line in
gateway.jsonl; a refused one spends no iteration. The tallies and the translators' answer side read arbitrary
upstream JSON without raising."""

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_gateway import (  # noqa: F401 - the gateway tests' fixtures
    AGENT_TOKEN,
    ANTHROPIC_KEY,
    OPENAI_KEY,
    _headers,
    anthropic_api,
    call,
    gateway,
    loop,
    openai_api,
)

from sandbox.gateway._apis import CHAT, MESSAGES, RESPONSES, StreamTally, tally_body
from sandbox.gateway._translate import Translation

pytestmark = pytest.mark.network

# keys the APIs use, so that the examples reach the code behind them, and any other text
KEYS = ["model", "messages", "role", "content", "type", "text", "tool_calls", "tool_call_id", "function", "name",
        "arguments", "tools", "tool_choice", "input", "output", "max_tokens", "max_completion_tokens",
        "max_output_tokens", "stream", "n", "id", "call_id", "tool_use_id", "choices", "delta", "message", "usage",
        "prompt_tokens", "completion_tokens", "input_tokens", "output_tokens", "index", "system", "instructions",
        "image_url", "url", "source", "data", "thinking", "budget_tokens", "response", "item", "content_block",
        "finish_reason", "stop_reason", "status", "annotations", "parameters", "input_schema"]
VALUES = ["user", "assistant", "system", "tool", "developer", "text", "tool_use", "tool_result", "function",
          "function_call", "function_call_output", "message", "input_text", "output_text", "image_url", "image",
          "message_start", "message_delta", "content_block_start", "content_block_delta", "response.completed",
          "response.output_item.done", "stop", "length", "tool_calls", "end_turn"]
SCALARS = (st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
           | st.sampled_from(VALUES) | st.text(max_size=8))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=6), max_leaves=30)
BODIES = st.dictionaries(st.sampled_from(KEYS), JSON, max_size=7)
ROUTES = {"chat": ("/v1/chat/completions", False), "responses": ("/v1/responses", False),
          "messages": ("/v1/messages", True)}
SETTINGS = settings(max_examples=300, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.mark.parametrize("api", list(ROUTES))
def test_any_request_gets_a_2xx_or_a_clean_4xx_and_one_log_line(gateway, openai_api, anthropic_api, api):
    path, anthropic = ROUTES[api]
    # the upstream speaks the other API: every request goes through a translator
    other = ({"openai": {"base_url": openai_api.url, "api_key": OPENAI_KEY}} if anthropic else
             {"anthropic": {"base_url": anthropic_api.url, "api_key": ANTHROPIC_KEY}})
    gw = gateway(upstreams=other, budget={"max_iterations": 10**6})
    seen = {"lines": 0, "statuses": set()}

    @SETTINGS
    @given(body=BODIES)
    @example(body={"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]})  # a valid one
    @example(body={"model": "m", "input": "hi"})
    def one(body):
        answer = call("POST", gw.url + path, body, _headers(AGENT_TOKEN, anthropic))
        assert answer.status < 500, (answer.status, answer.text[:500], json.dumps(body)[:500])
        lines = gw.exchanges()
        assert len(lines) == seen["lines"] + 1, "not exactly one gateway.jsonl line for the request"
        seen["lines"] += 1
        seen["statuses"].add(answer.status)
        line = lines[-1]
        assert line.status == answer.status and (line.outcome != "ok" or 200 <= line.status < 300)
        if line.outcome == "bad_request":
            assert not line.counted  # refused before counting: no iteration spent

    one()
    assert any(s < 300 for s in seen["statuses"]) and any(400 <= s < 500 for s in seen["statuses"])


@SETTINGS
@given(route=st.sampled_from([CHAT, RESPONSES, MESSAGES]), events=st.lists(JSON, max_size=6))
def test_the_tallies_read_any_answer_without_raising(route, events):
    tally = StreamTally(route)
    for event in events:
        tally.feed(event)
    usage, calls = tally.usage, tally.tool_calls
    assert calls >= 0 and (usage is None or usage.input_tokens >= 0)
    for event in events:
        usage, calls = tally_body(route, event)
        assert calls >= 0


PAIRS = [(CHAT, MESSAGES), (RESPONSES, MESSAGES), (MESSAGES, CHAT)]


@SETTINGS
@given(pair=st.sampled_from(PAIRS), answer=JSON, events=st.lists(st.tuples(st.sampled_from(VALUES) | st.none(), JSON),
                                                                   max_size=6))
def test_the_translators_read_any_upstream_answer_without_raising(pair, answer, events):
    """An upstream's answer, whole or streamed, of any shape: the translators give the agent's API something
    (an answer or an error in its shape) and never raise (a raise would cut the agent's answer)."""
    client, upstream = pair
    translation = Translation(client, upstream)
    given_back = translation.response(answer) if isinstance(answer, dict) else translation.error(answer, 502)
    assert isinstance(given_back, dict)
    stream = translation.stream()
    for name, data in events:
        assert isinstance(stream.feed(name, data), list)
    assert isinstance(stream.finish(), list)
