"""The finalization stage's requests and the rule that accepts or rejects their answers (paper 002, App. C.2.3).

When research ends without a complete answer, a separate, tool-free stage asks the model once more, from the
evidence research collected: the last conversation the agent sent through the gateway. `finalization_body` turns
that conversation into a finalization request of the same API: every tool and tool choice taken out, the
final-answer prompt appended as the last user message, the output-token cap set, never streamed, and the API's
rules kept (Chat: every tool call answered by a tool message; Messages: turns alternate, a tool_use is answered by
a tool_result at the start of the next user turn; Responses: every function call has its output).
`judge_answer` applies the acceptance rule: a non-empty text, not cut at the token cap, without a tool call.

Pure functions over JSON bodies; the gateway (`_app`) sends the requests and logs them.
"""

import copy
import json
from typing import Any

from sandbox.gateway._apis import CHAT, MESSAGES, RESPONSES, Route

NOT_RUN = "Not run: research ended before this tool call was carried out."
"""The result the stage gives a tool call the conversation left without one (the API requires an answer)."""

# What a finalization request must not carry: tools, tool choice, provider-side tools, streaming.
_TOOL_FIELDS = {
    CHAT.name: ("tools", "tool_choice", "parallel_tool_calls", "functions", "function_call", "web_search_options"),
    MESSAGES.name: ("tools", "tool_choice", "mcp_servers"),
    RESPONSES.name: ("tools", "tool_choice", "parallel_tool_calls", "max_tool_calls"),
}
_STREAM_FIELDS = ("stream", "stream_options")
THINKING_MIN_TOKENS = 1024  # the smallest thinking budget the Messages API takes


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def question_body(route: Route, model: str, question: str) -> dict[str, Any]:
    """The conversation when research sent no model request: the question as one user message."""
    if route is RESPONSES:
        return {"model": model, "input": [{"type": "message", "role": "user", "content": question}]}
    return {"model": model, "messages": [{"role": "user", "content": question}]}


def finalization_body(route: Route, body: dict[str, Any], prompt: str, max_tokens: int) -> tuple[dict[str, Any], list[str]]:
    """The finalization request for the research conversation `body` of API `route` (not changed), and one note
    per change made to it."""
    out = copy.deepcopy(body)
    notes: list[str] = []
    tools = out.get("tools")
    removed = [k for k in (*_TOOL_FIELDS[route.name], *_STREAM_FIELDS) if k in out]
    for key in removed:
        del out[key]
    if removed:
        notes.append(f"finalization: removed {', '.join(removed)}")
    if route is CHAT:
        _chat(out, prompt, max_tokens, notes)
    elif route is MESSAGES:
        _messages(out, prompt, max_tokens, notes)
        keep_tool_blocks_valid(out, tools, notes)
    else:
        _responses(out, prompt, max_tokens, notes)
    notes.append("finalization: the final-answer prompt appended as the last user message")
    return out, notes


def _chat(out: dict, prompt: str, max_tokens: int, notes: list[str]) -> None:
    messages: list = []
    source = _list(out.get("messages"))
    i = 0
    while i < len(source):
        message = source[i]
        messages.append(message)
        i += 1
        calls = [c.get("id") for c in _list(_dict(message).get("tool_calls")) if isinstance(c, dict)]
        if _dict(message).get("role") != "assistant" or not calls:
            continue
        answered = set()
        while i < len(source) and _dict(source[i]).get("role") == "tool":
            answered.add(source[i].get("tool_call_id"))
            messages.append(source[i])
            i += 1
        for call_id in calls:
            if call_id not in answered:
                messages.append({"role": "tool", "tool_call_id": call_id, "content": NOT_RUN})
                notes.append(f"finalization: tool call {call_id} had no result; answered as not run")
    messages.append({"role": "user", "content": prompt})
    out["messages"] = messages
    # the limit goes where the agent put it (an older server may know only max_tokens)
    field = "max_tokens" if "max_tokens" in out and "max_completion_tokens" not in out else "max_completion_tokens"
    out.pop("max_tokens", None)
    out.pop("max_completion_tokens", None)
    out[field] = max_tokens
    notes.append(f"finalization: {field} set to {max_tokens}")


def _text_blocks(content: Any) -> list:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(_list(content))


def _messages(out: dict, prompt: str, max_tokens: int, notes: list[str]) -> None:
    messages = list(_list(out.get("messages")))
    last = _dict(messages[-1]) if messages else {}
    uses = [b.get("id") for b in _list(last.get("content")) if _dict(b).get("type") == "tool_use"]
    if last.get("role") == "assistant" and uses:
        results = [{"type": "tool_result", "tool_use_id": use, "content": NOT_RUN} for use in uses]
        messages.append({"role": "user", "content": [*results, {"type": "text", "text": prompt}]})
        notes.append(f"finalization: tool_use {', '.join(map(str, uses))} had no tool_result; answered as not run")
    elif last.get("role") == "user":  # turns alternate: the prompt joins the last user turn, after its tool results
        messages[-1] = {**last, "content": [*_text_blocks(last.get("content")), {"type": "text", "text": prompt}]}
    else:
        messages.append({"role": "user", "content": prompt})
    out["messages"] = messages
    out["max_tokens"] = max_tokens
    notes.append(f"finalization: max_tokens set to {max_tokens}")
    thinking = _dict(out.get("thinking"))
    budget = thinking.get("budget_tokens")
    if thinking.get("type") == "enabled" and isinstance(budget, int) and budget >= max_tokens // 2:
        lowered = max_tokens // 2
        if lowered < THINKING_MIN_TOKENS:
            del out["thinking"]
            notes.append(f"finalization: thinking turned off (no room for {THINKING_MIN_TOKENS} thinking tokens "
                         f"and an answer within {max_tokens})")
        else:
            out["thinking"] = {**thinking, "budget_tokens": lowered}
            notes.append(f"finalization: thinking.budget_tokens lowered from {budget} to {lowered}, half the cap")


