"""Translation between the three model APIs, so any harness can run on any upstream.

Claude Code speaks only Anthropic Messages, Codex only OpenAI Responses, the reference agent OpenAI Chat
Completions. When the attempt's upstream serves another API, the gateway translates the request on its
way up and the answer (whole, streamed, or an error) on its way back. OpenAI Chat Completions is the hub:

    Messages  -> Chat                 (an OpenAI-compatible upstream: vLLM, a hosted GPT, ...)
    Responses -> Chat                 (an OpenAI-compatible upstream without /v1/responses)
    Responses -> Chat -> Messages     (an Anthropic upstream)
    Chat      -> Messages             (an Anthropic upstream)

and the answers go the reverse way. Everything the harness sent that the other API cannot carry (thinking
blocks, provider-side tools, prompt-cache marks, reasoning items, ...) is dropped and named in
`Translation.dropped`, which the exchange records. Tool-call ids pass through unchanged both ways, so a
result the harness sends back finds its call.

Written here rather than taken from LiteLLM (a 44 MB wheel with a large dependency tree and several
releases a week, for a gateway image that holds aiohttp and pydantic): the shapes are checked in the tests
against the official SDKs' types (`openai`, `anthropic`).
"""

import json
import time
from dataclasses import dataclass, field
from typing import Any

from sandbox.gateway._apis import CHAT, MESSAGES, RESPONSES, Family, Route
from sandbox.models import API_LABEL, upstream_api

# chat finish_reason <-> Messages stop_reason <-> Responses status / incomplete reason
_CHAT_TO_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "function_call": "tool_use",
                 "content_filter": "refusal"}
_STOP_TO_CHAT = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls",
                 "pause_turn": "stop", "refusal": "content_filter", "model_context_window_exceeded": "length"}
# A custom (free-form) Responses tool becomes a function with one string argument.
_CUSTOM_INPUT = "input"


def plan(route: Route, families: dict[Family, bool]) -> Route | None:
    """The upstream route for a model request on `route` (see `sandbox.models.upstream_api`); None: passed
    through as it is."""
    target = upstream_api(route.name, families)
    return {CHAT.name: CHAT, RESPONSES.name: RESPONSES, MESSAGES.name: MESSAGES}[target] if target else None


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str:
    """A field an upstream should send as a string; anything else (a list, a number) as empty."""
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _text_of(content: Any) -> str:
    """The text of a string or of a list of text-bearing parts."""
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text", "")) for p in _list(content) if isinstance(p, dict) and "text" in p)


def _args(arguments: Any) -> dict:
    """Tool-call arguments (a JSON string in the OpenAI APIs) as the object Messages wants."""
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments or "{}")
    except (TypeError, ValueError):
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"_arguments": value}


def _now_id(prefix: str) -> str:
    return f"{prefix}_omnidr_{time.time_ns():x}"


# Responses request fields that carry state the upstream does not keep, as `Translation.dropped` names them.
_RESPONSES_STATE_DROPPED = {"previous_response_id": "previous_response_id (the upstream keeps no conversation state)"}


