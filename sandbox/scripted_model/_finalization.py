"""The scripted model's side of a finalization stage (paper 002, App. C.2.3), in all three APIs.

The gateway's finalization request ends with the final-answer prompt (`sandbox.models.FINAL_ANSWER_PROMPT`) as
the last user message, with no tools. The scripted model recognises it there and answers with the script's
`finalization` text. A script (chat script or shell episode) may also set `finalization_first`, the answer to the
stage's first request only, to exercise the rejection path: a text (`""`: an empty answer), or an object
`{"content": TEXT, "tool_calls": [{"id", "name", "arguments"}], "truncated": true}` (a tool call, or an answer cut
at the token cap). The second request, which carries the retry note (`FINALIZATION_RETRY_NOTE`) after the prompt,
gets `finalization`. Without `finalization`, the script's last step's text answers; without a matching script,
a sentence saying so.
"""

import json
import time
from typing import Any

from sandbox.models import FINAL_ANSWER_PROMPT, FINALIZATION_RETRY_NOTE

from ._episodes import NO_SCRIPT, _texts, tokens

_RETRY_MARK = FINALIZATION_RETRY_NOTE.split("{", 1)[0]


def _last_user_text(route: str, body: dict) -> str:
    if route == "responses":
        items = body.get("input")
        if isinstance(items, str):
            return items
        users = [i for i in items or [] if isinstance(i, dict) and i.get("type", "message") == "message"
                 and i.get("role") == "user"]
    else:
        users = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    return _texts(users[-1].get("content")) if users else ""


def _user_texts(route: str, body: dict) -> str:
    if route == "responses":
        items = body.get("input")
        if isinstance(items, str):
            return items
        return " ".join(_texts(i.get("content")) for i in items or [] if isinstance(i, dict) and i.get("role") == "user")
    return " ".join(_texts(m.get("content")) for m in body.get("messages") or []
                    if isinstance(m, dict) and m.get("role") == "user")


def is_finalization(route: str, body: dict) -> bool:
    """Whether the request is a finalization request: the final-answer prompt in its last user message."""
    return FINAL_ANSWER_PROMPT in _last_user_text(route, body)


def _reply(route: str, body: dict, entries: list) -> tuple[dict, str | None]:
    """What to answer ({content, tool_calls, truncated}) and the model name, for a finalization request."""
    text = _user_texts(route, body)
    entry = next((e for e in entries if e.match and e.match in text), None)
    if entry is None:
        return {"content": NO_SCRIPT}, None
    retry = _RETRY_MARK in _last_user_text(route, body)
    first = getattr(entry, "finalization_first", None)
    if not retry and first is not None:
        return ({"content": first} if isinstance(first, str) else dict(first)), entry.model
    final = getattr(entry, "finalization", None)
    if final is None:
        final = next((s.get("content") for s in reversed(entry.steps) if s.get("content")), None) or "Done."
    return {"content": final}, entry.model


def finalization_answer(route: str, body: dict, entries: list) -> dict:
    """The answer to a finalization request in the API of `route` (`chat_completions`, `messages`, `responses`).
    `entries` are the chat scripts and shell episodes (each has `match`, `model`, `steps` and the two fields)."""
    spec, model = _reply(route, body, entries)
    model = model or body.get("model") or "scripted-demo"
    content = spec.get("content") or ""
    calls = spec.get("tool_calls") or []
    truncated = bool(spec.get("truncated"))
    stamp = int(time.time() * 1000)
    if route == "messages":
        blocks: list[dict[str, Any]] = [{"type": "text", "text": content}] if content else []
        blocks += [{"type": "tool_use", "id": c.get("id", f"toolu_final_{i}"), "name": c["name"],
                    "input": c.get("arguments", {})} for i, c in enumerate(calls)]
        stop = "max_tokens" if truncated else "tool_use" if calls else "end_turn"
        prompt = tokens(body.get("messages") or []) + tokens(body.get("system") or "")
        return {"id": f"msg_scripted_final_{stamp}", "type": "message", "role": "assistant", "model": model,
                "content": blocks, "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": prompt, "output_tokens": tokens(blocks)}}
    if route == "responses":
        rid = f"resp_scripted_final_{stamp}"
        output: list[dict[str, Any]] = []
        if content:
            output.append({"type": "message", "id": f"msg_{rid}", "role": "assistant", "status": "completed",
                           "content": [{"type": "output_text", "text": content, "annotations": []}]})
        output += [{"type": "function_call", "id": f"fc_{rid}_{i}", "call_id": c.get("id", f"call_final_{i}"),
                    "name": c["name"], "arguments": json.dumps(c.get("arguments", {})), "status": "completed"}
                   for i, c in enumerate(calls)]
        prompt, completion = tokens(body.get("input") or []) + tokens(body.get("instructions") or ""), tokens(output)
        return {"id": rid, "object": "response", "created_at": int(time.time()), "model": model,
                "status": "incomplete" if truncated else "completed",
                "incomplete_details": {"reason": "max_output_tokens"} if truncated else None, "output": output,
                "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens": completion, "output_tokens_details": {"reasoning_tokens": 0},
                          "total_tokens": prompt + completion}}
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [{"id": c.get("id", f"call_final_{i}"), "type": "function", "function": {
            "name": c["name"], "arguments": json.dumps(c.get("arguments", {}))}} for i, c in enumerate(calls)]
    finish = "length" if truncated else "tool_calls" if calls else "stop"
    prompt, completion = tokens(body.get("messages") or []), tokens(message)
    return {"id": f"chatcmpl-scripted-final-{stamp}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}}