def _has_tool_blocks(messages: list) -> bool:
    return any(_dict(b).get("type") in ("tool_use", "tool_result") for m in messages
               for b in _list(_dict(m).get("content")))


def keep_tool_blocks_valid(out: dict, tools: Any, notes: list[str]) -> None:
    """A Messages request with tool_use or tool_result blocks must define tools (the API answers 400 otherwise).
    When the research request had tools, they stay, with tool choice `none` (the model cannot call any); when it
    had none (a translated conversation), each tool block is rendered as text, so the evidence stays readable."""
    messages = _list(out.get("messages"))
    if not _has_tool_blocks(messages) or out.get("tools"):
        return
    if _list(tools):
        out["tools"], out["tool_choice"] = tools, {"type": "none"}
        notes.append("finalization: tools kept with tool_choice none (the conversation holds tool blocks, which the "
                     "Messages API takes only with tools)")
        return
    for message in messages:
        content = _dict(message).get("content")
        if isinstance(content, list):
            message["content"] = [_block_as_text(b) for b in content]
    notes.append("finalization: tool blocks rendered as text (no tools to keep; the Messages API takes tool "
                 "blocks only with tools)")


def _block_as_text(block: Any) -> Any:
    block = _dict(block) or block
    if not isinstance(block, dict) or block.get("type") not in ("tool_use", "tool_result"):
        return block
    if block["type"] == "tool_use":
        text = f"[tool call {block.get('id')}: {block.get('name')} {json.dumps(block.get('input'), ensure_ascii=False)}]"
    else:
        content = block.get("content")
        shown = content if isinstance(content, str) else " ".join(
            str(_dict(p).get("text", "")) for p in _list(content) if _dict(p).get("type") == "text")
        text = f"[tool result {block.get('tool_use_id')}{' (error)' if block.get('is_error') else ''}: {shown}]"
    return {"type": "text", "text": text}


def _responses(out: dict, prompt: str, max_tokens: int, notes: list[str]) -> None:
    items = out.get("input")
    items = [{"type": "message", "role": "user", "content": items}] if isinstance(items, str) else list(_list(items))
    answered = {_dict(i).get("call_id") for i in items if str(_dict(i).get("type", "")).endswith("_call_output")}
    for item in list(items):
        kind = _dict(item).get("type")
        if kind in ("function_call", "custom_tool_call") and item.get("call_id") not in answered:
            items.append({"type": f"{kind}_output", "call_id": item.get("call_id"), "output": NOT_RUN})
            notes.append(f"finalization: {kind} {item.get('call_id')} had no output; answered as not run")
    items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]})
    out["input"] = items
    out["max_output_tokens"] = max_tokens
    notes.append(f"finalization: max_output_tokens set to {max_tokens}")


# ---- the acceptance rule --------------------------------------------------------------------------


def _chat_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text", "")) for p in _list(content) if isinstance(p, dict))


def judge_answer(route: Route, answer: Any) -> tuple[str, str | None]:
    """The answer's text, and why it is rejected (None: accepted). Rejected: a tool call, an answer cut at the
    token cap (chat finish_reason `length`, Messages stop_reason `max_tokens`, Responses status `incomplete`), or an
    empty text (App. C.2.3: only non-empty, complete responses without tool calls are accepted)."""
    answer = _dict(answer)
    if route is CHAT:
        choice = _dict((_list(answer.get("choices")) or [{}])[0])
        message = _dict(choice.get("message"))
        calls = [_dict(_dict(c).get("function")).get("name") for c in _list(message.get("tool_calls"))]
        if message.get("function_call"):
            calls.append(_dict(message["function_call"]).get("name"))
        text = _chat_text(message.get("content"))
        cut = choice.get("finish_reason") == "length" and "finish_reason length"
    elif route is MESSAGES:
        blocks = [_dict(b) for b in _list(answer.get("content"))]
        calls = [b.get("name") for b in blocks if str(b.get("type", "")).endswith("tool_use")]
        text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
        stop = answer.get("stop_reason")
        cut = stop in ("max_tokens", "model_context_window_exceeded") and f"stop_reason {stop}"
    else:
        items = [_dict(i) for i in _list(answer.get("output"))]
        calls = [i.get("name") or i.get("type") for i in items if str(i.get("type", "")).endswith("_call")]
        text = "".join(str(p.get("text", "")) for i in items if i.get("type") == "message"
                       for p in _list(i.get("content")) if _dict(p).get("type") == "output_text")
        status = answer.get("status")
        reason = _dict(answer.get("incomplete_details")).get("reason")
        cut = status == "incomplete" and f"status incomplete{f' ({reason})' if reason else ''}"
        if status == "failed":
            return text.strip(), "the response failed"
    if calls:
        return text.strip(), f"the answer called a tool ({', '.join(str(c) for c in calls)})"
    if cut:
        return text.strip(), f"the answer was cut at the token cap ({cut})"
    if not text.strip():
        return "", "the answer is empty"
    return text.strip(), None
