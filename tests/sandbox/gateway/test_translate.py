"""The gateway translating between the model APIs, checked with the official SDKs on both sides.

The clients are the real `anthropic` and `openai` SDKs (what Claude Code's and Codex's wire formats are
defined by), pointed at a gateway on loopback whose only upstream speaks another API (the fake APIs of
`fake_model_api`). What the upstream received is validated against the SDKs' own request types, so a
translation that both ends happened to agree on, but that no real server would take, still fails.
"""

import json

import anthropic
import openai
import pytest
from anthropic.types import MessageCreateParams
from fake_model_api import FakeModelApi
from openai.types.chat import ChatCompletionChunk
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from pydantic import TypeAdapter
from test_gateway import AGENT_TOKEN, ANTHROPIC_KEY, OPENAI_KEY, gateway, loop  # noqa: F401 - fixtures

pytestmark = pytest.mark.network

PIXEL = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
TOOLS_ANTHROPIC = [{"name": "search", "description": "Search the web.",
                    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}]
TOOLS_RESPONSES = [{"type": "function", "name": "search", "description": "Search the web.", "strict": False,
                    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}},
                   {"type": "custom", "name": "apply_patch", "description": "Edit files.",
                    "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}},
                   {"type": "web_search"}]
CHAT_REQUEST = TypeAdapter(CompletionCreateParamsStreaming)
MESSAGES_REQUEST = TypeAdapter(MessageCreateParams)


@pytest.fixture
def openai_api(loop):  # noqa: F811 - a fresh one per test, with tool calls in each answer
    api = FakeModelApi("openai", OPENAI_KEY, input_tokens=120, output_tokens=30, tool_calls=2)
    loop.run(api.start())
    yield api
    loop.run(api.stop())


@pytest.fixture
def anthropic_api(loop):  # noqa: F811
    api = FakeModelApi("anthropic", ANTHROPIC_KEY, input_tokens=140, output_tokens=25, tool_calls=2)
    loop.run(api.start())
    yield api
    loop.run(api.stop())


def only(api: FakeModelApi, key: str, **extra) -> dict:
    return {api.family: {"base_url": api.url, "api_key": key, **extra}}


def _history_messages() -> list[dict]:
    """A Messages conversation with every shape: text, an image, parallel tool calls, a tool error."""
    return [
        {"role": "user", "content": [{"type": "text", "text": "What is in this frame?", "cache_control": {"type": "ephemeral"}},
                                     {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                  "data": PIXEL}}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Let me search.", "signature": "sig"},
            {"type": "text", "text": "Searching."},
            {"type": "tool_use", "id": "toolu_a", "name": "search", "input": {"q": "lamp"}},
            {"type": "tool_use", "id": "toolu_b", "name": "search", "input": {"q": "shade"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "a lamp page"},
            {"type": "tool_result", "tool_use_id": "toolu_b", "content": [{"type": "text", "text": "timeout"}],
             "is_error": True},
            {"type": "text", "text": "Go on."}]},
    ]


def test_messages_client_on_a_chat_upstream_whole(gateway, openai_api):
    gw = gateway(upstreams=only(openai_api, OPENAI_KEY))
    client = anthropic.Anthropic(base_url=gw.url, api_key=AGENT_TOKEN, max_retries=0)
    message = client.messages.create(model="gpt-test", max_tokens=500, system="Be brief.", tools=TOOLS_ANTHROPIC,
                                     messages=_history_messages(), tool_choice={"type": "auto",
                                                                                "disable_parallel_tool_use": True})

    sent = openai_api.received[-1]
    assert sent.path == "/v1/chat/completions" and sent.headers["Authorization"] == f"Bearer {OPENAI_KEY}"
    CHAT_REQUEST.validate_python({**sent.body, "stream": True})  # the shape OpenAI's own types accept
    roles = [m["role"] for m in sent.body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "user"]
    assert sent.body["messages"][1]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert [c["id"] for c in sent.body["messages"][2]["tool_calls"]] == ["toolu_a", "toolu_b"]
    assert sent.body["messages"][4] == {"role": "tool", "tool_call_id": "toolu_b", "content": "[tool error] timeout"}
    assert sent.body["parallel_tool_calls"] is False and sent.body["tool_choice"] == "auto"
    assert sent.body["max_completion_tokens"] == 500

    assert [b.type for b in message.content] == ["text", "tool_use", "tool_use"]
    assert message.content[1].input == {"q": "x"} and message.content[1].id == "call_0"
    assert message.stop_reason == "tool_use"
    assert message.usage.input_tokens == 120 and message.usage.output_tokens == 30

    line = gw.exchanges()[-1]
    assert line.translation == "anthropic-messages->openai-chat"
    assert "thinking blocks" in line.translation_dropped and "cache_control" in line.translation_dropped
    assert line.client_request_body["messages"][1]["content"][0]["type"] == "thinking"
    assert line.request_body["messages"][0]["role"] == "system"
    assert line.client_response_body["content"][1]["type"] == "tool_use"
    assert line.usage.input_tokens == 120 and line.usage.output_tokens == 30 and line.tool_calls == 2
    assert gw.state().input_tokens == 120


