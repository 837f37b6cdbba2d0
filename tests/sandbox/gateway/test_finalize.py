"""The finalization stage (`POST /_gateway/finalize`, paper 002 App. C.2.3): after research, the gateway asks the
model for a final answer from the evidence research collected, tool-free, in at most two requests within 5,000
output tokens (4,000 for the first), and accepts only a non-empty, complete answer without tool calls."""

import json
import threading
from http.server import ThreadingHTTPServer
from typing import Any

import pytest
from test_gateway import (  # noqa: F401 - fixtures
    ADMIN_TOKEN,
    AGENT_TOKEN,
    Answer,
    anthropic_api,
    call,
    gateway,
    loop,
    openai_api,
)

from sandbox.models import FINAL_ANSWER_PROMPT, FINALIZATION_RETRY_NOTE, FinalizationResult, GatewayState
from sandbox.scripted_model import Script, make_handler

pytestmark = pytest.mark.network

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"}
QUESTION = "Which river does the bridge in the video cross?"
TOOLS = [{"type": "function", "function": {"name": "search_web", "parameters": {"type": "object"}}}]
RESEARCH = {  # a research conversation whose last tool call has its result
    "model": "gpt-test", "tools": TOOLS, "tool_choice": "auto", "stream": False, "max_completion_tokens": 900,
    "messages": [
        {"role": "system", "content": "Research the question."},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "search_web", "arguments": '{"query": "bridge"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"results": [{"url": "https://a.example/river"}]}'},
    ]}


def finalize(url: str, **body: Any) -> Answer:
    return call("POST", url + "/_gateway/finalize", {"question": QUESTION, **body}, ADMIN)


def result(answer: Answer) -> FinalizationResult:
    assert answer.status == 200, answer.text
    return FinalizationResult.model_validate_json(answer.text)


def _model_requests(api) -> list[dict]:
    return [r.body for r in api.received if r.method == "POST"]


def test_an_accepted_first_answer_ends_the_stage_with_one_tool_free_request(gateway, openai_api):
    gw = gateway()
    assert gw.post("/v1/chat/completions", RESEARCH).status == 200
    openai_api.pieces = ["The Vltava."]

    got = result(finalize(gw.url))

    assert (got.accepted, got.answer, got.requests, got.rejected) == (True, "The Vltava.", 1, [])
    assert (got.family, got.api, got.output_tokens) == ("openai", "chat_completions", openai_api.output_tokens)
    sent = _model_requests(openai_api)[-1]
    assert not {"tools", "tool_choice", "stream"} & set(sent)
    assert sent["max_completion_tokens"] == 4000
    assert sent["messages"][:-1] == RESEARCH["messages"]  # the evidence as research left it
    assert sent["messages"][-1] == {"role": "user", "content": FINAL_ANSWER_PROMPT}
    line = gw.exchanges()[-1]
    assert (line.phase, line.counted, line.route, line.outcome) == ("finalization", False, "chat_completions", "ok")
    assert [e.phase for e in gw.exchanges()] == ["research", "finalization"]
    state = gw.state()
    assert (state.requests, state.finalization_requests, state.finalization_accepted) == (1, 1, True)
    assert state.finalization_output_tokens == 20 and state.output_tokens == 40  # the stage's tokens are counted


@pytest.mark.parametrize("first, why", [({"tool_calls": 1}, "called a tool"), ({"pieces": []}, "is empty"),
                                        ({"truncated": True}, "cut at the token cap")])
def test_a_rejected_first_answer_gets_a_second_request_within_the_rest_of_the_budget(gateway, openai_api, first, why):
    gw = gateway()
    gw.post("/v1/chat/completions", RESEARCH)
    openai_api.output_tokens = 4000 if first.get("truncated") else 150
    openai_api.next_answers = [first, {"pieces": ["The Vltava."], "output_tokens": 30}]

    got = result(finalize(gw.url))

    assert (got.accepted, got.answer, got.requests) == (True, "The Vltava.", 2)
    assert len(got.rejected) == 1 and why in got.rejected[0]
    first_sent, second_sent = _model_requests(openai_api)[-2:]
    assert first_sent["max_completion_tokens"] == 4000
    assert second_sent["max_completion_tokens"] == 5000 - openai_api.output_tokens  # what the first left
    assert second_sent["messages"][-1]["content"].startswith(FINAL_ANSWER_PROMPT)
    assert FINALIZATION_RETRY_NOTE.format(reason=got.rejected[0]) in second_sent["messages"][-1]["content"]
    assert got.output_tokens == openai_api.output_tokens + 30
    assert [e.phase for e in gw.exchanges()] == ["research", "finalization", "finalization"]


