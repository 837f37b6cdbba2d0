"""Scripted shell episodes for real agent CLIs: the same model stand-in, speaking Anthropic Messages
(Claude Code) and OpenAI Responses (Codex), streamed or not.

A CLI episode (`scripts/shell/<task_id>.json`) is the model's side of a conversation with a coding
agent whose only tool the script uses is its shell:

    {"task": "...", "match": "<text of the instruction>", "model": "scripted-demo",
     "steps": [{"content": "...", "commands": [{"command": "ffprobe ...", "description": "..."}]},
               ..., {"content": "final answer", "final": true}]}

Each command becomes the CLI's own shell tool call: `Bash` {command, description} for Claude Code,
`exec_command` {cmd} (or the older `shell` {command: [...]}) for Codex. A step's `webfetch` items
({url, prompt}) become Claude Code `WebFetch` calls, its `websearch` items ({query, results: [{url,
title}]}) `WebSearch` calls, and its `load_tools` a `ToolSearch` call that loads deferred tools first;
Codex has none of them and skips them. Claude Code runs WebSearch as its own Messages request offering
the provider's `web_search` server tool: the server then plays the provider, running the search on the
`results` of the episode item whose query the request names (`provider_search_answer`). The server stays
stateless: tool
call ids carry the step number (`toolu_omnidr_s<N>_<i>`, `call_omnidr_s<N>_<i>`), so the answer to a
request is the step after the highest one found in its history. A re-sent request gets the same answer,
and requests that are not the episode (a CLI's background calls) get a short text answer.

This is a demonstration of the machinery (sandbox, gateway, proxy, parsers, evaluator), not a model's
work: the research content of each episode is derived offline from the task's fact library.
"""

import json
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STEP_ID = re.compile(r"_omnidr_s(\d+)_[wtq]?\d+$")
NO_SCRIPT = "The scripted model has no script for this request."


@dataclass(frozen=True)
class Episode:
    task: str
    match: str
    model: str
    steps: list
    finalization: str | None = None  # the answer to a finalization request (see _finalization)
    finalization_first: Any = None  # the first finalization request's answer only


def load_episodes(folder: Path) -> list[Episode]:
    out = []
    for path in sorted((folder / "shell").glob("*.json")) if (folder / "shell").is_dir() else []:
        d = json.loads(path.read_text("utf-8"))
        out.append(Episode(d.get("task", path.stem), d["match"], d.get("model", "scripted-demo"), d["steps"],
                           d.get("finalization"), d.get("finalization_first")))
    return out


def tokens(obj) -> int:
    """About 4 characters a token; an image part (chat `image_url`, Messages `image`, Responses
    `input_image`) counts as a flat 85 tokens, not its base64 length. Every API of the server counts so."""
    def strip(x):
        if isinstance(x, dict):
            if x.get("type") in ("image_url", "image", "input_image"):
                return "i" * 340
            return {k: strip(v) for k, v in x.items()}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x
    return max(1, math.ceil(len(json.dumps(strip(obj), ensure_ascii=False)) / 4))