def test_messages_client_on_a_chat_upstream_streamed(gateway, openai_api):
    gw = gateway(upstreams=only(openai_api, OPENAI_KEY))
    client = anthropic.Anthropic(base_url=gw.url, api_key=AGENT_TOKEN, max_retries=0)
    with client.messages.stream(model="gpt-test", max_tokens=100, tools=TOOLS_ANTHROPIC,
                                messages=[{"role": "user", "content": "hi"}]) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_message()

    assert openai_api.received[-1].body["stream_options"] == {"include_usage": True}
    assert events[0] == "message_start" and events[-1] == "message_stop"
    assert final.content[0].text == "Hello, world!"
    assert [(b.id, b.input) for b in final.content[1:]] == [("call_0", {"q": "x"}), ("call_1", {"q": "x"})]
    assert final.stop_reason == "tool_use"
    assert final.usage.input_tokens == 120 and final.usage.output_tokens == 30
    line = gw.exchanges()[-1]
    assert line.stream and line.outcome == "ok" and line.usage.output_tokens == 30 and line.tool_calls == 2
    assert "data: [DONE]" in line.response_body and "message_stop" in line.client_response_body


def test_responses_client_on_an_anthropic_upstream(gateway, anthropic_api):
    gw = gateway(upstreams=only(anthropic_api, ANTHROPIC_KEY), budget={"max_output_tokens": 800})
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key=AGENT_TOKEN, max_retries=0)
    history = [
        {"type": "message", "role": "developer", "content": "Use the tools."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Look at this."},
                                                         {"type": "input_image", "image_url": f"data:image/png;base64,{PIXEL}",
                                                          "detail": "auto"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"},
        {"type": "function_call", "call_id": "call_a", "name": "search", "arguments": '{"q": "lamp"}'},
        {"type": "custom_tool_call", "call_id": "call_b", "name": "apply_patch", "input": "*** Begin Patch"},
        {"type": "function_call_output", "call_id": "call_a", "output": "a lamp page"},
        {"type": "custom_tool_call_output", "call_id": "call_b", "output": "applied"},
    ]
    response = client.responses.create(model="claude-test", instructions="You research.", input=history,
                                       tools=TOOLS_RESPONSES, store=False, include=["reasoning.encrypted_content"])

    sent = anthropic_api.received[-1]
    assert sent.path == "/v1/messages" and sent.headers["x-api-key"] == ANTHROPIC_KEY
    MESSAGES_REQUEST.validate_python(sent.body)
    assert sent.body["system"] == "You research.\n\nUse the tools."
    assert sent.body["max_tokens"] == 800  # the budget fills what Messages requires
    assert [m["role"] for m in sent.body["messages"]] == ["user", "assistant", "user"]
    image = sent.body["messages"][0]["content"][1]
    assert image["type"] == "image" and image["source"]["data"] == PIXEL
    uses = sent.body["messages"][1]["content"]
    assert [(u["id"], u["input"]) for u in uses] == [("call_a", {"q": "lamp"}), ("call_b", {"input": "*** Begin Patch"})]
    assert [b["tool_use_id"] for b in sent.body["messages"][2]["content"]] == ["call_a", "call_b"]
    assert {t["name"] for t in sent.body["tools"]} == {"search", "apply_patch"}

    assert [item.type for item in response.output] == ["message", "function_call", "function_call"]
    assert response.output[1].call_id == "toolu_0" and json.loads(response.output[1].arguments) == {"q": "x"}
    assert response.usage.input_tokens == 140 and response.usage.output_tokens == 25
    line = gw.exchanges()[-1]
    assert line.translation == "openai-responses->anthropic-messages"
    assert {"reasoning items", "provider-side tool web_search", "include"} <= set(line.translation_dropped)


def test_responses_client_streams_from_an_anthropic_upstream(gateway, anthropic_api):
    gw = gateway(upstreams=only(anthropic_api, ANTHROPIC_KEY))
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key=AGENT_TOKEN, max_retries=0)
    with client.responses.stream(model="claude-test", input="hi", tools=TOOLS_RESPONSES[:1]) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()

    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.function_call_arguments.delta" in kinds
    assert final.output_text == "Hello, world!"
    calls = [item for item in final.output if item.type == "function_call"]
    assert [(c.call_id, json.loads(c.arguments)) for c in calls] == [("toolu_0", {"q": "x"}), ("toolu_1", {"q": "x"})]
    assert final.usage.input_tokens == 140 and final.usage.output_tokens == 25
    line = gw.exchanges()[-1]
    assert line.usage.input_tokens == 140 and line.usage.output_tokens == 25 and line.tool_calls == 2


def test_a_custom_tool_call_comes_back_as_a_custom_tool_call(gateway, openai_api):
    openai_api.tool_calls = 0
    gw = gateway(upstreams=only(openai_api, OPENAI_KEY, responses_api=False))
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key=AGENT_TOKEN, max_retries=0)
    response = client.responses.create(model="gpt-test", input="hi", tools=TOOLS_RESPONSES[:2], max_output_tokens=64)
    sent = openai_api.received[-1]
    assert sent.path == "/v1/chat/completions"  # this server has no /responses
    patch = next(t for t in sent.body["tools"] if t["function"]["name"] == "apply_patch")
    assert patch["function"]["parameters"]["required"] == ["input"] and "start: /.+/" in patch["function"]["description"]
    assert sent.body["max_completion_tokens"] == 64
    assert response.output_text == "Hello, world!"
    assert gw.exchanges()[-1].translation == "openai-responses->openai-chat"