def test_the_stage_sends_at_most_two_requests_and_reports_no_answer(gateway, openai_api):
    gw = gateway()
    gw.post("/v1/chat/completions", RESEARCH)
    openai_api.tool_calls = 1  # the model insists on calling tools

    got = result(finalize(gw.url))

    assert (got.accepted, got.answer, got.requests) == (False, "", 2)
    assert len(got.rejected) == 2 and all("called a tool" in r for r in got.rejected)
    assert len(_model_requests(openai_api)) == 3
    assert got.answer_file("budget_exhausted").model_dump() == {
        "answer": "", "termination": "budget_exhausted", "source": "none", "execution_error": None}
    state = gw.state()
    # the stage's rejected tool calls are no research tool calls
    assert (state.finalization_requests, state.finalization_accepted, state.tool_calls) == (2, False, 0)
    assert [e.tool_calls for e in gw.exchanges()] == [0, 1, 1]


def test_after_finalize_the_agents_token_is_refused_and_a_second_call_repeats_the_result(gateway, openai_api):
    gw = gateway()
    gw.post("/v1/chat/completions", RESEARCH)
    first = result(finalize(gw.url))
    refused = gw.post("/v1/chat/completions", RESEARCH)
    assert refused.status == 401 and "Research has ended" in refused.json["error"]["message"]
    again = result(finalize(gw.url))
    assert again == first and len(_model_requests(openai_api)) == 2  # nothing asked twice
    assert call("POST", gw.url + "/_gateway/finalize", {"question": QUESTION},
                {"Authorization": f"Bearer {AGENT_TOKEN}"}).status == 401  # the agent cannot finalize


def test_finalize_works_after_the_research_budget_is_spent_and_uses_the_refused_request(gateway, openai_api):
    """The request the budget refused carries the last tool results: it is the evidence the stage uses."""
    gw = gateway(budget={"max_tool_calls": 1})
    openai_api.tool_calls = 1
    ask = {**RESEARCH, "messages": RESEARCH["messages"][:2]}
    assert gw.post("/v1/chat/completions", ask).status == 200  # the call that reaches the limit
    assert gw.post("/v1/chat/completions", RESEARCH).status == 400  # its result comes back: refused
    assert gw.state().budget_exhausted == "max_tool_calls"
    openai_api.tool_calls = 0

    got = result(finalize(gw.url))

    assert got.accepted and got.requests == 1
    assert _model_requests(openai_api)[-1]["messages"][:-1] == RESEARCH["messages"]
    assert gw.state().budget_exhausted == "max_tool_calls"  # the research budget stays spent, and did not block


def test_a_trailing_tool_use_gets_its_result_and_turns_alternate_in_messages(gateway, anthropic_api):
    gw = gateway()
    research = {"model": "claude-test", "max_tokens": 900, "system": "Research.", "tools": [
        {"name": "search_web", "input_schema": {"type": "object"}}], "tool_choice": {"type": "auto"},
        "messages": [{"role": "user", "content": QUESTION},
                     {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "search_web",
                                                        "input": {"query": "bridge"}}]}]}
    gw.post("/v1/messages", research, anthropic=True)

    got = result(finalize(gw.url))

    assert got.accepted and (got.family, got.api) == ("anthropic", "messages")
    sent = _model_requests(anthropic_api)[-1]
    # the Messages API takes tool blocks only with tools: they stay, and the model may call none of them
    assert sent["tools"] == research["tools"] and sent["tool_choice"] == {"type": "none"} and sent["system"] == "Research."
    assert sent["max_tokens"] == 4000
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["user", "assistant", "user"]
    last = sent["messages"][-1]["content"]
    assert last[0]["type"] == "tool_result" and last[0]["tool_use_id"] == "toolu_1"
    assert last[-1] == {"type": "text", "text": FINAL_ANSWER_PROMPT}


def test_a_responses_conversation_is_finalized_in_responses_and_an_incomplete_answer_is_rejected(gateway, openai_api):
    gw = gateway()
    research = {"model": "gpt-test", "tools": [{"type": "function", "name": "search_web", "parameters": {}}],
                "input": [{"type": "message", "role": "user", "content": QUESTION},
                          {"type": "function_call", "call_id": "call_9", "name": "search_web", "arguments": "{}"}]}
    gw.post("/v1/responses", research)
    openai_api.next_answers = [{"truncated": True}]

    got = result(finalize(gw.url))

    assert got.accepted and got.requests == 2 and "status incomplete" in got.rejected[0]
    first_sent = _model_requests(openai_api)[-2]
    assert first_sent["max_output_tokens"] == 4000 and "tools" not in first_sent
    items = first_sent["input"]
    assert items[2] == {"type": "function_call_output", "call_id": "call_9", "output": items[2]["output"]}
    assert items[-1]["role"] == "user" and items[-1]["content"][0]["text"] == FINAL_ANSWER_PROMPT