def _messages_tool_choice_to_chat(choice: dict) -> dict:
    """A Messages `tool_choice` as the chat request's `tool_choice` and `parallel_tool_calls`."""
    out: dict[str, Any] = {}
    kind = choice.get("type")
    if kind in ("auto", "any", "none"):
        out["tool_choice"] = {"auto": "auto", "any": "required", "none": "none"}[kind]
    elif kind == "tool":
        out["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    if choice.get("disable_parallel_tool_use") is True:
        out["parallel_tool_calls"] = False
    return out


def _chat_tools_to_messages(chat: dict) -> list[dict]:
    tools = []
    for tool in _list(chat.get("tools")):
        function = _dict(_dict(tool).get("function"))
        entry: dict[str, Any] = {"name": function.get("name"),
                                 "input_schema": function.get("parameters") or {"type": "object"}}
        if function.get("description"):
            entry["description"] = function["description"]
        tools.append(entry)
    return tools


def _chat_tool_choice_to_messages(chat: dict) -> dict | None:
    """A chat request's `tool_choice` and `parallel_tool_calls` as one Messages `tool_choice`."""
    choice = chat.get("tool_choice")
    mapped: dict[str, Any] | None = None
    if choice in ("auto", "required", "none"):
        mapped = {"type": {"auto": "auto", "required": "any", "none": "none"}[choice]}
    elif _dict(choice).get("type") == "function":
        mapped = {"type": "tool", "name": _dict(_dict(choice).get("function")).get("name")}
    if chat.get("parallel_tool_calls") is False:
        mapped = {**(mapped or {"type": "auto"}), "disable_parallel_tool_use": True}
    return mapped


@dataclass
class _MessagesTurn:
    """The chat pieces one Messages turn's blocks become."""

    parts: list[dict] = field(default_factory=list)
    tool_messages: list[dict] = field(default_factory=list)
    images_from_tools: list[dict] = field(default_factory=list)
    calls: list[dict] = field(default_factory=list)


@dataclass
class Translation:
    """One exchange's translation: the harness's API (`client`) and the upstream's (`upstream`)."""

    client: Route
    upstream: Route
    dropped: list[str] = field(default_factory=list)  # what could not be carried, once each
    custom_tools: set[str] = field(default_factory=set)  # Responses custom tools sent up as functions
    namespaced: dict[str, tuple[str, str]] = field(default_factory=dict)  # flat name -> (namespace, name)
    model: str = ""

    @property
    def label(self) -> str:
        return f"{API_LABEL[self.client.name]}->{API_LABEL[self.upstream.name]}"

    def drop(self, what: str) -> None:
        if what not in self.dropped:
            self.dropped.append(what)

    # ---- requests ---------------------------------------------------------------------------------

    def request(self, body: dict) -> dict:
        """The upstream's request for the harness's `body`."""
        self.model = model if isinstance(model := body.get("model"), str) else ""
        if self.client is MESSAGES:
            chat = self._messages_to_chat(body)
        elif self.client is RESPONSES:
            chat = self._responses_to_chat(body)
        else:
            chat = dict(body)
        if self.upstream is MESSAGES:
            return self._chat_to_messages(chat)
        if chat.get("stream") is True:
            chat["stream_options"] = {"include_usage": True}
        return chat

    def _messages_to_chat(self, body: dict) -> dict:
        out: dict[str, Any] = {"model": body.get("model")}
        messages: list[dict] = []
        system = body.get("system")
        if system:
            if isinstance(system, list) and any("cache_control" in _dict(b) for b in system):
                self.drop("cache_control")
            messages.append({"role": "system", "content": _text_of(system)})
        for message in _list(body.get("messages")):
            messages += self._anthropic_message(_dict(message))
        out["messages"] = messages
        for key in ("max_tokens", "temperature", "top_p", "stream"):
            if key in body:
                out["max_completion_tokens" if key == "max_tokens" else key] = body[key]
        if body.get("stop_sequences"):
            out["stop"] = body["stop_sequences"]
        tools = self._messages_tools_to_chat(body)
        if tools:
            out["tools"] = tools
            out.update(_messages_tool_choice_to_chat(_dict(body.get("tool_choice"))))
        for key in ("thinking", "top_k", "metadata", "context_management", "mcp_servers", "container", "service_tier"):
            if key in body:
                self.drop(key)
        return out

    def _messages_tools_to_chat(self, body: dict) -> list[dict]:
        """A Messages request's tools as chat functions (provider-side tools dropped)."""
        # A deferred tool is shown to the model once a tool search has loaded it (a `tool_reference` block in
        # a tool result), as the Messages API does.
        loaded = {_dict(part).get("tool_name") for message in _list(body.get("messages"))
                  for block in _list(_dict(message).get("content")) if _dict(block).get("type") == "tool_result"
                  for part in _list(_dict(block).get("content")) if _dict(part).get("type") == "tool_reference"}
        tools = []
        for tool in _list(body.get("tools")):
            tool = _dict(tool)
            if tool.get("type") not in (None, "custom") or "input_schema" not in tool:
                self.drop(f"provider-side tool {tool.get('type') or tool.get('name')}")
                continue
            if tool.get("defer_loading") and tool.get("name") not in loaded:
                continue
            if "cache_control" in tool:
                self.drop("cache_control")
            function = {"name": tool.get("name"), "parameters": tool.get("input_schema") or {"type": "object"}}
            if tool.get("description"):
                function["description"] = tool["description"]
            tools.append({"type": "function", "function": function})
        return tools

    def _anthropic_message(self, message: dict) -> list[dict]:
        """One Messages turn as chat messages (tool results become `tool` messages, before the rest)."""
        role = message.get("role")
        content = message.get("content")
        if isinstance(content, str):
            return [{"role": role, "content": content}]
        turn = _MessagesTurn()
        for block in _list(content):
            self._anthropic_block(_dict(block), role == "assistant", turn)
        out = list(turn.tool_messages)
        if turn.images_from_tools:  # chat tool messages carry text only: the images follow as the user's
            self.drop("images in tool results (sent as a user message after them)")
            out.append({"role": "user", "content": [{"type": "text", "text": "Images returned by the tools:"},
                                                    *turn.images_from_tools]})
        if role == "assistant":
            text = "".join(p["text"] for p in turn.parts if p.get("type") == "text")
            if text or turn.calls:
                reply: dict[str, Any] = {"role": "assistant", "content": text or None}
                if turn.calls:
                    reply["tool_calls"] = turn.calls
                out.append(reply)
        elif turn.parts:
            out.append({"role": role, "content": turn.parts})
        return out

    def _anthropic_block(self, block: dict, assistant: bool, turn: _MessagesTurn) -> None:
        """One content block of a Messages turn into the chat pieces `turn` collects."""
        kind = block.get("type")
        if "cache_control" in block:
            self.drop("cache_control")
        if kind == "text":
            turn.parts.append({"type": "text", "text": block.get("text", "")})
        elif kind == "image":
            turn.parts.append(self._image_part(block))
        elif kind == "tool_use" and assistant:
            turn.calls.append({"id": block.get("id"), "type": "function", "function": {
                "name": block.get("name"), "arguments": json.dumps(block.get("input") or {}, ensure_ascii=False)}})
        elif kind == "tool_result":
            self._anthropic_tool_result(block, turn)
        elif kind in ("thinking", "redacted_thinking"):
            self.drop("thinking blocks")
        else:
            self.drop(f"{kind} blocks")

    def _anthropic_tool_result(self, block: dict, turn: _MessagesTurn) -> None:
        """A `tool_result` block as a chat `tool` message (its images kept aside for a user message)."""
        inner = block.get("content")
        text = inner if isinstance(inner, str) else _text_of(inner)
        for part in [] if isinstance(inner, str) else _list(inner):
            if _dict(part).get("type") == "image":
                turn.images_from_tools.append(self._image_part(part))
            elif _dict(part).get("type") == "tool_reference":
                text += ("\n" if text else "") + f"Tool loaded: {part.get('tool_name')}"
        if block.get("is_error"):
            text = "[tool error] " + text
        turn.tool_messages.append({"role": "tool", "tool_call_id": block.get("tool_use_id"), "content": text})

    def _image_part(self, block: dict) -> dict:
        source = _dict(block.get("source"))
        if source.get("type") == "base64":
            url = f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
        else:
            url = source.get("url", "")
        return {"type": "image_url", "image_url": {"url": url}}

    def _responses_to_chat(self, body: dict) -> dict:
        out: dict[str, Any] = {"model": body.get("model")}
        messages: list[dict] = []
        if body.get("instructions"):
            messages.append({"role": "system", "content": str(body["instructions"])})
        items = body.get("input")
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        tools = []
        for tool in _list(body.get("tools")):
            tools += self._responses_tool(_dict(tool))
        for item in _list(items):
            self._responses_item(_dict(item), messages)
        out["messages"] = [m for m in messages if m.get("content") is not None or m.get("tool_calls")]
        for key, to in (("max_output_tokens", "max_completion_tokens"), ("temperature", "temperature"),
                        ("top_p", "top_p"), ("stream", "stream"), ("parallel_tool_calls", "parallel_tool_calls")):
            if key in body and body[key] is not None:
                out[to] = body[key]
        if tools:
            out["tools"] = tools
            choice = body.get("tool_choice")
            if choice in ("auto", "required", "none"):
                out["tool_choice"] = choice
            elif _dict(choice).get("type") in ("function", "custom") and _dict(choice).get("name"):
                out["tool_choice"] = {"type": "function", "function": {"name": _dict(choice)["name"]}}
        else:
            out.pop("parallel_tool_calls", None)
        for key in ("reasoning", "include", "store", "previous_response_id", "prompt_cache_key", "text", "truncation",
                    "service_tier", "metadata", "background"):
            if body.get(key) not in (None, False, [], {}) and key != "store":
                self.drop(_RESPONSES_STATE_DROPPED.get(key, key))
        return out

    def _responses_item(self, item: dict, messages: list[dict]) -> None:
        """One Responses input item onto the chat `messages` (consecutive output items join one assistant turn)."""
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            role = "system" if role == "developer" else role
            content = item.get("content")
            if role == "assistant":
                self._assistant(messages)["content"] = (
                    (self._assistant(messages)["content"] or "") + _text_of(content)) or None
            elif isinstance(content, str):
                messages.append({"role": role, "content": content})
            else:
                messages.append({"role": role, "content": [self._input_part(_dict(p)) for p in _list(content)]})
        elif kind in ("function_call", "custom_tool_call"):
            arguments = (item.get("arguments") if kind == "function_call"
                         else json.dumps({_CUSTOM_INPUT: item.get("input", "")}, ensure_ascii=False))
            turn = self._assistant(messages)
            name = f"{item['namespace']}__{item.get('name')}" if item.get("namespace") else item.get("name")
            turn.setdefault("tool_calls", []).append(
                {"id": item.get("call_id"), "type": "function",
                 "function": {"name": name, "arguments": arguments or "{}"}})
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            text = output if isinstance(output, str) else _text_of(output)
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": text})
        else:
            self.drop(f"{kind} items")

    def _responses_tool(self, tool: dict, namespace: str | None = None) -> list[dict]:
        """A Responses tool as chat functions: a `custom` (free-form) tool as a function with one string
        argument, a `namespace` as its functions named `<namespace>__<name>`; provider-side tools dropped."""
        kind = tool.get("type")
        name: Any = tool.get("name")  # as the client sent it
        if kind == "namespace" and namespace is None:
            self.drop("tool namespaces (their functions are named <namespace>__<name>)")
            return [f for inner in _list(tool.get("tools")) for f in self._responses_tool(_dict(inner), name)]
        if kind not in ("function", "custom"):
            self.drop(f"provider-side tool {kind}")
            return []
        flat = f"{namespace}__{name}" if namespace else name
        if namespace:
            self.namespaced[flat] = (namespace, name)
        description = tool.get("description") or ""
        if kind == "function":
            function = {"name": flat, "parameters": tool.get("parameters") or {"type": "object"}}
            if tool.get("strict") is not None:
                function["strict"] = tool["strict"]
        else:
            self.custom_tools.add(flat)
            self.drop("custom tool formats (sent as a function with one string argument)")
            grammar = _dict(tool.get("format")).get("definition")
            if grammar:
                description += f"\n\nThe `{_CUSTOM_INPUT}` argument must follow this grammar:\n{grammar}"
            function = {"name": flat, "parameters": {"type": "object", "properties": {_CUSTOM_INPUT: {"type": "string"}},
                                                     "required": [_CUSTOM_INPUT]}}
        if description:
            function["description"] = description
        return [{"type": "function", "function": function}]

    @staticmethod
    def _assistant(messages: list[dict]) -> dict:
        """The assistant turn being built (consecutive output items become one chat message)."""
        if not messages or messages[-1].get("role") != "assistant":
            messages.append({"role": "assistant", "content": None})
        return messages[-1]

    def _input_part(self, part: dict) -> dict:
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text"):
            return {"type": "text", "text": part.get("text", "")}
        if kind == "input_image":
            url = part.get("image_url") or ""
            if not url:
                self.drop("input_image by file_id")
            return {"type": "image_url", "image_url": {"url": url, **({"detail": part["detail"]}
                                                                    if part.get("detail") else {})}}
        self.drop(f"{kind} parts")
        return {"type": "text", "text": ""}

    def _chat_to_messages(self, chat: dict) -> dict:
        out: dict[str, Any] = {"model": chat.get("model")}
        system: list[str] = []
        messages: list[dict] = []
        for message in _list(chat.get("messages")):
            message = _dict(message)
            if message.get("role") in ("system", "developer"):
                system.append(_text_of(message.get("content")))
                continue
            role, blocks = self._chat_message_blocks(message)
            if not blocks:  # Messages refuses empty turns
                continue
            if messages and messages[-1]["role"] == role:  # Messages wants alternating turns
                messages[-1]["content"] += blocks
            else:
                messages.append({"role": role, "content": blocks})
        if system:
            out["system"] = "\n\n".join(system)
        out["messages"] = messages
        limit = chat.get("max_completion_tokens", chat.get("max_tokens"))
        if isinstance(limit, int):
            out["max_tokens"] = limit
        for key in ("temperature", "top_p", "stream"):
            if key in chat:
                out[key] = chat[key]
        if chat.get("stop"):
            out["stop_sequences"] = [chat["stop"]] if isinstance(chat["stop"], str) else chat["stop"]
        tools = _chat_tools_to_messages(chat)
        if tools:
            out["tools"] = tools
            mapped = _chat_tool_choice_to_messages(chat)
            if mapped:
                out["tool_choice"] = mapped
        for key in ("reasoning_effort", "response_format", "logprobs", "n", "seed", "frequency_penalty",
                    "presence_penalty", "web_search_options"):
            if chat.get(key) not in (None, 1) or (key == "n" and chat.get("n", 1) != 1):
                self.drop(key)
        return out

    def _chat_message_blocks(self, message: dict) -> tuple[str, list[dict]]:
        """A chat message (not a system one) as a Messages turn's role and content blocks."""
        role = message.get("role")
        content = message.get("content")
        if role == "tool":
            return "user", [{"type": "tool_result", "tool_use_id": message.get("tool_call_id"),
                             "content": _text_of(content)}]
        if role == "assistant":
            blocks: list[dict] = [{"type": "text", "text": _text_of(content)}] if _text_of(content) else []
            for call in _list(message.get("tool_calls")):
                function = _dict(_dict(call).get("function"))
                blocks.append({"type": "tool_use", "id": call.get("id"), "name": function.get("name"),
                               "input": _args(function.get("arguments"))})
            return "assistant", blocks
        if isinstance(content, str):
            parts: list[dict | None] = [{"type": "text", "text": content}]
        else:
            parts = [self._anthropic_part(_dict(p)) for p in _list(content)]
        # Messages refuses empty text blocks
        return "user", [b for b in parts if b and not (b["type"] == "text" and not b["text"])]

    def _anthropic_part(self, part: dict) -> dict | None:
        kind = part.get("type")
        if kind == "text":
            return {"type": "text", "text": part.get("text", "")}
        if kind == "image_url":
            url = _dict(part.get("image_url")).get("url", "")
            if url.startswith("data:") and ";base64," in url:
                media, data = url[5:].split(";base64,", 1)
                return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
            return {"type": "image", "source": {"type": "url", "url": url}}
        self.drop(f"{kind} parts")
        return None

    # ---- whole answers ------------------------------------------------------------------------------

    def response(self, body: dict) -> dict:
        """The harness's answer for the upstream's whole (2xx) answer `body`."""
        chat = self._messages_answer_to_chat(body) if self.upstream is MESSAGES else body
        if self.client is MESSAGES:
            return self._chat_answer_to_messages(chat)
        if self.client is RESPONSES:
            return self._chat_answer_to_responses(chat)
        return chat

    def _messages_answer_to_chat(self, message: dict) -> dict:
        text, reasoning, calls = "", "", []
        for block in _list(message.get("content")):
            block = _dict(block)
            if block.get("type") == "text":
                text += block.get("text", "")
            elif block.get("type") == "thinking":
                reasoning += block.get("thinking", "")
            elif block.get("type") == "tool_use":
                calls.append({"id": block.get("id"), "type": "function", "function": {
                    "name": block.get("name"), "arguments": json.dumps(block.get("input") or {}, ensure_ascii=False)}})
            else:
                self.drop(f"{block.get('type')} blocks in the answer")
        reply: dict[str, Any] = {"role": "assistant", "content": text or None}
        if reasoning:
            reply["reasoning_content"] = reasoning
        if calls:
            reply["tool_calls"] = calls
        finish = _STOP_TO_CHAT.get(_str(message.get("stop_reason")) or "end_turn", "stop")
        return {"id": message.get("id") or _now_id("chatcmpl"), "object": "chat.completion", "created": int(time.time()),
                "model": message.get("model") or self.model,
                "choices": [{"index": 0, "message": reply, "finish_reason": finish, "logprobs": None}],
                "usage": _anthropic_usage_to_chat(_dict(message.get("usage")))}

    def _chat_answer_to_messages(self, chat: dict) -> dict:
        choice = _dict((_list(chat.get("choices")) or [{}])[0])
        reply = _dict(choice.get("message"))
        content: list[dict] = []
        reasoning = reply.get("reasoning_content") or reply.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            content.append({"type": "thinking", "thinking": reasoning, "signature": ""})
        if reply.get("content"):
            content.append({"type": "text", "text": _text_of(reply["content"])})
        for call in _list(reply.get("tool_calls")):
            function = _dict(_dict(call).get("function"))
            content.append({"type": "tool_use", "id": call.get("id") or _now_id("toolu"), "name": function.get("name"),
                            "input": _args(function.get("arguments"))})
        stop = _CHAT_TO_STOP.get(_str(choice.get("finish_reason")) or "stop", "end_turn")
        if stop == "end_turn" and any(b["type"] == "tool_use" for b in content):
            stop = "tool_use"
        return {"id": chat.get("id") or _now_id("msg"), "type": "message", "role": "assistant",
                "model": chat.get("model") or self.model, "content": content, "stop_reason": stop,
                "stop_sequence": None, "usage": _chat_usage_to_anthropic(_dict(chat.get("usage")))}

    def _chat_answer_to_responses(self, chat: dict) -> dict:
        choice = _dict((_list(chat.get("choices")) or [{}])[0])
        reply = _dict(choice.get("message"))
        rid = "resp_" + str(chat.get("id") or _now_id("chat"))
        output: list[dict] = []
        reasoning = reply.get("reasoning_content") or reply.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            output.append(_reasoning_item(f"rs_{rid}", reasoning))
        if reply.get("content"):
            output.append(_message_item(f"msg_{rid}", _text_of(reply["content"])))
        for k, call in enumerate(_list(reply.get("tool_calls"))):
            function = _dict(_dict(call).get("function"))
            output.append(self._call_item(f"fc_{rid}_{k}", call.get("id"), function.get("name"),
                                          function.get("arguments") or ""))
        finish = choice.get("finish_reason")
        return _response(rid, chat.get("model") or self.model, output, _chat_usage_to_responses(_dict(chat.get("usage"))),
                         "incomplete" if finish == "length" else "completed")

    def _call_item(self, item_id: str, call_id: Any, name: Any, arguments: str) -> dict:
        namespace, bare = self.namespaced.get(name, (None, name))
        extra = {"namespace": namespace} if namespace else {}
        if name in self.custom_tools:
            return {"type": "custom_tool_call", "id": item_id, "call_id": call_id, "name": bare,
                    "input": str(_args(arguments).get(_CUSTOM_INPUT, "")), "status": "completed", **extra}
        return {"type": "function_call", "id": item_id, "call_id": call_id, "name": bare, "arguments": arguments,
                "status": "completed", **extra}

    # ---- errors --------------------------------------------------------------------------------------

    def error(self, body: Any, status: int) -> dict:
        """The upstream's error answer in the harness's error shape (the status is kept, so retries and
        final failures mean to the harness what they meant upstream)."""
        inner = _dict(_dict(body).get("error"))
        message = inner.get("message") or (body if isinstance(body, str) else json.dumps(body))[:2000]
        kind = inner.get("type") or inner.get("code") or f"upstream_{status}"
        if self.client is MESSAGES:
            return {"type": "error", "error": {"type": kind, "message": message}}
        return {"error": {"message": message, "type": kind, "code": inner.get("code") or kind, "param": None}}

    # ---- streams -------------------------------------------------------------------------------------

    def stream(self) -> "StreamTranslation":
        return StreamTranslation(self)


def _message_item(item_id: str, text: str) -> dict:
    return {"type": "message", "id": item_id, "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def _reasoning_item(item_id: str, text: str) -> dict:
    return {"type": "reasoning", "id": item_id, "summary": [{"type": "summary_text", "text": text}]}


def _response(rid: str, model: str, output: list[dict], usage: dict | None, status: str) -> dict:
    body = {"id": rid, "object": "response", "created_at": int(time.time()), "status": status, "model": model,
            "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "usage": usage,
            "error": None, "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None}
    return body


def _chat_usage_to_anthropic(usage: dict) -> dict:
    prompt = _int(usage.get("prompt_tokens"))
    cached = _int(_dict(usage.get("prompt_tokens_details")).get("cached_tokens"))
    out = {"input_tokens": prompt - cached, "output_tokens": _int(usage.get("completion_tokens"))}
    if cached:
        out["cache_read_input_tokens"] = cached
    return out


def _chat_usage_to_responses(usage: dict) -> dict:
    prompt, completion = _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens"))
    details = _dict(usage.get("prompt_tokens_details"))
    return {"input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": _int(details.get("cached_tokens")),
                                     "cache_write_tokens": _int(details.get("cache_write_tokens"))},
            "output_tokens": completion,
            "output_tokens_details": {
                "reasoning_tokens": _int(_dict(usage.get("completion_tokens_details")).get("reasoning_tokens"))},
            "total_tokens": prompt + completion}


def _anthropic_usage_to_chat(usage: dict) -> dict:
    cached, written = _int(usage.get("cache_read_input_tokens")), _int(usage.get("cache_creation_input_tokens"))
    prompt = _int(usage.get("input_tokens")) + cached + written
    completion = _int(usage.get("output_tokens"))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached, "cache_write_tokens": written}}