def test_custom_tool_calls_from_a_chat_upstream():
    """A model's call of a free-form tool goes back to Codex as `custom_tool_call` with its raw input."""
    from sandbox.gateway._apis import CHAT, RESPONSES
    from sandbox.gateway._translate import Translation

    t = Translation(RESPONSES, CHAT)
    t.request({"model": "m", "input": "hi", "tools": TOOLS_RESPONSES[:2]})
    chat = {"id": "c1", "model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": "call_p", "type": "function", "function": {"name": "apply_patch", "arguments": '{"input": "*** Begin"}'}}]}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2}}
    item = t.response(chat)["output"][0]
    assert item == {"type": "custom_tool_call", "id": "fc_resp_c1_0", "call_id": "call_p", "name": "apply_patch",
                    "input": "*** Begin", "status": "completed"}
    spawn = {"type": "namespace", "name": "agents", "description": "Sub-agents.", "tools": [
        {"type": "function", "name": "spawn", "parameters": {"type": "object", "properties": {}}}]}
    sent = t.request({"model": "m", "input": [{"type": "function_call", "call_id": "c0", "namespace": "agents",
                                              "name": "spawn", "arguments": "{}"}], "tools": [spawn]})
    assert sent["tools"][0]["function"]["name"] == "agents__spawn"
    assert sent["messages"][0]["tool_calls"][0]["function"]["name"] == "agents__spawn"
    back = t.response({"id": "c2", "model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": "c3", "type": "function", "function": {"name": "agents__spawn", "arguments": "{}"}}]}}]})
    openai.types.responses.Response.model_validate(back)
    assert (back["output"][0]["namespace"], back["output"][0]["name"]) == ("agents", "spawn")
    stream = t.stream()
    chunks = [{"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "call_p", "type": "function", "function": {"name": "apply_patch", "arguments": '{"inp'}}]}}]},
        {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": 'ut": "*** Begin"}'}}]}, "finish_reason": "tool_calls"}]}]
    events = [e for c in chunks for e in stream.feed(None, c)] + stream.finish()
    done = [d for name, d in events if name == "response.output_item.done"]
    assert done[0]["item"]["type"] == "custom_tool_call" and done[0]["item"]["input"] == "*** Begin"
    assert events[-1][1]["response"]["output"][0]["input"] == "*** Begin"


def test_chat_client_on_an_anthropic_upstream_streamed(gateway, anthropic_api):
    gw = gateway(upstreams=only(anthropic_api, ANTHROPIC_KEY))
    client = openai.OpenAI(base_url=gw.url + "/v1", api_key=AGENT_TOKEN, max_retries=0)
    chunks = list(client.chat.completions.create(
        model="claude-test", stream=True, max_completion_tokens=99,
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        tools=[{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]))
    for chunk in chunks:
        ChatCompletionChunk.model_validate(chunk.model_dump())
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    names = [t.function.name for c in chunks if c.choices for t in c.choices[0].delta.tool_calls or [] if t.function.name]
    assert text == "Hello, world!" and names == ["search", "search"]
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["tool_calls"]
    sent = anthropic_api.received[-1].body
    MESSAGES_REQUEST.validate_python(sent)
    assert sent["system"] == "Be brief." and sent["max_tokens"] == 99
    assert gw.exchanges()[-1].usage.input_tokens == 140


def test_upstream_429_and_5xx_are_retried_then_seen_in_the_clients_own_error_shape(gateway, openai_api, anthropic_api):
    gw = gateway(upstreams=only(openai_api, OPENAI_KEY), budget={"upstream_retries": 2})
    client = anthropic.Anthropic(base_url=gw.url, api_key=AGENT_TOKEN, max_retries=0)
    openai_api.fail_next = [503, 429]
    ok = client.messages.create(model="gpt-test", max_tokens=50, messages=[{"role": "user", "content": "hi"}])
    assert ok.content[0].text == "Hello, world!" and gw.exchanges()[-1].retries == 2

    openai_api.fail_next = [429, 429, 429]
    with pytest.raises(anthropic.RateLimitError) as raised:
        client.messages.create(model="gpt-test", max_tokens=50, messages=[{"role": "user", "content": "hi"}])
    assert raised.value.status_code == 429 and "fake upstream failure 429" in raised.value.message
    assert raised.value.body["type"] == "error"  # Anthropic's error shape, which the SDK reads

    gw2 = gateway(upstreams=only(anthropic_api, ANTHROPIC_KEY), budget={"upstream_retries": 0})
    anthropic_api.fail_next = [529]
    codex_like = openai.OpenAI(base_url=gw2.url + "/v1", api_key=AGENT_TOKEN, max_retries=0)
    with pytest.raises(openai.InternalServerError) as failed:
        codex_like.responses.create(model="claude-test", input="hi")
    assert failed.value.status_code == 529 and failed.value.body["message"].startswith("fake upstream failure 529")


def test_a_max_tokens_stop_is_carried_both_ways():
    from sandbox.gateway._apis import CHAT, MESSAGES, RESPONSES
    from sandbox.gateway._translate import Translation

    to_chat = Translation(MESSAGES, CHAT).response(
        {"id": "c", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "cut"},
                                              "finish_reason": "length"}],
         "usage": {"prompt_tokens": 9, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 5}}})
    anthropic.types.Message.model_validate(to_chat)
    assert to_chat["stop_reason"] == "max_tokens"
    assert to_chat["usage"] == {"input_tokens": 4, "output_tokens": 4, "cache_read_input_tokens": 5}
    t = Translation(RESPONSES, MESSAGES)
    t.request({"model": "m", "input": "hi"})
    incomplete = t.response({"id": "msg", "type": "message", "role": "assistant", "model": "m",
                             "content": [{"type": "text", "text": "cut"}], "stop_reason": "max_tokens",
                             "usage": {"input_tokens": 3, "output_tokens": 8, "cache_read_input_tokens": 10}})
    openai.types.responses.Response.model_validate(incomplete)
    assert incomplete["status"] == "incomplete" and incomplete["incomplete_details"] == {"reason": "max_output_tokens"}
    assert incomplete["usage"]["input_tokens"] == 13 and incomplete["usage"]["input_tokens_details"]["cached_tokens"] == 10


