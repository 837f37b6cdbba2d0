"""The scripted model server: chat completions for the reference agent (see the package docstring for the
script format), Anthropic Messages and OpenAI Responses for the real CLIs (see `_episodes`)."""

import json
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from sandbox.models import OPEN_QUESTION_TAG

from ._episodes import (
    Episode,
    chat_episode,
    load_episodes,
    messages_answer,
    messages_events,
    responses_answer,
    responses_events,
    tokens,
)
from ._finalization import finalization_answer, is_finalization
from ._mcq import is_mcq, mcq_answer

SCRIPTS_DIR = Path(__file__).parent / "scripts"


@dataclass(frozen=True)
class Script:
    task: str
    match: str
    model: str
    steps: list
    finalization: str | None = None  # the answer to a finalization request (see _finalization)
    finalization_first: Any = None  # the first finalization request's answer only: a text or {content, tool_calls, truncated}


def load_scripts(folder: Path = SCRIPTS_DIR) -> list[Script]:
    out = []
    for path in sorted(folder.glob("*.json")):
        d = json.loads(path.read_text("utf-8"))
        out.append(Script(d.get("task", path.stem), d["match"], d.get("model", "scripted-demo"), d["steps"],
                          d.get("finalization"), d.get("finalization_first")))
    return out


class _Missing(Exception):
    pass


def _tool_results(messages: list[dict]) -> dict[str, object]:
    out = {}
    for m in messages:
        if m.get("role") == "tool" and m.get("tool_call_id"):
            try:
                out[m["tool_call_id"]] = json.loads(m.get("content") or "null")
            except (json.JSONDecodeError, TypeError):
                out[m["tool_call_id"]] = None
    return out