Event = tuple[str | None, Any]  # (SSE event name, data: a JSON value, or the text "[DONE]")


class StreamTranslation:
    """The upstream's stream, event by event, as the harness's stream. `feed` takes one upstream event
    (name, parsed data) and returns the events to send; `finish` the closing ones."""

    def __init__(self, translation: Translation) -> None:
        self.t = translation
        self._to_chat = _MessagesToChat(translation) if translation.upstream is MESSAGES else None
        if translation.client is MESSAGES:
            self._from_chat: _ChatStream | None = _ChatToMessages(translation)
        elif translation.client is RESPONSES:
            self._from_chat = _ChatToResponses(translation)
        else:
            self._from_chat = None
        self.finished = False

    def feed(self, name: str | None, data: Any) -> list[Event]:
        if data is None:
            return []
        chunks = self._to_chat.feed(name, data) if self._to_chat is not None else [data]
        out: list[Event] = []
        for chunk in chunks:
            if chunk == "[DONE]" or data == "[DONE]" or not isinstance(chunk, dict):
                continue  # the end, or an event no API sends (an upstream's garbage is not passed on)
            if isinstance(chunk, dict) and "error" in chunk and "choices" not in chunk:
                out += self._error(chunk)
                continue
            out += self._from_chat.chunk(chunk) if self._from_chat is not None else [(None, chunk)]
        return out

    def finish(self) -> list[Event]:
        """The closing events, once the upstream stream ended cleanly."""
        if self.finished:
            return []
        self.finished = True
        if self._from_chat is not None:
            return self._from_chat.finish()
        return [(None, "[DONE]")]

    def _error(self, chunk: dict) -> list[Event]:
        body = self.t.error(chunk, 500)
        self.finished = True
        if self.t.client is MESSAGES:
            return [("error", body)]
        if self.t.client is RESPONSES:
            return [("error", {"type": "error", "code": body["error"]["code"], "message": body["error"]["message"],
                               "param": None})]
        return [(None, body)]


