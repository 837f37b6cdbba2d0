"""Codex CLI logs: `codex exec --json` events and `~/.codex/sessions` rollout files.

Exec events carry no timestamps, so their steps have none. Rollout `token_count` events are
cumulative: the harness total is the last `total_token_usage`, never a sum; each event's
`last_token_usage` is the usage of the turn just before it. In rollouts the `event_msg`
copies of messages and reasoning (`user_message`, `agent_message`, `agent_reasoning`) repeat
the `response_item`s and are skipped.
"""

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from ._builder import TrajectoryBuilder, timestamp, usage_from
from ._jsonl import content_text, decode_arguments
from ._models import AgentStep, SystemStep, TokenTotals, Trajectory, UserStep

HARNESS = "codex"


# --- exec --json -----------------------------------------------------------------------------

def parse_codex_exec_records(records: list[tuple[int, dict[str, Any]]], path: Path | None) -> Trajectory:
    b = TrajectoryBuilder(HARNESS, "codex-exec", path)
    thread_id = None
    reasoning: list[str] = []
    started: dict[str, tuple[int, dict]] = {}
    totals = TokenTotals(requests=None)  # a turn holds several model requests; the stream does not count them
    saw_usage = False
    open_turn = False
    for line, d in records:
        kind = d.get("type")
        if kind == "thread.started":
            thread_id = d.get("thread_id")
        elif kind == "turn.started":
            open_turn = True
        elif kind == "turn.completed":
            open_turn = False
            u = usage_from(d.get("usage"), anthropic=False)
            if u:
                saw_usage = True
                totals.input_tokens += u.input_tokens
                totals.output_tokens += u.output_tokens
        elif kind in ("turn.failed", "error"):
            open_turn = open_turn and kind == "error"
            err = e if isinstance(e := d.get("error"), dict) else {}
            text = err.get("message") or d.get("message") or kind
            b.add(SystemStep(index=1, line=line, message=f"{kind}: {text}", is_error=True))
        elif kind == "item.started":
            item = d.get("item") or {}
            started[str(item.get("id"))] = (line, item)
        elif kind == "item.completed":
            item = d.get("item") or {}
            started.pop(str(item.get("id")), None)
            _exec_item(b, item, line, reasoning)
    for line, item in started.values():  # begun but never finished: the run was cut off
        _exec_item(b, item, line, reasoning, finished=False)
    traj = b.build(session_id=thread_id, complete=not open_turn and saw_usage)
    if saw_usage:
        traj.final_metrics.harness_tokens = totals
    return traj


def _exec_item(b: TrajectoryBuilder, item: dict, line: int, reasoning: list[str], finished: bool = True) -> None:
    kind = item.get("type") or item.get("item_type")
    item_id = str(item.get("id"))
    if kind == "reasoning":
        reasoning.append(str(item.get("text", "")))
        return
    if kind == "agent_message":
        b.agent(line=line, message=str(item.get("text", "")), reasoning="\n".join(reasoning) or None)
        reasoning.clear()
        return
    if kind == "error":
        b.add(SystemStep(index=1, line=line, message=str(item.get("message", "error")), is_error=True))
        return
    call = _exec_call(item)
    if call is None:
        return
    name, args, output, failed = call
    step = b.agent(line=line, reasoning="\n".join(reasoning) or None)
    reasoning.clear()
    b.call(step, item_id, name, args)
    if finished:
        b.observe(item_id, output, failed, None, line)
    else:
        b.warnings.append(f"line {line}: {name} call {item_id} never finished (run cut off)")


def _exec_call(item: dict) -> tuple[str, Any, str, bool] | None:
    kind = item.get("type") or item.get("item_type")
    status = item.get("status")
    if kind == "command_execution":
        code = item.get("exit_code")
        failed = status == "failed" or (code is not None and code != 0)
        return "command_execution", {"command": item.get("command")}, str(item.get("aggregated_output", "")), failed
    if kind == "file_change":
        return "file_change", {"changes": item.get("changes")}, f"status: {status}", status == "failed"
    if kind == "mcp_tool_call":
        name = f"{item.get('server')}.{item.get('tool')}"
        err = item.get("error")
        out = json.dumps(item.get("result"), ensure_ascii=False) if item.get("result") is not None else ""
        return name, item.get("arguments"), str(err or out), status == "failed" or bool(err)
    if kind == "web_search":
        return "web_search", {"query": item.get("query")}, "", False
    if kind == "todo_list":
        return "todo_list", {"items": item.get("items")}, "", False
    return None


# --- rollout ---------------------------------------------------------------------------------

# `Exit code: N` (shell tool), `Process exited with code N` (unified exec, 0.147)
_EXIT = re.compile(r"^(?:Exit code:|Process exited with code) (-?\d+)", re.MULTILINE)
_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output"}


def parse_codex_rollout_records(records: list[tuple[int, dict[str, Any]]], path: Path | None) -> Trajectory:
    r = _RolloutReader(TrajectoryBuilder(HARNESS, "codex-rollout", path))
    for line, d in records:
        kind = d.get("type")
        p = d.get("payload") or {}
        when = timestamp(d.get("timestamp"))
        if kind == "session_meta":
            r.session_id, r.version = p.get("id"), p.get("cli_version")
        elif kind == "turn_context":
            r.model = p.get("model") or r.model
        elif kind == "event_msg":
            r.event(p, line, when)
        elif kind == "response_item":
            r.item(p, line, when)
    traj = r.b.build(session_id=r.session_id, harness_version=r.version, model=r.model, complete=r.complete)
    if path is not None:
        traj.warnings += _fallback_metadata(path)
    if r.last_total and (u := usage_from(r.last_total, anthropic=False)) is not None:
        traj.final_metrics.harness_tokens = TokenTotals(input_tokens=u.input_tokens, output_tokens=u.output_tokens)
    return traj


