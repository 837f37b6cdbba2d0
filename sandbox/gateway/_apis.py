"""What the gateway knows of each API: routes, the request edits, where usage and tool calls are, error shapes."""

import json
import math
from dataclasses import dataclass
from typing import Any, Literal, cast

from sandbox.models import RouteName, TokenUsage

Family = Literal["openai", "anthropic"]


@dataclass(frozen=True)
class Route:
    """One agent-facing route."""

    name: RouteName
    family: Family | None  # None: decided from the request's headers (both APIs have GET /v1/models)
    counted: bool  # a model request: counts as an agent iteration and is subject to the budget
    json: bool = True  # the body is a JSON object (False: multipart, forwarded as it came, never translated)


CHAT = Route("chat_completions", "openai", counted=True)
RESPONSES = Route("responses", "openai", counted=True)
MESSAGES = Route("messages", "anthropic", counted=True)
COUNT_TOKENS = Route("count_tokens", "anthropic", counted=False)
MODELS = Route("models", None, counted=False)
# speech-to-text (OpenAI's multipart API): the skills' transcription of a video's audio, counted and budgeted
# as a model request (issue 13); only an OpenAI-compatible upstream serves it
TRANSCRIPTIONS = Route("audio_transcriptions", "openai", counted=True, json=False)


@dataclass
class RequestEdits:
    """What `edit_request` changed."""

    notes: list[str]
    hide_usage_chunk: bool = False  # chat stream: the gateway asked for usage, so the client must not see it


# The output-token limit of each model route, in the spellings its API accepts (Chat has two).
LIMIT_FIELDS: dict[str, tuple[str, ...]] = {
    "chat_completions": ("max_tokens", "max_completion_tokens"),
    "responses": ("max_output_tokens",),
    "messages": ("max_tokens",),
}
# Fields that ask one request for several answers: each would be a model answer outside the iteration count.
SEVERAL_ANSWERS: dict[str, tuple[str, ...]] = {"chat_completions": ("n", "best_of")}


