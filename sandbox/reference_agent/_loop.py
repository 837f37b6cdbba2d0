"""The agent loop: chat completions with tools until the model answers without a tool call, then (in the
full workflow) a check-and-repair turn. Every model call and tool call is one line of the native log."""

import base64
import json
import time
from datetime import UTC, datetime
from pathlib import Path

from ._capability import Capability, system_prompt
from ._tools import ToolBox, ToolError, phase, safe_arguments, tool_result_text


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class NativeLog:
    """`reference.jsonl`: one JSON object a line, flushed at once (a killed agent keeps what it did)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.f = path.open("a", encoding="utf-8")

    def write(self, record: dict) -> None:
        self.f.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self.f.flush()


def _usage(resp) -> dict | None:
    u = getattr(resp, "usage", None)
    if u is None:
        return None
    return {"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens, "total_tokens": u.total_tokens}


def _safe_check(tools: ToolBox) -> dict:
    try:
        return tools.call("check_report", {})
    except Exception as exc:  # malformed data the checks cannot walk is itself a problem to repair
        return {"ok": False, "problems": [f"the report data could not be checked: {type(exc).__name__}: {exc}"],
                "warnings": []}


IMAGE_TOOLS = ("read_window", "sample_video", "read_artifact")
"""Tools whose results carry images the model is shown: a window's frames, sampled frames, an image file's view
and a downloaded video's frames (JPEG files)."""


def frames_message(result: dict, report_dir: Path, tool: str = "read_window") -> dict | None:
    """A user message showing the images of a tool result (for models that read images): frames under the report
    folder (`src`) or anywhere (`path`), and an image's view."""
    shots = [(f"Frame at {f['time_s']:.2f} s ({f.get('src') or Path(f['path']).name}):",
              report_dir / f["src"] if "src" in f else Path(f["path"])) for f in result.get("frames", [])]
    if isinstance(result.get("image"), dict):
        shots.append((f"The image {result.get('member') or result.get('path')}:", Path(result["image"]["path"])))
    parts: list[dict] = []
    for label, path in shots:
        if path.is_file():
            parts.append({"type": "text", "text": label})
            parts.append({"type": "image_url", "image_url": {
                "url": "data:image/jpeg;base64," + base64.b64encode(path.read_bytes()).decode()}})
    if not parts:
        return None
    if tool == "read_window":
        text = (f"Frames of window {result.get('window')} ({result.get('start_s')} to {result.get('end_s')} s), "
                f"as returned by read_window.")
    elif tool == "sample_video":
        text = f"Frames from {result.get('start_s')} to {result.get('end_s')} s, as returned by sample_video."
    else:
        text = f"{result.get('member') or result.get('path')}, as returned by {tool}."
    return {"role": "user", "content": [{"type": "text", "text": text}, *parts]}


def execute(tools: ToolBox, call, step: int, log: NativeLog) -> tuple[str, dict | None]:
    """Run one tool call of the model and log it: the text the model is shown, and the result (None: the call
    failed, and the text says why). A failing tool never ends the run: the model sees the error."""
    t_started, t1 = _now(), time.monotonic()
    error, result = None, None
    try:
        result = tools.call(call.function.name, safe_arguments(call.function.arguments))
    except ToolError as exc:
        error = str(exc)
    except (TypeError, ValueError) as exc:  # wrong argument names or types
        error = f"bad arguments: {exc}"
    except Exception as exc:  # a tool bug must not end the attempt: the model sees it
        error = f"{type(exc).__name__}: {exc}"
    content = tool_result_text({"error": error} if error else result)
    log.write({"type": "tool_call", "step": step, "id": call.id, "name": call.function.name,
               "phase": phase(call.function.name), "arguments": call.function.arguments,
               "started_at": t_started, "ended_at": _now(), "duration_s": round(time.monotonic() - t1, 3),
               "error": error, "result": None if error else json.loads(content) if len(content) < 20_000
               else content})
    return content, None if error else result


def run_agent(client, model: str, cap: Capability, tools: ToolBox, user_message: str, log: NativeLog,
              max_steps: int | None = None, attach_frames: bool = False) -> dict:
    """Run to the end. Returns a summary: steps, model calls, tool calls, tool errors, end reason, last check.
    `max_steps` None: no cap of the agent's own; the gateway's budget (iterations, tokens, time) ends the run.
    The report is repaired after a failed check at most `tools.max_repairs` times."""
    messages: list[dict] = [{"role": "system", "content": system_prompt(cap)},
                            {"role": "user", "content": user_message}]
    schemas = tools.schemas()
    counts = {"model_calls": 0, "tool_calls": 0, "tool_errors": 0, "repairs": 0}
    end, last_check = "max_steps", None
    step = 0
    while max_steps is None or step < max_steps:
        step += 1
        started, t0 = _now(), time.monotonic()
        try:
            kwargs = {"tools": schemas} if schemas else {}
            resp = client.chat.completions.create(model=model, messages=messages, **kwargs)
        except Exception as exc:  # the gateway refused (budget), the upstream failed after retries, ...
            status = getattr(exc, "status_code", None)
            log.write({"type": "model_call", "step": step, "started_at": started, "ended_at": _now(),
                       "duration_s": round(time.monotonic() - t0, 3), "error": f"{type(exc).__name__}: {exc}",
                       "status": status})
            counts["model_calls"] += 1
            end = "model_error"
            break
        counts["model_calls"] += 1
        choice = resp.choices[0]
        msg = choice.message
        calls = list(msg.tool_calls or [])
        log.write({"type": "model_call", "step": step, "started_at": started, "ended_at": _now(),
                   "duration_s": round(time.monotonic() - t0, 3), "model": getattr(resp, "model", model),
                   "finish_reason": choice.finish_reason, "content": msg.content,
                   "tool_calls": [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                                  for c in calls], "usage": _usage(resp)})
        assistant = {"role": "assistant", "content": msg.content or ""}
        if calls:
            assistant["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                "name": c.function.name, "arguments": c.function.arguments or "{}"}} for c in calls]
        messages.append(assistant)
        if not calls:
            if cap.workflow and "check_report" in cap.tools and counts["repairs"] < tools.max_repairs:
                last_check = _safe_check(tools)
                log.write({"type": "check", "step": step, "at": _now(), "result": last_check})
                if not last_check["ok"]:
                    counts["repairs"] += 1
                    messages.append({"role": "user", "content": "The report does not pass its checks yet. Fix "
                                     "these problems, then check again:\n- " + "\n- ".join(last_check["problems"])})
                    continue
            end = "final_answer"
            break
        shown: list[tuple[str, dict]] = []
        for c in calls:
            content, result = execute(tools, c, step, log)
            counts["tool_calls"] += 1
            counts["tool_errors"] += result is None
            messages.append({"role": "tool", "tool_call_id": c.id, "content": content})
            if c.function.name == "check_report" and result is not None:
                last_check = result
            if attach_frames and c.function.name in IMAGE_TOOLS and result is not None:
                shown.append((c.function.name, result))
        for tool, result in shown:  # after all tool results: a user message may not sit between them
            extra = frames_message(result, tools.report_dir, tool)
            if extra is not None:
                messages.append(extra)
    if last_check is None and "check_report" in cap.tools and (tools.report_dir / "index.html").exists():
        last_check = _safe_check(tools)
    return {**counts, "steps": step, "end": end, "check": last_check, "evidence": len(tools.evidence),
            "fetched": sorted(u for u, p in tools.fetched.items() if p.get("status") == 200)}
