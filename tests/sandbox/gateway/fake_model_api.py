"""A fake paid model API on 127.0.0.1, for the gateway tests and benchmark.

`FakeModelApi("openai", key)` speaks OpenAI Chat Completions and Responses (and lists models);
`FakeModelApi("anthropic", key)` speaks Anthropic Messages. Both check the real key the way the
real APIs do, answer with the usage figures and tool calls a test sets, stream realistic SSE
events (with optional pauses), can fail the next requests with chosen statuses, can give the next
model answers other settings (`next_answers`: a tool call, an empty text, an answer cut at the token
cap), and keep every request they received. `LoopThread` runs them (and the gateway) on an event loop in a thread so
that tests can stay plain synchronous functions.
"""

import asyncio
import dataclasses
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Received:
    """One request as the fake API saw it."""

    method: str
    path: str  # query string included
    headers: dict[str, str]
    body: Any


async def _reread(request: web.Request, raw: bytes):
    """A multipart reader over a body already read."""
    from aiohttp import MultipartReader
    from aiohttp.streams import StreamReader

    stream = StreamReader(request.protocol, len(raw) + 1)
    stream.feed_data(raw)
    stream.feed_eof()
    return MultipartReader(request.headers, stream)


def messages_problem(body: dict) -> str | None:
    """What the Messages API refuses in a request (its documented rules, which the real API answers with 400
    invalid_request_error): turns that do not alternate starting with the user, tool blocks without tools, and a
    tool_result that answers no tool_use of the assistant turn just before it."""
    messages = body.get("messages") or []
    roles = [m.get("role") for m in messages]
    if not roles or roles[0] != "user" or any(a == b for a, b in zip(roles, roles[1:], strict=False)):
        return f"messages: roles must alternate between user and assistant, starting with user (got {roles})"
    blocks = [(i, b) for i, m in enumerate(messages) if isinstance(m.get("content"), list)
              for b in m["content"] if isinstance(b, dict)]
    if any(b.get("type") in ("tool_use", "tool_result") for _, b in blocks) and not body.get("tools"):
        return "Requests which include `tool_use` or `tool_result` blocks must define tools."
    for i, block in blocks:
        if block.get("type") == "tool_result":
            before = messages[i - 1].get("content") if i else None
            uses = {b.get("id") for b in before if isinstance(b, dict) and b.get("type") == "tool_use"} \
                if isinstance(before, list) else set()
            if block.get("tool_use_id") not in uses:
                return (f"messages.{i}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding `tool_use` "
                        "block in the previous message.")
    return None