def test_both_families_configured_means_no_translation(gateway, openai_api, anthropic_api):
    gw = gateway()
    gw.message()
    line = gw.exchanges()[-1]
    assert line.translation is None and line.client_request_body is None
    assert anthropic_api.received[-1].path == "/v1/messages"


def test_a_deferred_tool_is_offered_once_a_tool_search_has_loaded_it():
    from sandbox.gateway._apis import CHAT, MESSAGES
    from sandbox.gateway._translate import Translation

    tools = [{"name": "Bash", "input_schema": {"type": "object"}},
             {"name": "WebFetch", "input_schema": {"type": "object"}, "defer_loading": True}]
    before = Translation(MESSAGES, CHAT).request({"model": "m", "tools": tools,
                                                  "messages": [{"role": "user", "content": "hi"}]})
    assert [t["function"]["name"] for t in before["tools"]] == ["Bash"]
    history = [{"role": "user", "content": "hi"},
               {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ToolSearch", "input": {}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                             "content": [{"type": "tool_reference", "tool_name": "WebFetch"}]}]}]
    after = Translation(MESSAGES, CHAT).request({"model": "m", "tools": tools, "messages": history})
    assert [t["function"]["name"] for t in after["tools"]] == ["Bash", "WebFetch"]
    assert after["messages"][-1] == {"role": "tool", "tool_call_id": "t1", "content": "Tool loaded: WebFetch"}


def test_reasoning_is_carried_where_both_apis_have_it(gateway, anthropic_api):
    from sandbox.gateway._apis import CHAT, MESSAGES, RESPONSES
    from sandbox.gateway._translate import Translation

    t = Translation(RESPONSES, MESSAGES)
    t.request({"model": "m", "input": "hi"})
    answer = t.response({"id": "msg", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
                         "content": [{"type": "thinking", "thinking": "Weigh the sources.", "signature": "s"},
                                     {"type": "text", "text": "Done."}], "usage": {"input_tokens": 1, "output_tokens": 2}})
    openai.types.responses.Response.model_validate(answer)
    assert answer["output"][0]["summary"][0]["text"] == "Weigh the sources."
    stream = Translation(MESSAGES, CHAT).stream()
    events = stream.feed(None, {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {
        "reasoning_content": "Think."}}]}) + stream.feed(None, {"id": "c", "model": "m", "choices": [
            {"index": 0, "delta": {"content": "Answer."}, "finish_reason": "stop"}]}) + stream.finish()
    for _name, data in events:
        TypeAdapter(anthropic.types.RawMessageStreamEvent).validate_python(data)
    assert [d["delta"]["type"] for _n, d in events if d["type"] == "content_block_delta"] == [
        "thinking_delta", "signature_delta", "text_delta"]