class _MessagesToChat:
    """Anthropic stream events -> chat.completion.chunk objects (the hub)."""

    def __init__(self, translation: Translation) -> None:
        self.t = translation
        self.id = _now_id("chatcmpl")
        self.model = translation.model
        self.usage: dict = {}
        self.tools: dict[int, int] = {}  # content block index -> chat tool-call index
        self.finish: str | None = None

    def _chunk(self, delta: dict, finish: str | None = None) -> dict:
        return {"id": self.id, "object": "chat.completion.chunk", "created": int(time.time()), "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    def feed(self, name: str | None, data: Any) -> list[Any]:
        event = _dict(data)
        kind = event.get("type") or name
        if kind == "message_start":
            message = _dict(event.get("message"))
            self.id, self.model = message.get("id") or self.id, message.get("model") or self.model
            self.usage = dict(_dict(message.get("usage")))
            return [self._chunk({"role": "assistant", "content": ""})]
        if kind == "content_block_start":
            block = _dict(event.get("content_block"))
            if block.get("type") == "tool_use":
                index = self.tools.setdefault(_int(event.get("index")), len(self.tools))
                return [self._chunk({"tool_calls": [{"index": index, "id": block.get("id"), "type": "function",
                                                     "function": {"name": block.get("name"), "arguments": ""}}]})]
            if block.get("type") not in ("text", "thinking"):
                self.t.drop(f"{block.get('type')} blocks in the answer")
            return []
        if kind == "content_block_delta":
            delta = _dict(event.get("delta"))
            if delta.get("type") == "text_delta":
                return [self._chunk({"content": delta.get("text", "")})]
            if delta.get("type") == "thinking_delta":
                return [self._chunk({"reasoning_content": delta.get("thinking", "")})]
            if delta.get("type") == "input_json_delta" and _int(event.get("index")) in self.tools:
                index = self.tools[_int(event.get("index"))]
                return [self._chunk({"tool_calls": [{"index": index,
                                                     "function": {"arguments": delta.get("partial_json", "")}}]})]
            return []
        if kind == "message_delta":
            self.usage.update({k: v for k, v in _dict(event.get("usage")).items() if v is not None})
            stop = _dict(event.get("delta")).get("stop_reason")
            if stop:
                self.finish = _STOP_TO_CHAT.get(_str(stop), "stop")
                return [self._chunk({}, self.finish)]
            return []
        if kind == "message_stop":
            return [{"id": self.id, "object": "chat.completion.chunk", "created": int(time.time()),
                     "model": self.model, "choices": [], "usage": _anthropic_usage_to_chat(self.usage)}]
        if kind == "error":
            return [{"error": _dict(event.get("error"))}]
        return []  # ping, content_block_stop


class _ChatStream:
    """Reads chat.completion.chunk objects; a subclass turns each piece into its API's events."""

    def chunk(self, chunk: dict) -> list[Event]:
        out = self._start(chunk)
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in _list(chunk.get("choices"))[:1]:
            delta = _dict(_dict(choice).get("delta"))
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                out += self._reasoning(reasoning)
            if isinstance(delta.get("content"), str) and delta["content"]:
                out += self._text(delta["content"])
            for call in _list(delta.get("tool_calls")):
                call = _dict(call)
                function = _dict(call.get("function"))
                out += self._tool(_int(call.get("index")), call.get("id"), function.get("name"),
                                  function.get("arguments") or "")
            if choice.get("finish_reason"):
                self._finish_reason(choice["finish_reason"])
        return out

    usage: dict

    def _start(self, chunk: dict) -> list[Event]:
        raise NotImplementedError

    def _reasoning(self, text: str) -> list[Event]:
        raise NotImplementedError

    def _text(self, text: str) -> list[Event]:
        raise NotImplementedError

    def _tool(self, index: int, call_id: Any, name: Any, arguments: str) -> list[Event]:
        raise NotImplementedError

    def _finish_reason(self, reason: str) -> None:
        raise NotImplementedError

    def finish(self) -> list[Event]:
        raise NotImplementedError


class _ChatToMessages(_ChatStream):
    """chat.completion.chunk objects -> Anthropic Messages stream events."""

    def __init__(self, translation: Translation) -> None:
        self.t = translation
        self.started = False
        self.id = _now_id("msg")
        self.block: int = -1  # index of the open content block, -1: none
        self.kind: str | None = None  # its type
        self.tools: dict[int, int] = {}  # chat tool-call index -> block index
        self.stop: str | None = None
        self.usage: dict = {}

    def _start(self, chunk: dict) -> list[Event]:
        if self.started:
            return []
        self.started = True
        message: dict[str, Any] = {"id": chunk.get("id") or self.id, "type": "message", "role": "assistant",
                   "model": chunk.get("model") or self.t.model, "content": [], "stop_reason": None,
                   "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0}}
        return [("message_start", {"type": "message_start", "message": message})]

    def _open(self, block: dict, kind: str) -> list[Event]:
        out = self._close()
        self.block += 1
        self.kind = kind
        return out + [("content_block_start", {"type": "content_block_start", "index": self.block,
                                               "content_block": block})]

    def _close(self) -> list[Event]:
        if self.kind is None:
            return []
        out: list[Event] = []
        if self.kind == "thinking":
            out.append(("content_block_delta", {"type": "content_block_delta", "index": self.block,
                                                "delta": {"type": "signature_delta", "signature": ""}}))
        self.kind = None
        return out + [("content_block_stop", {"type": "content_block_stop", "index": self.block})]

    def _reasoning(self, text: str) -> list[Event]:
        out = [] if self.kind == "thinking" else self._open({"type": "thinking", "thinking": "", "signature": ""},
                                                             "thinking")
        return out + [("content_block_delta", {"type": "content_block_delta", "index": self.block,
                                               "delta": {"type": "thinking_delta", "thinking": text}})]

    def _text(self, text: str) -> list[Event]:
        out = [] if self.kind == "text" else self._open({"type": "text", "text": ""}, "text")
        return out + [("content_block_delta", {"type": "content_block_delta", "index": self.block,
                                               "delta": {"type": "text_delta", "text": text}})]

    def _tool(self, index: int, call_id: Any, name: Any, arguments: str) -> list[Event]:
        out: list[Event] = []
        if index not in self.tools:
            out += self._open({"type": "tool_use", "id": call_id or _now_id("toolu"), "name": name, "input": {}},
                              "tool_use")
            self.tools[index] = self.block
        if arguments:
            out.append(("content_block_delta", {"type": "content_block_delta", "index": self.tools[index],
                                                "delta": {"type": "input_json_delta", "partial_json": arguments}}))
        return out

    def _finish_reason(self, reason: str) -> None:
        self.stop = _CHAT_TO_STOP.get(_str(reason), "end_turn")

    def finish(self) -> list[Event]:
        out = self._start({}) + self._close()
        stop = self.stop or "end_turn"
        if stop == "end_turn" and self.tools:
            stop = "tool_use"
        out.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                      "usage": _chat_usage_to_anthropic(self.usage)}))
        return out + [("message_stop", {"type": "message_stop"})]