def test_a_translated_run_finalizes_through_the_translation(gateway, anthropic_api):
    """A Chat Completions agent on an Anthropic-only run: the stage speaks chat, the upstream gets Messages."""
    gw = gateway(upstreams={"anthropic": {"base_url": anthropic_api.url, "api_key": "sk-ant-real-8d21c0b7a9e34f10"}})
    gw.post("/v1/chat/completions", RESEARCH)
    anthropic_api.pieces = ["The Vltava."]

    got = result(finalize(gw.url))

    assert (got.accepted, got.answer, got.api) == (True, "The Vltava.", "chat_completions")
    sent = _model_requests(anthropic_api)[-1]
    assert sent["max_tokens"] == 4000 and "tools" not in sent
    assert sent["messages"][-1]["content"][-1] == {"type": "text", "text": FINAL_ANSWER_PROMPT}
    # no tools to keep: the research's tool calls and results reach the model as text, which the API accepts
    blocks = [b for m in sent["messages"] if isinstance(m["content"], list) for b in m["content"]]
    assert blocks and {b["type"] for b in blocks} == {"text"}
    assert any(b["text"].startswith("[tool call ") for b in blocks) and any(
        b["text"].startswith("[tool result ") for b in blocks)
    line = gw.exchanges()[-1]
    assert line.phase == "finalization" and line.translation == "openai-chat->anthropic-messages"
    assert line.client_request_body["messages"][-1] == {"role": "user", "content": FINAL_ANSWER_PROMPT}
    assert anthropic_api.received[-1].headers["x-api-key"] == "sk-ant-real-8d21c0b7a9e34f10"  # the real key


def test_without_any_research_request_the_question_alone_is_finalized(gateway, openai_api):
    gw = gateway()
    assert result(finalize(gw.url)).rejected == [
        "research sent no model request and the finalize request names no model to ask"]
    folder = gw.config.log_path.parent / "second"
    gw2 = gateway(log_path=folder / "gateway.jsonl")
    got = result(finalize(gw2.url, model="gpt-test"))
    assert got.accepted and got.api == "chat_completions"  # the run's first upstream: OpenAI
    sent = _model_requests(openai_api)[-1]
    assert sent["messages"] == [{"role": "user", "content": QUESTION}, {"role": "user", "content": FINAL_ANSWER_PROMPT}]


def test_the_state_and_the_log_line_show_the_stage(gateway, openai_api):
    gw = gateway()
    gw.post("/v1/chat/completions", RESEARCH)
    finalize(gw.url)
    state = GatewayState.model_validate_json(gw.config.state_path.read_text())
    assert state.finalization_requests == 1 and state.finalization_accepted is True
    line = json.loads(gw.log_text().splitlines()[-1])
    assert line["phase"] == "finalization" and line["path"] == "/_gateway/finalize"
    assert "finalization: max_completion_tokens set to 4000" in line["request_edits"]


@pytest.mark.parametrize("api", ["messages", "responses"])
def test_the_scripted_model_plays_both_finalization_requests_through_the_gateway(gateway, api):
    """The scripted model as the upstream: its `finalization_first` (a tool call) is rejected, its `finalization`
    accepted, in the API the research conversation used."""
    script = Script("bridge", "bridge-video.mp4", "scripted-demo", [{"content": "Searching."}],
                    finalization="The Vltava.", finalization_first={"tool_calls": [{"name": "search_web"}]})
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler([script]))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    scripted = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        gw = gateway(upstreams={"openai": {"base_url": scripted}, "anthropic": {"base_url": scripted}})
        ask = "Which river does the bridge in bridge-video.mp4 cross?"
        if api == "messages":
            assert gw.post("/v1/messages", {"model": "m", "max_tokens": 100, "messages": [
                {"role": "user", "content": ask}]}, anthropic=True).status == 200
        else:
            assert gw.post("/v1/responses", {"model": "m", "input": ask}).status == 200
        got = result(finalize(gw.url))
    finally:
        server.shutdown()
    assert (got.accepted, got.answer, got.requests, got.api) == (True, "The Vltava.", 2, api)
    assert "called a tool (search_web)" in got.rejected[0]


def test_a_bad_finalize_request_is_400_and_a_sealed_attempt_409(gateway, openai_api):
    gw = gateway()
    bad = call("POST", gw.url + "/_gateway/finalize", {"question": QUESTION, "first_tokens": 6000}, ADMIN)
    assert bad.status == 400 and "first_tokens (6000) exceeds total_tokens (5000)" in bad.json["error"]["message"]
    assert gw.chat().status == 200  # a refused finalize request does not end research
    assert call("POST", gw.url + "/_gateway/seal", None, ADMIN).status == 200
    sealed = finalize(gw.url)
    assert sealed.status == 409 and "sealed" in sealed.json["error"]["message"]
    assert len(_model_requests(openai_api)) == 1
