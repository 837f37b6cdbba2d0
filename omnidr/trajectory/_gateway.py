"""The gateway log as a token source and as a trajectory of last resort.

`attach_gateway_totals` puts the gateway's token totals (the source of truth) on a trajectory
beside the harness's own counts. `trajectory_from_gateway` builds a minimal trajectory from
gateway.jsonl alone, for harnesses without a parser (the `command` harness): one agent step per
model exchange, with the tool calls found in its answer (OpenAI chat `choices[0].message.
tool_calls`, Anthropic `content[].type == "tool_use"`, Responses `output[].type ==
"function_call"`, from JSON bodies or reassembled from SSE streams) and, as observations, the
tool results the agent sent back in the following requests.
"""

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sandbox.models import GatewayExchange

from ._builder import TrajectoryBuilder
from ._jsonl import TrajectoryFormatError, content_text, decode_arguments, read_jsonl
from ._models import StepUsage, TokenTotals, Trajectory

MODEL_ROUTES = {"chat_completions", "responses", "messages"}


def read_gateway_log(path: Path) -> tuple[list[GatewayExchange], list[str]]:
    """Every exchange of a gateway.jsonl (a last line cut short by a kill is dropped with a warning)."""
    records, warnings = read_jsonl(path)
    exchanges = []
    for line, record in records:
        try:
            exchanges.append(GatewayExchange.model_validate(record))
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(map(str, problem["loc"]))
            raise TrajectoryFormatError(path, line, f"not a gateway exchange: {where}: {problem['msg']}") from None
    return exchanges, warnings


def gateway_totals(exchanges: list[GatewayExchange]) -> TokenTotals:
    """Tokens and model requests over all exchanges, as the gateway counted them."""
    used = [e.usage for e in exchanges if e.usage is not None]
    return TokenTotals(input_tokens=sum(u.input_tokens for u in used), output_tokens=sum(u.output_tokens for u in used),
                       requests=sum(1 for e in exchanges if e.counted))


def attach_gateway_totals(trajectory: Trajectory, gateway_log: Path | list[GatewayExchange]) -> Trajectory:
    """Set `final_metrics.gateway_tokens` (and gateway_errors) from gateway.jsonl; harness counts stay."""
    if isinstance(gateway_log, list):
        exchanges = gateway_log
    else:
        exchanges, warnings = read_gateway_log(Path(gateway_log))
        trajectory.warnings.extend(warnings)
    trajectory.final_metrics.gateway_tokens = gateway_totals(exchanges)
    trajectory.final_metrics.gateway_errors = sum(1 for e in exchanges if e.outcome != "ok")
    return trajectory


def trajectory_from_gateway(path: Path, harness: str = "command") -> Trajectory:
    """A minimal trajectory from gateway.jsonl alone (see the module docstring)."""
    exchanges, warnings = read_gateway_log(path)
    b = TrajectoryBuilder(harness, "gateway", path)
    b.warnings.extend(warnings)
    results: dict[str, tuple[str, bool]] = {}
    model_exchanges = sorted((e for e in exchanges if e.route in MODEL_ROUTES), key=lambda e: e.started_at)
    for exchange in model_exchanges:
        for call_id, text, failed in _tool_results(exchange.request_body):
            results[call_id] = (text, failed)
    for exchange in model_exchanges:
        u = exchange.usage
        step = b.agent(timestamp=exchange.started_at, line=exchange.seq, model=exchange.model,
                       usage=StepUsage(**u.model_dump()) if u else None,
                       error=None if exchange.outcome == "ok" else f"{exchange.outcome}: {exchange.error or exchange.status}")
        text, calls = _answer(exchange)
        step.message = text
        for call_id, name, arguments in calls:
            b.call(step, call_id, name, arguments)
            if call_id in results:
                out, failed = results[call_id]
                b.observe(call_id, out, failed)
    traj = b.build(model=model_exchanges[0].model if model_exchanges else None, complete=None)
    attach_gateway_totals(traj, exchanges)
    return traj


# --- answers -----------------------------------------------------------------------------------

def _answer(exchange: GatewayExchange) -> tuple[str, list[tuple[str, str, Any]]]:
    body = exchange.response_body
    if isinstance(body, str) and "data:" in body:
        body = _from_sse(body, exchange.upstream_route)
    if not isinstance(body, dict):
        return "", []
    return _from_json(body)