def _texts(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _find(episodes: list[Episode], text: str) -> Episode | None:
    return next((e for e in episodes if e.match and e.match in text), None)


def _step(episode: Episode, ids: list[str | None]) -> tuple[int, dict]:
    """(number, step) of the answer: one past the highest step a tool call id names."""
    seen = [int(m.group(1)) for i in ids if (m := STEP_ID.search(i or ""))]
    n = max(seen) + 1 if seen else 0
    if n < len(episode.steps):
        return n, episode.steps[n]
    return n, {"content": episode.steps[-1].get("content") or "Done.", "final": True}


# ---- Anthropic Messages ------------------------------------------------------------------------------

def _server_search_tool(body: dict) -> dict | None:
    return next((t for t in body.get("tools") or [] if str(t.get("type", "")).startswith("web_search_")), None)


def provider_search_answer(body: dict, episodes: list[Episode]) -> dict:
    """The provider's side of a request offering its `web_search` server tool (Claude Code's WebSearch): one
    search for the episode query the request names, answered as the API does (server_tool_use, then
    web_search_tool_result, then text). Like some real providers, it applies no domain filter itself."""
    text = " ".join(_texts(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "user")
    items = [w for e in episodes for step in e.steps for w in step.get("websearch") or []]
    item = next((w for w in items if w.get("query") and w["query"] in text), None)
    query = item["query"] if item else text[-200:]
    results = (item or {}).get("results") or []
    content = [
        {"type": "server_tool_use", "id": "srvtoolu_omnidr_1", "name": "web_search", "input": {"query": query}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_omnidr_1",
         "content": [{"type": "web_search_result", "url": r["url"], "title": r.get("title", r["url"]),
                      "encrypted_content": "scripted", "page_age": None} for r in results]},
        {"type": "text", "text": f"The search for {query!r} found {len(results)} pages."},
    ]
    prompt = tokens(body.get("messages") or []) + tokens(body.get("system") or "")
    return {"id": f"msg_scripted_{int(time.time() * 1000)}", "type": "message", "role": "assistant",
            "model": body.get("model") or "scripted-demo", "content": content, "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": prompt, "output_tokens": tokens(content),
                                             "server_tool_use": {"web_search_requests": 1}}}


def _episode_blocks(episode: Episode, calls: list[dict], offered: set[str | None]) -> list[dict]:
    """The next step of `episode` as Messages content blocks (text, tool_use), whatever API carries them.

    `calls` are the tool calls already in the conversation ({id, name, input}); `offered` the tool names the
    request offers. The shell commands become the offered shell tool (Claude Code's `Bash`, Codex's
    `exec_command` or `shell`), so an episode plays under either CLI on any API the gateway translates to."""
    n, step = _step(episode, [c.get("id") for c in calls])
    content: list[dict] = []
    if step.get("content"):
        content.append({"type": "text", "text": step["content"]})
    for i, c in enumerate([] if step.get("final") else step.get("commands") or []):
        call = _shell_call(offered, c["command"], c.get("description", "Run a command"))
        if call is None:
            raise ValueError(f"no shell tool is offered: {sorted(map(str, offered))}")
        name, args = call
        content.append({"type": "tool_use", "id": f"toolu_omnidr_s{n}_{i}", "name": name, "input": args})
    # Claude Code's own page reader (its fetch goes through the egress proxy, and it asks the model
    # to read the page: a web sub-request the gateway counts). Claude Code 2.1 defers it: the model
    # loads it with ToolSearch first (`load_tools`), then calls it (`webfetch`).
    loaded = offered | {name for c in calls if c.get("name") == "ToolSearch"
                        for name in ("WebFetch", "WebSearch") if name in str((c.get("input") or {}).get("query"))}
    wanted = [] if step.get("final") else [t for t in step.get("load_tools") or [] if t not in loaded]
    if wanted and "ToolSearch" in offered:
        content.append({"type": "tool_use", "id": f"toolu_omnidr_s{n}_t0", "name": "ToolSearch",
                        "input": {"query": "select:" + ",".join(wanted), "max_results": len(wanted)}})
    for j, f in enumerate([] if step.get("final") or "WebFetch" not in loaded else step.get("webfetch") or []):
        content.append({"type": "tool_use", "id": f"toolu_omnidr_s{n}_w{j}", "name": "WebFetch",
                        "input": {"url": f["url"], "prompt": f["prompt"]}})
    for j, w in enumerate([] if step.get("final") or "WebSearch" not in loaded else step.get("websearch") or []):
        content.append({"type": "tool_use", "id": f"toolu_omnidr_s{n}_q{j}", "name": "WebSearch",
                        "input": {"query": w["query"]}})
    return content


def messages_answer(body: dict, episodes: list[Episode]) -> dict:
    """The Messages API `message` object for one request."""
    if _server_search_tool(body) is not None:
        return provider_search_answer(body, episodes)
    messages = body.get("messages") or []
    first_user = next((_texts(m.get("content")) for m in messages if m.get("role") == "user"), "")
    episode = _find(episodes, first_user)
    offered = {t.get("name") for t in body.get("tools") or []}
    content: list[dict] = []
    model = body.get("model") or "scripted-demo"
    if episode is None or _shell_call(offered, "true") is None:
        content.append({"type": "text", "text": NO_SCRIPT if episode is None else "No shell tool is offered."})
        stop = "end_turn"
    else:
        calls = [b for m in messages if m.get("role") == "assistant" and isinstance(m.get("content"), list)
                 for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
        content = _episode_blocks(episode, calls, offered)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        model = episode.model
    prompt = tokens(messages) + tokens(body.get("system") or "") + tokens(body.get("tools") or [])
    return {"id": f"msg_scripted_{int(time.time() * 1000)}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": tokens(content)}}


def chat_episode(body: dict, episodes: list[Episode]) -> dict | None:
    """A CLI episode played over Chat Completions (the CLI's own API translated by the gateway for an
    OpenAI-compatible model), or None when the request is not one (the reference agent's scripts answer)."""
    messages = body.get("messages") or []
    users = " ".join(_texts(m.get("content")) for m in messages if m.get("role") == "user")
    episode = _find(episodes, users)
    offered = {(t.get("function") or {}).get("name") for t in body.get("tools") or []}
    if episode is None or _shell_call(offered, "true") is None:
        return None
    calls = []
    for m in messages:
        for c in m.get("tool_calls") or [] if m.get("role") == "assistant" else []:
            try:
                arguments = json.loads((c.get("function") or {}).get("arguments") or "{}")
            except ValueError:
                arguments = {}
            calls.append({"id": c.get("id"), "name": (c.get("function") or {}).get("name"), "input": arguments})
    blocks = _episode_blocks(episode, calls, offered)
    text = "".join(b["text"] for b in blocks if b["type"] == "text")
    reply: dict = {"role": "assistant", "content": text or None}
    uses = [b for b in blocks if b["type"] == "tool_use"]
    if uses:
        reply["tool_calls"] = [{"id": b["id"], "type": "function", "function": {
            "name": b["name"], "arguments": json.dumps(b["input"], ensure_ascii=False)}} for b in uses]
    prompt, completion = tokens(messages) + tokens(body.get("tools") or []), tokens(reply)
    return {"id": f"chatcmpl-scripted-{int(time.time() * 1000)}", "object": "chat.completion",
            "created": int(time.time()), "model": episode.model,
            "choices": [{"index": 0, "message": reply, "finish_reason": "tool_calls" if uses else "stop",
                         "logprobs": None}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}}


def messages_events(message: dict) -> list[tuple[str, dict]]:
    """The SSE events of a streamed Messages answer. As the real API does, `message_start` reports one
    output token and `message_delta` the final count."""
    start = {**message, "content": [], "stop_reason": None,
             "usage": {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 1}}
    events: list[tuple[str, dict]] = [("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            events += [("content_block_start", {"type": "content_block_start", "index": i,
                                                "content_block": {"type": "text", "text": ""}}),
                       ("content_block_delta", {"type": "content_block_delta", "index": i,
                                                "delta": {"type": "text_delta", "text": block["text"]}})]
        elif "input" not in block:  # a server tool's result block arrives whole
            events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": block}))
        else:
            events += [("content_block_start", {"type": "content_block_start", "index": i,
                                                "content_block": {**block, "input": {}}}),
                       ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                           "type": "input_json_delta", "partial_json": json.dumps(block["input"], ensure_ascii=False)}})]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events += [("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                  "usage": {k: v for k, v in message["usage"].items() if k != "input_tokens"}}),
               ("message_stop", {"type": "message_stop"})]
    return events


# ---- OpenAI Responses --------------------------------------------------------------------------------

def _shell_call(offered, command: str, description: str = "Run a command") -> tuple[str, dict] | None:
    """The offered shell tool's call for `command`: Claude Code's Bash, Codex's exec_command or shell."""
    if "Bash" in offered:
        return "Bash", {"command": command, "description": description}
    if "exec_command" in offered:  # Codex's unified exec
        return "exec_command", {"cmd": command}
    if "shell" in offered:
        return "shell", {"command": ["bash", "-lc", command]}
    return None


def responses_answer(body: dict, episodes: list[Episode]) -> dict:
    """The Responses API `response` object for one request."""
    items = body.get("input") or []
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    users = " ".join(_texts(i.get("content")) for i in items if i.get("type", "message") == "message"
                     and i.get("role") == "user")
    episode = _find(episodes, users)
    offered = {t.get("name"): t for t in body.get("tools") or [] if t.get("type") == "function"}
    rid = f"resp_scripted_{int(time.time() * 1000)}"
    output: list[dict] = []
    model = body.get("model") or "scripted-demo"

    def say(text: str, k: int) -> None:
        output.append({"type": "message", "id": f"msg_{rid}_{k}", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]})

    if episode is None or _shell_call(offered, "true") is None:
        say(NO_SCRIPT if episode is None else "No shell tool is offered.", 0)
    else:
        ids = [i.get("call_id") for i in items if i.get("type") == "function_call"]
        n, step = _step(episode, ids)
        if step.get("content"):
            say(step["content"], 0)
        for i, c in enumerate([] if step.get("final") else step.get("commands") or []):
            call = _shell_call(offered, c["command"])
            if call is None:  # checked above: a shell tool is offered
                raise ValueError(f"no shell tool is offered: {sorted(map(str, offered))}")
            name, args = call
            output.append({"type": "function_call", "id": f"fc_{rid}_{i}", "call_id": f"call_omnidr_s{n}_{i}",
                           "name": name, "arguments": json.dumps(args, ensure_ascii=False), "status": "completed"})
        model = episode.model
    prompt = tokens(items) + tokens(body.get("instructions") or "") + tokens(body.get("tools") or [])
    completion = tokens(output)
    return {"id": rid, "object": "response", "created_at": int(time.time()), "status": "completed", "model": model,
            "output": output, "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0},
                                        "output_tokens": completion, "output_tokens_details": {"reasoning_tokens": 0},
                                        "total_tokens": prompt + completion}}


def responses_events(response: dict) -> list[tuple[str, dict]]:
    """The SSE events of a streamed Responses answer."""
    pending = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[tuple[str, dict]] = [("response.created", {"type": "response.created", "response": pending}),
                                      ("response.in_progress", {"type": "response.in_progress", "response": pending})]
    for k, item in enumerate(response["output"]):
        events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": k,
                                                      "item": {**item, "status": "in_progress"}}))
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append(("response.output_text.delta", {"type": "response.output_text.delta", "item_id": item["id"],
                                                          "output_index": k, "content_index": 0, "delta": text}))
        else:
            events.append(("response.function_call_arguments.delta", {
                "type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": k,
                "delta": item["arguments"]}))
        events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": k,
                                                     "item": item}))
    events.append(("response.completed", {"type": "response.completed", "response": response}))
    return events