def _lookup(results: dict, ref: str):
    call_id, _, path = ref.partition(".")
    if call_id not in results:
        raise _Missing(ref)
    value = results[call_id]
    if isinstance(value, dict) and "error" in value and len(value) == 1:
        raise _Missing(ref)
    for part in [p for p in path.split(".") if p]:
        try:
            value = value[int(part)] if isinstance(value, list) else value[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise _Missing(ref) from None
    return value


def open_questions(instruction: str) -> list[str]:
    """The claims an evidence brief in the instruction marks as open questions (calibration's R3)."""
    return re.findall(rf"^- \[\S+ {OPEN_QUESTION_TAG}\] (.+)$", instruction, re.MULTILINE)


def _resolve(value, results: dict, under_list: bool = False, brief: tuple[str, ...] = ()):
    """Replace refs. A missing value drops the nearest enclosing list item; outside any list it becomes null.
    `{"$given": REF, "value": V}` is V when REF resolves, else missing.
    `{"$brief": "open_questions", "prefix": P}` is P and the brief's open questions, missing without a brief."""
    if isinstance(value, dict):
        if set(value) == {"$ref"}:
            return _lookup(results, value["$ref"])
        if set(value) == {"$given", "value"}:  # the value, once the tool call it names has succeeded
            _lookup(results, value["$given"])
            return _resolve(value["value"], results, under_list, brief)
        if "$brief" in value:
            if not brief:
                raise _Missing("$brief")
            return value.get("prefix", "") + " ".join(brief)
        if set(value) == {"$join"}:  # concatenation of texts; a missing part is left out
            parts = []
            for part in value["$join"]:
                try:
                    parts.append(str(_resolve(part, results, brief=brief)))
                except _Missing:
                    continue
            return "".join(parts)
        out = {}
        for k, v in value.items():
            try:
                out[k] = _resolve(v, results, under_list, brief)
            except _Missing:
                if under_list:
                    raise
                out[k] = None
        return out
    if isinstance(value, list):
        items = []
        for v in value:
            try:
                items.append(_resolve(v, results, True, brief))
            except _Missing:
                continue
        return items
    return value


def _resolve_top(value, results: dict, brief: tuple[str, ...] = ()):
    try:
        return _resolve(value, results, brief=brief)
    except _Missing:
        return None


def _effective_steps(script: Script, offered: set[str]) -> list[dict]:
    steps = []
    for step in script.steps:
        calls = [c for c in step.get("tool_calls", []) if c["name"] in offered]
        if step.get("tool_calls") and not calls and not step.get("final"):
            continue
        steps.append({**step, "tool_calls": calls})
    return steps


def answer(body: dict, scripts: list[Script]) -> dict:
    """The chat.completion object for one request."""
    messages = body.get("messages") or []
    first_user = next((m.get("content") for m in messages if m.get("role") == "user"), "") or ""
    if isinstance(first_user, list):
        first_user = " ".join(p.get("text", "") for p in first_user if isinstance(p, dict))
    script = next((s for s in scripts if s.match in first_user), None)
    offered = {t.get("function", {}).get("name") for t in body.get("tools") or []}
    if script is None:
        message: dict = {"role": "assistant", "content": "The scripted model has no script for this instruction."}
        finish, model = "stop", body.get("model", "scripted")
    else:
        steps = _effective_steps(script, offered)
        n = sum(1 for m in messages if m.get("role") == "assistant")
        # past the end (e.g. a repair turn the script did not plan): repeat the final answer without tools
        step: dict = steps[n] if n < len(steps) else {"content": steps[-1].get("content") or "Done."}
        results = _tool_results(messages)
        calls = []
        for c in step.get("tool_calls") or []:
            args = _resolve_top(c.get("arguments", {}), results, tuple(open_questions(first_user)))
            calls.append({"id": c["id"], "type": "function",
                          "function": {"name": c["name"], "arguments": json.dumps(args, ensure_ascii=False)}})
        message = {"role": "assistant", "content": step.get("content")}
        if calls:
            message["tool_calls"] = calls
        finish, model = ("tool_calls" if calls else "stop"), script.model
    prompt, completion = tokens(messages) + tokens(body.get("tools") or []), tokens(message)
    return {"id": f"chatcmpl-scripted-{int(time.time() * 1000)}", "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}}


def _stream_chunks(full: dict) -> list[dict]:
    msg = full["choices"][0]["message"]
    delta = {"role": "assistant", "content": msg.get("content")}
    if msg.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(msg["tool_calls"])]
    base = {"id": full["id"], "object": "chat.completion.chunk", "created": full["created"], "model": full["model"]}
    return [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": full["choices"][0]["finish_reason"]}]},
            {**base, "choices": [], "usage": full["usage"]}]


# What `--api` lets the server speak: the routes an OpenAI-compatible or an Anthropic-compatible server has.
API_ROUTES = {"all": ("/chat/completions", "/responses", "/messages"),
              "openai": ("/chat/completions", "/responses"), "openai-chat": ("/chat/completions",),
              "anthropic": ("/messages",)}


class _Handler(BaseHTTPRequestHandler):
    """The scripted model's HTTP handler; `make_handler` gives it its scripts, episodes and APIs."""

    protocol_version = "HTTP/1.1"
    scripts: ClassVar[list[Script]] = []
    episodes: ClassVar[list[Episode]] = []
    api: ClassVar[str] = "all"

    def log_message(self, *args):
        pass

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            return self._send(200, {"object": "list", "data": [
                {"id": m, "object": "model", "owned_by": "omnidr"} for m in sorted({s.model for s in self.scripts})]})
        self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self):
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        except json.JSONDecodeError:
            return self._send(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
        route = self.path.split("?", 1)[0].rstrip("/")
        routes = API_ROUTES[self.api]
        if not route.endswith(routes):
            return self._send(404, {"error": {"message": f"this scripted model speaks {self.api} only: "
                                              f"{', '.join(routes)}", "type": "invalid_request_error"}})
        api_name = ("messages" if route.endswith("/messages") else "responses" if route.endswith("/responses")
                    else "chat_completions")
        entries = [*self.scripts, *self.episodes]  # what a finalization request may match
        final = finalization_answer(api_name, body, entries) if is_finalization(api_name, body) else None
        if route.endswith("/messages"):
            return self._episode(body, final or messages_answer(body, self.episodes), messages_events)
        if route.endswith("/responses"):
            return self._episode(body, final or responses_answer(body, self.episodes), responses_events)
        if not route.endswith("/chat/completions"):
            return self._send(404, {"error": {"message": "only chat completions, messages and responses",
                                              "type": "invalid_request_error"}})
        return self._chat_completion(body, final)

    def _chat_completion(self, body: dict, final: dict | None) -> None:
        if final is None and is_mcq(body):  # the direct runner's multiple-choice request
            final = mcq_answer(body)
        full = final or chat_episode(body, self.episodes) or answer(body, self.scripts)
        msg = full["choices"][0]["message"]
        print(json.dumps({"messages": len(body.get("messages") or []), "model": full["model"],
                          "tool_calls": [c["function"]["name"] for c in msg.get("tool_calls", [])],
                          "usage": full["usage"]}), flush=True)
        if not body.get("stream"):
            return self._send(200, full)
        self._stream([b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n"
                      for chunk in _stream_chunks(full)] + [b"data: [DONE]\n\n"])

    def _episode(self, body: dict, full: dict, events) -> None:
        """A CLI episode's answer (Messages or Responses), whole or as named SSE events."""
        calls = [b.get("name") for b in full.get("content") or full.get("output") or []
                 if b.get("type") in ("tool_use", "function_call")]
        print(json.dumps({"route": self.path, "model": full["model"], "tool_calls": calls,
                          "usage": full["usage"]}), flush=True)
        if not body.get("stream"):
            return self._send(200, full)
        self._stream([f"event: {name}\ndata: ".encode() + json.dumps(data, ensure_ascii=False).encode() + b"\n\n"
                      for name, data in events(full)])

    def _stream(self, frames: list[bytes]) -> None:
        """An SSE answer: the frames, then the connection closes."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for frame in frames:
            self.wfile.write(frame)
        self.close_connection = True


def make_handler(scripts: list[Script], episodes: Sequence[Episode] = (), api: str = "all") -> type[_Handler]:
    """A handler class that answers from `scripts` and `episodes`, on the routes `api` has (API_ROUTES)."""
    return type("Handler", (_Handler,), {"scripts": list(scripts), "episodes": list(episodes), "api": api})


def serve(port: int, scripts_dir: Path = SCRIPTS_DIR, host: str = "0.0.0.0", api: str = "all") -> None:
    scripts, episodes = load_scripts(scripts_dir), load_episodes(scripts_dir)
    print(json.dumps({"listening": f"{host}:{port}", "api": api, "scripts": [s.task for s in scripts],
                      "shell_episodes": [e.task for e in episodes]}), flush=True)
    ThreadingHTTPServer((host, port), make_handler(scripts, episodes, api)).serve_forever()


if __name__ == "__main__":
    serve(int(sys.argv[1]) if len(sys.argv) > 1 else 9000)