class _ChatToResponses(_ChatStream):
    """chat.completion.chunk objects -> OpenAI Responses stream events."""

    def __init__(self, translation: Translation) -> None:
        self.t = translation
        self.rid = "resp_" + _now_id("chat")
        self.model = translation.model
        self.seq = 0
        self.started = False
        self.output: list[dict] = []  # finished items
        self.open: dict | None = None  # the item being streamed
        self.tools: dict[int, dict] = {}  # chat tool-call index -> its item
        self.usage: dict = {}
        self.finish_reason: str | None = None

    def _event(self, kind: str, **fields: Any) -> Event:
        self.seq += 1
        return kind, {"type": kind, "sequence_number": self.seq, **fields}

    def _pending(self, status: str) -> dict:
        return _response(self.rid, self.model, list(self.output), None, status)

    def _start(self, chunk: dict) -> list[Event]:
        if self.started:
            return []
        self.started = True
        self.rid = "resp_" + str(chunk.get("id") or self.rid)
        self.model = chunk.get("model") or self.model
        return [self._event("response.created", response=self._pending("in_progress")),
                self._event("response.in_progress", response=self._pending("in_progress"))]

    def _open(self, item: dict) -> list[Event]:
        out = self._close()
        self.open = item
        index = len(self.output)
        out.append(self._event("response.output_item.added", output_index=index, item={**item, "status": "in_progress"}))
        if item["type"] == "message":
            out.append(self._event("response.content_part.added", item_id=item["id"], output_index=index,
                                   content_index=0, part={"type": "output_text", "text": "", "annotations": []}))
        return out

    def _close(self) -> list[Event]:
        item, self.open = self.open, None
        if item is None:
            return []
        index = len(self.output)
        out: list[Event] = []
        if item["type"] == "message":
            text = item["content"][0]["text"]
            out += [self._event("response.output_text.done", item_id=item["id"], output_index=index, content_index=0,
                                text=text),
                    self._event("response.content_part.done", item_id=item["id"], output_index=index,
                                content_index=0, part=item["content"][0])]
        elif item["type"] == "reasoning":
            text = item["summary"][0]["text"]
            out.append(self._event("response.reasoning_summary_text.done", item_id=item["id"], output_index=index,
                                   summary_index=0, text=text))
        else:
            call = self.t._call_item(item["id"], item["call_id"], item["name"], item["arguments"])
            item.clear()
            item.update(call)
            if item["type"] == "function_call":
                out.append(self._event("response.function_call_arguments.done", item_id=item["id"],
                                       output_index=index, arguments=item["arguments"]))
        item["status"] = "completed"
        self.output.append(item)
        return out + [self._event("response.output_item.done", output_index=index, item=item)]

    def _reasoning(self, text: str) -> list[Event]:
        out: list[Event] = []
        if self.open is None or self.open["type"] != "reasoning":
            out += self._open({"type": "reasoning", "id": f"rs_{self.rid}_{len(self.output)}",
                               "summary": [{"type": "summary_text", "text": ""}]})
        assert self.open is not None
        self.open["summary"][0]["text"] += text
        return out + [self._event("response.reasoning_summary_text.delta", item_id=self.open["id"],
                                  output_index=len(self.output), summary_index=0, delta=text)]

    def _text(self, text: str) -> list[Event]:
        out: list[Event] = []
        if self.open is None or self.open["type"] != "message":
            out += self._open(_message_item(f"msg_{self.rid}_{len(self.output)}", ""))
        assert self.open is not None
        self.open["content"][0]["text"] += text
        return out + [self._event("response.output_text.delta", item_id=self.open["id"],
                                  output_index=len(self.output), content_index=0, delta=text)]

    def _tool(self, index: int, call_id: Any, name: Any, arguments: str) -> list[Event]:
        out: list[Event] = []
        if index not in self.tools:
            item = {"type": "function_call", "id": f"fc_{self.rid}_{len(self.output)}",
                    "call_id": call_id or _now_id("call"), "name": name, "arguments": ""}
            out += self._open(item)
            self.tools[index] = item
        item = self.tools[index]
        if arguments:
            item["arguments"] += arguments
            if item is self.open and item["name"] not in self.t.custom_tools:
                out.append(self._event("response.function_call_arguments.delta", item_id=item["id"],
                                       output_index=len(self.output), delta=arguments))
        return out

    def _finish_reason(self, reason: str) -> None:
        self.finish_reason = reason

    def finish(self) -> list[Event]:
        out = self._start({}) + self._close()
        status = "incomplete" if self.finish_reason == "length" else "completed"
        final = _response(self.rid, self.model, self.output, _chat_usage_to_responses(self.usage), status)
        return out + [self._event(f"response.{status}", response=final)]