def _whole_number(value: Any) -> int | None:
    """An output limit as servers read it: an int, a float or a numeric string (pydantic-based servers such as
    vLLM take "100000"); None when it is none of those, not finite, or below 1."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, int):
        return value if value >= 1 else None
    if isinstance(value, float) and math.isfinite(value) and value >= 1:
        return int(value)
    return None


def request_problem(route: Route, body: dict[str, Any]) -> str | None:
    """Why the gateway refuses this model request before it is counted or sent (a 400 the agent can fix), or
    None: an output limit that is not a whole number of at least 1, or a request for more than one answer."""
    for field in LIMIT_FIELDS.get(route.name, ()):
        if body.get(field) is not None and _whole_number(body[field]) is None:
            return f"{field} must be a whole number of at least 1, not {json.dumps(body[field])[:80]}"
    for field in SEVERAL_ANSWERS.get(route.name, ()):
        value = body.get(field)
        if value is not None and _whole_number(value) != 1:
            return (f"{field}={json.dumps(value)[:40]} asks for several answers in one request; the gateway serves "
                    "one answer per request (each is an iteration of the budget): send one request per answer")
    return None


def edit_request(route: Route, body: dict[str, Any], max_output_tokens: int) -> RequestEdits:
    """Give every model request an output limit within the budget, and make streams report usage. Edits `body` in
    place (the upstream's body, after any translation; `request_problem` has already refused unreadable limits).
    A limit in any spelling is read as a whole number and lowered to the budget; a request without one gets the
    budget's, so the per-request output budget bounds every answer."""
    edits = RequestEdits(notes=[])
    fields = LIMIT_FIELDS.get(route.name, ())
    named = False
    for field in fields:
        if body.get(field) is None:
            continue
        named = True
        given = body[field]
        value = _whole_number(given)
        if value is None:  # cannot happen after request_problem; set the budget rather than forward it
            value = max_output_tokens
        limited = min(value, max_output_tokens)
        if limited != given or type(given) is not int:
            body[field] = limited
            if value > max_output_tokens:
                edits.notes.append(f"{field} clamped from {json.dumps(given)} to {limited} (budget max_output_tokens)")
            else:
                edits.notes.append(f"{field} {json.dumps(given)} sent as the whole number {limited}")
    if fields and not named:
        field = "max_completion_tokens" if route is CHAT else fields[0]
        body[field] = max_output_tokens
        edits.notes.append(f"{field} set to {max_output_tokens} (request named no limit; budget max_output_tokens)")
    if route is CHAT and body.get("stream") is True:
        options = body.get("stream_options")
        if not (isinstance(options, dict) and options.get("include_usage") is True):
            body["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
            edits.hide_usage_chunk = True
            edits.notes.append(
                "stream_options.include_usage set to true to count tokens; the usage-only final chunk is "
                "withheld from the agent, which did not ask for it"
            )
    if route is MESSAGES:
        thinking = body.get("thinking")
        limit = body.get("max_tokens")
        if isinstance(thinking, dict) and isinstance(thinking.get("budget_tokens"), int) and isinstance(limit, int):
            if thinking["budget_tokens"] >= limit:
                old = thinking["budget_tokens"]
                body["thinking"] = {**thinking, "budget_tokens": limit - 1}
                edits.notes.append(f"thinking.budget_tokens lowered from {old} to {limit - 1} (below max_tokens)")
    return edits


def output_cap(route: Route, body: dict[str, Any], max_output_tokens: int) -> int:
    """The most output tokens this request can cost (its limit, within the budget): what admission reserves."""
    limits = [v for f in LIMIT_FIELDS.get(route.name, ()) if (v := _whole_number(body.get(f))) is not None]
    return min([max_output_tokens, *limits])


# ---- usage and tool calls -------------------------------------------------------------------------


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    """A list field of an answer as a list; anything else (an upstream that sent a number) as empty."""
    return value if isinstance(value, list) else []


def _chat_usage(raw: dict) -> TokenUsage:
    return TokenUsage(
        input_tokens=_int(raw.get("prompt_tokens")) or 0,
        output_tokens=_int(raw.get("completion_tokens")) or 0,
        cache_read_input_tokens=_int(_dict(raw.get("prompt_tokens_details")).get("cached_tokens")),
        reasoning_tokens=_int(_dict(raw.get("completion_tokens_details")).get("reasoning_tokens")),
    )


def _responses_usage(raw: dict) -> TokenUsage:
    return TokenUsage(
        input_tokens=_int(raw.get("input_tokens")) or 0,
        output_tokens=_int(raw.get("output_tokens")) or 0,
        cache_read_input_tokens=_int(_dict(raw.get("input_tokens_details")).get("cached_tokens")),
        reasoning_tokens=_int(_dict(raw.get("output_tokens_details")).get("reasoning_tokens")),
    )


def _anthropic_usage(raw: dict) -> TokenUsage:
    read = _int(raw.get("cache_read_input_tokens"))
    created = _int(raw.get("cache_creation_input_tokens"))
    return TokenUsage(
        input_tokens=(_int(raw.get("input_tokens")) or 0) + (read or 0) + (created or 0),
        output_tokens=_int(raw.get("output_tokens")) or 0,
        cache_read_input_tokens=read,
        cache_creation_input_tokens=created,
        server_search_requests=_int(_dict(raw.get("server_tool_use")).get("web_search_requests")),
        server_fetch_requests=_int(_dict(raw.get("server_tool_use")).get("web_fetch_requests")),
    )


def _chat_tool_calls(message: dict) -> int:
    return len(_list(message.get("tool_calls"))) + (1 if message.get("function_call") else 0)


def _responses_tool_calls(output: Any) -> int:
    # function_call, custom_tool_call, and hosted-tool items (web_search_call, ...); not their outputs.
    return sum(1 for item in _list(output) if str(_dict(item).get("type", "")).endswith("_call"))


def _searches(usage: TokenUsage | None, output: Any) -> TokenUsage | None:
    """Responses usage with the provider-side web searches of the answer's output items."""
    n = sum(1 for item in _list(output) if _dict(item).get("type") == "web_search_call")
    return usage.model_copy(update={"server_search_requests": n}) if usage is not None and n else usage


def _anthropic_tool_calls(content: Any) -> int:
    # tool_use, server_tool_use, mcp_tool_use
    return sum(1 for block in _list(content) if str(_dict(block).get("type", "")).endswith("tool_use"))


def tally_body(route: Route, body: Any) -> tuple[TokenUsage | None, int]:
    """Usage and tool calls of a complete (non-streamed) JSON answer."""
    body = _dict(body)
    usage = body.get("usage")
    if route is CHAT:
        calls = sum(_chat_tool_calls(_dict(_dict(c).get("message"))) for c in _list(body.get("choices")))
        return (_chat_usage(usage) if isinstance(usage, dict) else None), calls
    if route is RESPONSES:
        found = _responses_usage(usage) if isinstance(usage, dict) else None
        return _searches(found, body.get("output")), _responses_tool_calls(body.get("output"))
    if route is MESSAGES:
        return (_anthropic_usage(usage) if isinstance(usage, dict) else None), _anthropic_tool_calls(body.get("content"))
    if route is TRANSCRIPTIONS and isinstance(usage, dict) and usage.get("type") == "tokens":
        return _responses_usage(usage), 0  # gpt-4o-transcribe reports tokens; whisper-1 reports seconds only
    return None, 0


def multipart_summary(raw: bytes, content_type: str) -> dict[str, Any]:
    """What a multipart request carried, for the log: its text fields, and each file's name, type and size
    (never the file's bytes)."""
    from email.parser import BytesParser
    from email.policy import HTTP

    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    fields: dict[str, Any] = {}
    files: list[dict[str, Any]] = []
    for part in message.iter_parts() if message.is_multipart() else []:
        name = part.get_param("name", header="content-disposition")
        payload = cast(bytes | None, part.get_payload(decode=True)) or b""  # decoded: bytes (None if multipart)
        filename = part.get_filename()
        if filename is not None:
            files.append({"field": name, "filename": filename, "content_type": part.get_content_type(),
                          "bytes": len(payload)})
        elif isinstance(name, str):
            fields[name] = payload.decode("utf-8", "replace")[:200]
    return {"fields": fields, "files": files}


class StreamTally:
    """Usage and tool calls of a streamed answer, fed one parsed event at a time."""

    def __init__(self, route: Route) -> None:
        self.route = route
        self._usage: dict | None = None  # raw usage fields, API-specific
        self._chat_calls: set[tuple[Any, Any]] = set()
        self._calls_done = 0  # Responses: tool items seen finishing
        self._calls_final: int | None = None  # Responses: tool items in the final response
        self._output: list = []  # Responses: output items seen finishing (or the final response's)
        self._anthropic_calls = 0

    def feed(self, data: Any) -> None:
        if not isinstance(data, dict):
            return
        if self.route is CHAT:
            self._feed_chat(data)
        elif self.route is RESPONSES:
            self._feed_responses(data)
        elif self.route is MESSAGES:
            self._feed_anthropic(data)

    def _feed_chat(self, chunk: dict) -> None:
        if isinstance(chunk.get("usage"), dict):
            self._usage = chunk["usage"]  # the final usage chunk (or a provider's running figure: last wins)
        for choice in _list(chunk.get("choices")):
            choice = _dict(choice)
            delta = _dict(choice.get("delta"))
            for call in _list(delta.get("tool_calls")):
                call = _dict(call)
                self._chat_calls.add((choice.get("index"), call.get("index", call.get("id"))))
            if _dict(delta.get("function_call")).get("name"):
                self._chat_calls.add((choice.get("index"), "function_call"))

    def _feed_responses(self, event: dict) -> None:
        kind = event.get("type")
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            response = _dict(event.get("response"))
            if isinstance(response.get("usage"), dict):
                self._usage = response["usage"]
            if isinstance(response.get("output"), list):
                self._calls_final = _responses_tool_calls(response["output"])
                self._output = list(response["output"]) or self._output
        elif kind == "response.output_item.done":
            self._calls_done += _responses_tool_calls([event.get("item")])
            self._output.append(event.get("item"))

    def _feed_anthropic(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "message_start":
            usage = _dict(_dict(event.get("message")).get("usage"))
            self._usage = dict(usage)
        elif kind == "message_delta":
            # Usage in message_delta is cumulative: each figure present replaces the one before.
            usage = _dict(event.get("usage"))
            merged = dict(self._usage or {})
            merged.update({k: v for k, v in usage.items() if v is not None})
            self._usage = merged
        elif kind == "content_block_start":
            self._anthropic_calls += _anthropic_tool_calls([event.get("content_block")])

    @property
    def usage(self) -> TokenUsage | None:
        if self._usage is None:
            return None
        if self.route is CHAT:
            return _chat_usage(self._usage)
        if self.route is RESPONSES:
            return _searches(_responses_usage(self._usage), self._output)
        return _anthropic_usage(self._usage)

    @property
    def tool_calls(self) -> int:
        if self.route is CHAT:
            return len(self._chat_calls)
        if self.route is RESPONSES:
            return self._calls_final if self._calls_final is not None else self._calls_done
        return self._anthropic_calls


def is_usage_only_chunk(data: Any) -> bool:
    """The chat-stream chunk that `include_usage` adds: usage and no choices."""
    return isinstance(data, dict) and data.get("choices") == [] and isinstance(data.get("usage"), dict)


# ---- errors the gateway answers itself ------------------------------------------------------------


def error_body(family: Family, kind: str, message: str, **extra: Any) -> dict[str, Any]:
    """An error in the API's own shape, so that the agent's SDK surfaces `message`."""
    if family == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message, **extra}}
    return {"error": {"message": message, "type": kind, "code": kind, "param": None, **extra}}