@dataclass
class FakeModelApi:
    family: str  # "openai" or "anthropic"
    api_key: str
    input_tokens: int = 100
    # prompt-cache figures: OpenAI counts cached tokens inside prompt_tokens (`cached_tokens`); Anthropic reports
    # cache reads and writes beside its (uncached) input_tokens
    cached_tokens: int = 0
    cache_write_tokens: int = 0  # Anthropic only
    omit_usage: bool = False  # Chat Completions answers carry no usage (as some compatible servers do)
    answer_delay_s: float = 0.0  # a model answer (not a failure) takes this long
    in_flight: int = 0  # requests being answered now
    starts: list[tuple[float, int, int | None]] = field(default_factory=list)  # (monotonic, in flight, failed with)
    output_tokens: int = 20
    tool_calls: int = 0  # tool-use blocks put in each answer
    web_searches: int = 0  # provider-side searches each answer reports (server_tool_use / web_search_call)
    # The provider's own web search: when a request offers its search tool (Anthropic `web_search_*`, Responses
    # `web_search*`), the answer runs one search for `search_query` and returns these (url, title) results, with
    # a citation of each. Like a leaky provider, it ignores blocked_domains unless `honour_filters`.
    search_results: list[tuple[str, str]] = field(default_factory=list)
    search_query: str = "pendant lamp safety"
    honour_filters: bool = False
    pieces: list[str] = field(default_factory=lambda: ["Hel", "lo, ", "wor", "ld!"])  # streamed text deltas
    event_pause_s: float = 0.0  # pause after every stream event
    first_event_pause_s: float = 0.0  # extra pause after the first stream event
    message_deltas: int = 1  # Anthropic: how many (cumulative) message_delta events close a stream
    break_after_events: int | None = None  # cut the connection after this many stream events
    fail_next: list[int] = field(default_factory=list)  # statuses to answer the next requests with, in order
    truncated: bool = False  # the answer stops at the token cap (length / max_tokens / incomplete)
    # settings for the next model answers, in order, e.g. {"tool_calls": 1}, {"pieces": []}, {"truncated": True}
    next_answers: list[dict[str, Any]] = field(default_factory=list)
    fail_headers: dict[str, str] = field(default_factory=dict)  # headers sent with those failures
    fail_message: str | None = None  # the failures' message (default: "fake upstream failure STATUS")
    echo_key: bool = False  # quote the presented key in answers, as an API quoting a bad key would
    received: list[Received] = field(default_factory=list)
    abandoned_streams: int = 0  # streams whose reader hung up before the end
    url: str = ""  # base URL, the equivalent of /v1, once started
    _runner: web.AppRunner | None = None

    # ---- lifecycle --------------------------------------------------------------------------

    async def start(self) -> str:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/v1/{path:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}/v1"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # ---- dispatch ---------------------------------------------------------------------------

    def _presented_key(self, request: web.Request) -> str | None:
        if self.family == "anthropic":
            return request.headers.get("x-api-key")
        auth = request.headers.get("Authorization", "")
        return auth[7:] if auth.startswith("Bearer ") else None

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
        if self.family == "anthropic":
            body = {"type": "error", "error": {"type": "api_error", "message": message}}
        else:
            body = {"error": {"message": message, "type": "server_error", "code": None, "param": None}}
        return web.json_response(body, status=status, headers=headers)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.in_flight += 1
        try:
            self.starts.append((time.monotonic(), self.in_flight, self.fail_next[0] if self.fail_next else None))
            return await self._answer(request)
        finally:
            self.in_flight -= 1

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        if request.content_type == "multipart/form-data":  # speech-to-text: the fields, and the file's bytes
            body = {}
            async for part in (await _reread(request, raw)):
                body[part.name] = await (part.read() if part.filename else part.text())
        else:
            body = json.loads(raw) if raw else None
        self.received.append(Received(request.method, request.path_qs, dict(request.headers), body))
        presented = self._presented_key(request)
        if presented != self.api_key:
            return self._error(401, f"Incorrect API key provided: {presented}")
        if self.family == "anthropic" and "anthropic-version" not in request.headers:
            return self._error(400, "anthropic-version header is required")
        if self.fail_next:
            status = self.fail_next.pop(0)
            note = f" (key {presented})" if self.echo_key else ""
            return self._error(status, self.fail_message or f"fake upstream failure {status}{note}", self.fail_headers)
        path = request.path.removeprefix("/v1")
        if path == "/messages" and isinstance(body, dict) and (problem := messages_problem(body)) is not None:
            return self._error(400, problem)
        if self.answer_delay_s:
            await asyncio.sleep(self.answer_delay_s)
        if path in ("/chat/completions", "/responses", "/messages") and self.next_answers:
            return await dataclasses.replace(self, next_answers=[], **self.next_answers.pop(0))._model(path, request, body)
        return await self._model(path, request, body)

    async def _model(self, path: str, request: web.Request, body: Any) -> web.StreamResponse:
        if request.method == "GET" and path == "/models":
            return web.json_response({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
        if self.family == "openai" and path == "/chat/completions":
            return await (self._chat_stream(request, body) if body.get("stream") else self._chat(body))
        if self.family == "openai" and path == "/responses":
            return await (self._responses_stream(request, body) if body.get("stream") else self._responses(body))
        if self.family == "anthropic" and path == "/messages":
            return await (self._messages_stream(request, body) if body.get("stream") else self._messages(body))
        if self.family == "openai" and path == "/audio/transcriptions":
            seconds = (len(body["file"]) - 44) / 32000  # 16 kHz mono 16-bit WAV
            return web.json_response({"task": "transcribe", "language": "english", "duration": seconds,
                                      "text": "one two", "segments": [
                                          {"id": 0, "start": 0.0, "end": seconds / 2, "text": " one"},
                                          {"id": 1, "start": seconds / 2, "end": seconds, "text": " two"}],
                                      "usage": {"type": "tokens", "input_tokens": 50, "output_tokens": 4,
                                                "total_tokens": 54}})
        if self.family == "anthropic" and path == "/messages/count_tokens":
            return web.json_response({"input_tokens": self.input_tokens})
        return self._error(404, f"no route {request.method} {request.path}")

    def _text(self) -> str:
        text = "".join(self.pieces)
        return f"{text} (key {self.api_key})" if self.echo_key else text

    async def _send_events(self, request: web.Request, events: list[bytes]) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        for number, event in enumerate(events):
            if number == self.break_after_events:
                request.transport.abort()  # a dropped connection: no terminating chunk
                return response
            try:
                await response.write(event)
            except ConnectionResetError:  # the client (the gateway) went away
                self.abandoned_streams += 1
                return response
            pause = self.event_pause_s + (self.first_event_pause_s if number == 0 else 0.0)
            if pause:
                await asyncio.sleep(pause)
        await response.write_eof()
        return response

    # ---- provider-side search ----------------------------------------------------------------

    def _search_tool(self, body: dict) -> dict | None:
        for tool in body.get("tools") or []:
            kind = str(tool.get("type") or "")
            if (self.family == "anthropic" and kind.startswith("web_search_")) or (
                    self.family == "openai" and kind.startswith("web_search")):
                return tool
        return None

    def _found(self, tool: dict) -> list[tuple[str, str]]:
        blocked = tool.get("blocked_domains") or (tool.get("filters") or {}).get("blocked_domains") or []
        if not self.honour_filters:
            return list(self.search_results)
        return [(u, t) for u, t in self.search_results if not any(b.split("/")[0] in u for b in blocked)]

    def _anthropic_search_blocks(self, tool: dict) -> list[dict]:
        found = self._found(tool)
        return [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": self.search_query}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
             "content": [{"type": "web_search_result", "url": u, "title": t, "encrypted_content": "enc", "page_age": None}
                         for u, t in found]},
            {"type": "text", "text": "Found.", "citations": [
                {"type": "web_search_result_location", "url": u, "title": t, "cited_text": t, "encrypted_index": "i"}
                for u, t in found]},
        ]  # fmt: skip

    def _responses_search_items(self, tool: dict) -> list[dict]:
        found = self._found(tool)
        return [
            {"type": "web_search_call", "id": "ws_1", "status": "completed",
             "action": {"type": "search", "query": self.search_query,
                        "sources": [{"type": "url", "url": u} for u, _t in found]}},
            {"type": "message", "id": "msg_ws", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Found.", "annotations": [
                 {"type": "url_citation", "url": u, "title": t, "start_index": 0, "end_index": 6} for u, t in found]}]},
        ]  # fmt: skip

    # ---- OpenAI Chat Completions ------------------------------------------------------------

    def _chat_usage(self) -> dict:
        return {
            "prompt_tokens": self.input_tokens,
            "completion_tokens": self.output_tokens,
            "total_tokens": self.input_tokens + self.output_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": 0},
        }

    async def _chat(self, body: dict) -> web.Response:
        message: dict[str, Any] = {"role": "assistant", "content": self._text()}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": f"call_{i}", "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}}
                for i in range(self.tool_calls)
            ]
        return web.json_response(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model"),
                "choices": [
                    {"index": 0, "message": message,
                     "finish_reason": "length" if self.truncated else "tool_calls" if self.tool_calls else "stop"}
                ],
                **({} if self.omit_usage else {"usage": self._chat_usage()}),
            }
        )

    async def _chat_stream(self, request: web.Request, body: dict) -> web.StreamResponse:
        with_usage = (body.get("stream_options") or {}).get("include_usage") is True

        def chunk(choices: list, usage: Any = None) -> bytes:
            data = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": body.get("model"),
                    "choices": choices}  # fmt: skip
            if with_usage:
                data["usage"] = usage
            return f"data: {json.dumps(data)}\n\n".encode()

        events = [chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])]
        events += [chunk([{"index": 0, "delta": {"content": piece}, "finish_reason": None}]) for piece in self.pieces]
        if self.echo_key:
            events.append(chunk([{"index": 0, "delta": {"content": f" (key {self.api_key})"}, "finish_reason": None}]))
        for i in range(self.tool_calls):
            start = {"index": i, "id": f"call_{i}", "type": "function", "function": {"name": "search", "arguments": ""}}
            events.append(chunk([{"index": 0, "delta": {"tool_calls": [start]}, "finish_reason": None}]))
            more = {"index": i, "function": {"arguments": '{"q": "x"}'}}
            events.append(chunk([{"index": 0, "delta": {"tool_calls": [more]}, "finish_reason": None}]))
        finish = "tool_calls" if self.tool_calls else "stop"
        events.append(chunk([{"index": 0, "delta": {}, "finish_reason": finish}]))
        if with_usage:
            events.append(chunk([], self._chat_usage()))
        events.append(b"data: [DONE]\n\n")
        return await self._send_events(request, events)

    # ---- OpenAI Responses -------------------------------------------------------------------

    def _response_object(self, body: dict, status: str) -> dict:
        output: list[dict] = [
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": self._text(), "annotations": []}]}
        ]  # fmt: skip
        output += [
            {"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}", "name": "search",
             "arguments": '{"q": "x"}', "status": "completed"}
            for i in range(self.tool_calls)
        ]  # fmt: skip
        output += [{"type": "web_search_call", "id": f"ws_{i}", "status": "completed",
                    "action": {"type": "search", "query": "x"}} for i in range(self.web_searches)]
        if (tool := self._search_tool(body)) is not None and self.search_results:
            output = self._responses_search_items(tool) + output
        if status == "completed" and self.truncated:
            status = "incomplete"
        done = status in ("completed", "incomplete")
        return {
            "id": "resp_fake",
            "object": "response",
            "status": status,
            "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
            "model": body.get("model"),
            "output": output if done else [],
            "usage": {
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "total_tokens": self.input_tokens + self.output_tokens,
                "input_tokens_details": {"cached_tokens": self.cached_tokens},
                "output_tokens_details": {"reasoning_tokens": 0},
            }
            if done
            else None,
        }

    async def _responses(self, body: dict) -> web.Response:
        return web.json_response(self._response_object(body, "completed"))

    async def _responses_stream(self, request: web.Request, body: dict) -> web.StreamResponse:
        def event(kind: str, **data: Any) -> bytes:
            return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()

        final = self._response_object(body, "completed")
        events = [event("response.created", response=self._response_object(body, "in_progress"))]
        events += [event("response.output_text.delta", item_id="msg_1", delta=piece) for piece in self.pieces]
        events += [event("response.output_item.done", item=item) for item in final["output"]]
        events.append(event("response.completed", response=final))
        return await self._send_events(request, events)

    # ---- Anthropic Messages -----------------------------------------------------------------

    def _content(self, body: dict | None = None) -> list[dict]:
        tool = self._search_tool(body or {})
        blocks: list[dict] = self._anthropic_search_blocks(tool) if tool and self.search_results else []
        blocks.append({"type": "text", "text": self._text()})
        blocks += [
            {"type": "tool_use", "id": f"toolu_{i}", "name": "search", "input": {"q": "x"}}
            for i in range(self.tool_calls)
        ]
        return blocks

    async def _messages(self, body: dict) -> web.Response:
        return web.json_response(
            {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": body.get("model"),
                "content": self._content(body),
                "stop_reason": "max_tokens" if self.truncated else "tool_use" if self.tool_calls else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                          "cache_read_input_tokens": self.cached_tokens,
                          "cache_creation_input_tokens": self.cache_write_tokens,
                          **({"server_tool_use": {"web_search_requests": 1}}
                             if self._search_tool(body) and self.search_results else {})},
            }
        )

    async def _messages_stream(self, request: web.Request, body: dict) -> web.StreamResponse:
        def event(kind: str, **data: Any) -> bytes:
            return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()

        message = {"id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model"),
                   "content": [], "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": self.input_tokens, "output_tokens": 1}}  # fmt: skip
        events = [event("message_start", message=message)]
        searched = self._anthropic_search_blocks(tool) if (tool := self._search_tool(body)) and self.search_results else []
        if searched:  # as the API streams them: the query as input_json_delta, the results whole, citations
            use, result, cited = searched
            events.append(event("content_block_start", index=0, content_block={**use, "input": {}}))
            events.append(event("content_block_delta", index=0,
                                delta={"type": "input_json_delta", "partial_json": json.dumps(use["input"])}))
            events.append(event("content_block_stop", index=0))
            events.append(event("content_block_start", index=1, content_block=result))
            events.append(event("content_block_stop", index=1))
            events.append(event("content_block_start", index=2, content_block={"type": "text", "text": ""}))
            events += [event("content_block_delta", index=2, delta={"type": "citations_delta", "citation": c})
                       for c in cited["citations"]]
            events.append(event("content_block_delta", index=2, delta={"type": "text_delta", "text": cited["text"]}))
            events.append(event("content_block_stop", index=2))
        base = 3 if searched else 0
        events.append(event("content_block_start", index=base, content_block={"type": "text", "text": ""}))
        events.append(event("ping"))
        pieces = self.pieces + ([f" (key {self.api_key})"] if self.echo_key else [])
        events += [
            event("content_block_delta", index=base, delta={"type": "text_delta", "text": piece}) for piece in pieces
        ]
        events.append(event("content_block_stop", index=base))
        for i in range(self.tool_calls):
            block = {"type": "tool_use", "id": f"toolu_{i}", "name": "search", "input": {}}
            events.append(event("content_block_start", index=base + i + 1, content_block=block))
            delta = {"type": "input_json_delta", "partial_json": '{"q": "x"}'}
            events.append(event("content_block_delta", index=base + i + 1, delta=delta))
            events.append(event("content_block_stop", index=base + i + 1))
        stop = "tool_use" if self.tool_calls else "end_turn"
        for step in range(1, self.message_deltas + 1):
            # Cumulative: each message_delta carries the output so far, the last one the total.
            so_far = self.output_tokens * step // self.message_deltas
            usage = {"output_tokens": so_far}
            if self.web_searches or searched:
                usage["server_tool_use"] = {"web_search_requests": self.web_searches or 1}
            events.append(event("message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage=usage))
        events.append(event("message_stop"))
        return await self._send_events(request, events)


class LoopThread:
    """An asyncio event loop in a daemon thread; `run(coro)` runs a coroutine there and waits for it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="fake-model-api-loop", daemon=True)
        self._thread.start()

    def run(self, coro, timeout: float = 60.0):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()