def test_a_broken_upstream_stream_reaches_the_client_as_its_own_apis_error(gateway, openai_api):
    openai_api.break_after_events = 3
    gw = gateway(upstreams=only(openai_api, OPENAI_KEY), budget={"upstream_retries": 0})
    client = anthropic.Anthropic(base_url=gw.url, api_key=AGENT_TOKEN, max_retries=0)
    with pytest.raises((anthropic.APIStatusError, anthropic.APIConnectionError)):
        with client.messages.stream(model="gpt-test", max_tokens=50, messages=[{"role": "user", "content": "hi"}]) as s:
            for _event in s:
                pass
    line = gw.exchanges()[-1]
    assert line.outcome == "stream_broken" and line.translation == "anthropic-messages->openai-chat"


def test_a_translated_stream_rebuilds_a_trajectory_from_the_gateway_log(gateway, openai_api, tmp_path):
    from omnidr.trajectory import trajectory_from_gateway

    gw = gateway(upstreams=only(openai_api, OPENAI_KEY), budget={"max_output_tokens": 40})
    client = anthropic.Anthropic(base_url=gw.url, api_key=AGENT_TOKEN, max_retries=0)
    with client.messages.stream(model="gpt-test", max_tokens=5000, tools=TOOLS_ANTHROPIC,
                                messages=[{"role": "user", "content": "hi"}]) as stream:
        stream.get_final_message()
    assert openai_api.received[-1].body["max_completion_tokens"] == 40  # clamped to the budget after translation
    traj = trajectory_from_gateway(gw.config.log_path)
    [step] = traj.agent_steps()
    assert [c.name for c in step.tool_calls] == ["search", "search"] and step.message == "Hello, world!"


def test_empty_texts_do_not_reach_a_messages_upstream():
    from sandbox.gateway._apis import CHAT, MESSAGES
    from sandbox.gateway._translate import Translation

    sent = Translation(CHAT, MESSAGES).request({"model": "m", "max_tokens": 9, "messages": [
        {"role": "user", "content": ""}, {"role": "user", "content": [{"type": "text", "text": ""},
                                                                      {"type": "text", "text": "hi"}]}]})
    MESSAGES_REQUEST.validate_python(sent)
    assert sent["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