class _RolloutReader:
    """A rollout's records, one by one, into a trajectory builder (with what later records need of earlier ones)."""

    def __init__(self, b: TrajectoryBuilder) -> None:
        self.b = b
        self.session_id: Any = None
        self.version: Any = None
        self.model: Any = None
        self.reasoning: list[str] = []  # reasoning summaries since the last agent step
        self.last_total: dict | None = None  # the cumulative token usage, as last reported
        self.complete: bool | None = None
        self.last_agent: AgentStep | None = None
        self.usage_pending = False  # the last agent step waits for its `token_count`

    def event(self, p: dict[str, Any], line: int, when: datetime | None) -> None:
        """An `event_msg`: token counts, aborted, completed or failed turns, errors."""
        b, sub = self.b, p.get("type")
        if sub == "token_count" and isinstance(p.get("info"), dict):
            info = p["info"]
            self.last_total = info.get("total_token_usage") or self.last_total  # cumulative: keep the last
            if self.last_agent is not None and self.usage_pending and info.get("last_token_usage"):
                self.last_agent.usage = usage_from(info["last_token_usage"], anthropic=False)
                self.usage_pending = False
        elif sub == "turn_aborted":
            b.add(SystemStep(index=1, timestamp=when, line=line, is_error=True,
                             message=f"turn aborted ({p.get('reason', 'unknown')})"))
            self.complete = False
        elif sub in ("task_complete",):
            # 0.147 ends a failed turn (say, a refused model request) with task_complete carrying an error
            if p.get("error"):
                err = p["error"]
                text = err.get("message") if isinstance(err, dict) else err
                b.add(SystemStep(index=1, timestamp=when, line=line, is_error=True,
                                 message=f"turn failed: {str(text)[:500]}"))
            self.complete = not p.get("error")
        elif sub in ("error", "stream_error"):
            b.add(SystemStep(index=1, timestamp=when, line=line, is_error=True, message=str(p.get("message"))))

    def item(self, p: dict[str, Any], line: int, when: datetime | None) -> None:
        """A `response_item`: reasoning, a message, a tool call or a tool's output."""
        b, sub = self.b, p.get("type")
        if sub == "reasoning":
            text = content_text(p.get("summary")) or content_text(p.get("content"))
            if text:
                self.reasoning.append(text)
        elif sub == "message":
            self._message(p, line, when)
        elif sub in _CALLS:
            call_id = str(p.get("call_id") or p.get("id") or f"line-{line}")
            name = str(p.get("name") or sub)
            args = decode_arguments(p.get("arguments") if "arguments" in p else p.get("input", p.get("action")))
            self.last_agent = b.agent(timestamp=when, line=line, model=self.model,
                                      reasoning="\n".join(self.reasoning) or None)
            self.reasoning.clear()
            self.usage_pending = True
            b.call(self.last_agent, call_id, name, args)
        elif sub in _OUTPUTS:
            text, failed = _rollout_output(p.get("output"))
            b.observe(p.get("call_id"), text, failed, when, line)

    def _message(self, p: dict[str, Any], line: int, when: datetime | None) -> None:
        role = p.get("role")
        text = content_text(p.get("content"))
        if role == "assistant":
            self.last_agent = self.b.agent(timestamp=when, line=line, model=self.model, message=text,
                                           reasoning="\n".join(self.reasoning) or None)
            self.reasoning.clear()
            self.usage_pending = True
        elif role == "user":
            self.b.add(UserStep(index=1, timestamp=when, line=line, message=text))
        else:
            self.b.add(SystemStep(index=1, timestamp=when, line=line, message=text))


FALLBACK = re.compile(r"Model metadata for `([^`]*)` not found")


def _fallback_metadata(rollout: Path) -> list[str]:
    """Whether Codex ran the model on its fallback metadata (a name outside its built-in catalog: its
    default instructions, no apply_patch tool). Only the exec stream says so; it sits beside CODEX_HOME,
    which holds the rollout under sessions/YYYY/MM/DD/."""
    for folder in list(rollout.parents)[:6]:
        stream = folder / "codex-exec.jsonl"
        if stream.is_file():
            found = FALLBACK.search(stream.read_text("utf-8", "replace")[:20000])
            if found:
                return [f"Codex used its fallback model metadata for `{found.group(1)}` (not in its built-in "
                        "catalog): its default instructions, no apply_patch tool"]
            return []
    return []


def _rollout_output(output: Any) -> tuple[str, bool]:
    """Text of a call output and whether it failed: JSON `{output, metadata.exit_code}` (older
    versions) or plain text starting `Exit code: N` (newer ones)."""
    if isinstance(output, dict):
        text = output.get("content") or json.dumps(output, ensure_ascii=False)
        return str(text), output.get("success") is False
    text = str(output or "")
    decoded = decode_arguments(text)
    if isinstance(decoded, dict) and "output" in decoded:
        code = (decoded.get("metadata") or {}).get("exit_code")
        return str(decoded["output"]), code not in (None, 0)
    match = _EXIT.search(text)
    if match:
        return text, int(match.group(1)) != 0
    return text, text.startswith(("failed", "error", "Error"))