def _from_json(body: dict[str, Any]) -> tuple[str, list[tuple[str, str, Any]]]:
    texts: list[str] = []
    calls: list[tuple[str, str, Any]] = []
    if isinstance(body.get("choices"), list) and body["choices"]:  # OpenAI chat completions
        message = body["choices"][0].get("message") or {}
        texts.append(content_text(message.get("content")))
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            calls.append((str(call.get("id")), str(fn.get("name")), decode_arguments(fn.get("arguments"))))
    elif isinstance(body.get("content"), list):  # Anthropic messages
        for block in body["content"]:
            if block.get("type") == "text":
                texts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                calls.append((str(block.get("id")), str(block.get("name")), block.get("input")))
    elif isinstance(body.get("output"), list):  # OpenAI responses
        for item in body["output"]:
            if item.get("type") == "message":
                texts.append(content_text(item.get("content")))
            elif item.get("type") in ("function_call", "custom_tool_call"):
                args = item.get("arguments") if "arguments" in item else item.get("input")
                calls.append((str(item.get("call_id") or item.get("id")), str(item.get("name")), decode_arguments(args)))
    return "\n".join(t for t in texts if t), calls


def _events(text: str) -> list[dict[str, Any]]:
    events = []
    for line in text.splitlines():
        if line.startswith("data:"):
            data = line[5:].strip()
            if data and data != "[DONE]":
                try:
                    value = json.loads(data)
                except ValueError:
                    continue
                if isinstance(value, dict):
                    events.append(value)
    return events


def _from_sse(text: str, route: str) -> dict[str, Any]:
    """Rebuild the final JSON answer from a streamed one (as far as the stream got)."""
    events = _events(text)
    if route == "responses":
        return _responses_from_sse(events)
    if route == "messages":
        return _messages_from_sse(events)
    return _chat_from_sse(events)


def _responses_from_sse(events: list[dict[str, Any]]) -> dict[str, Any]:
    for event in events:
        if event.get("type") == "response.completed" and isinstance(event.get("response"), dict):
            return event["response"]
    return {"output": [e["item"] for e in events if e.get("type") == "response.output_item.done" and "item" in e]}


def _messages_from_sse(events: list[dict[str, Any]]) -> dict[str, Any]:
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    for event in events:
        i = event.get("index", 0)
        if event.get("type") == "content_block_start":
            blocks[i] = dict(event.get("content_block") or {})
        elif event.get("type") == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                blocks.setdefault(i, {"type": "text", "text": ""})
                blocks[i]["text"] = blocks[i].get("text", "") + delta.get("text", "")
            elif delta.get("type") == "input_json_delta":
                partial[i] = partial.get(i, "") + delta.get("partial_json", "")
    for i, raw in partial.items():
        if i in blocks:
            blocks[i]["input"] = decode_arguments(raw) if raw else {}
    return {"content": [blocks[i] for i in sorted(blocks)]}


def _chat_from_sse(events: list[dict[str, Any]]) -> dict[str, Any]:
    text_parts: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for event in events:
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                text_parts.append(delta["content"])
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call.get("index", 0), {"id": None, "function": {"name": "", "arguments": ""}})
                slot["id"] = call.get("id") or slot["id"]
                fn = call.get("function") or {}
                slot["function"]["name"] += fn.get("name") or ""
                slot["function"]["arguments"] += fn.get("arguments") or ""
    return {"choices": [{"message": {"content": "".join(text_parts), "tool_calls": [calls[i] for i in sorted(calls)]}}]}


def _tool_results(body: Any) -> list[tuple[str, str, bool]]:
    """Tool results the agent sent back in a request body: (call id, text, failed)."""
    if not isinstance(body, dict):
        return []
    found = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "tool" and message.get("tool_call_id"):
            found.append((str(message["tool_call_id"]), content_text(message.get("content")), False))
        if isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found.append((str(block.get("tool_use_id")), content_text(block.get("content")),
                                  bool(block.get("is_error"))))
    items = body.get("input")
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output"):
            found.append((str(item.get("call_id")), content_text(item.get("output")), False))
    return found

