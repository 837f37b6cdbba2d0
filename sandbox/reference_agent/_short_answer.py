"""The reference agent on a short-answer task (OpenDS-World, paper 002; `OMNIDR_TASK_KIND=short_answer`).

The paper's research loop (App. C.2.3): the model researches with tools until it answers with a non-empty final
message without tool calls. Research also ends when a budget is spent (the gateway refuses the next request, or the
research wall clock of `/input/protocol.json` has passed), when the output is cut at the token cap, when the
context overflows, or when execution fails. Whatever ends it, the agent writes `/output/answer.json` (`AnswerFile`:
the answer, the termination reason, the answering stage) and exits 0; without a complete answer, the controller's
finalization stage (the gateway's `POST /_gateway/finalize`) answers from the evidence collected.

Before each model request the conversation is compacted as the paper does (`_compaction`, App. C.2.2), with the
protocol's settings. The tools are those of the skill manifest named in `SHORT_ANSWER_TOOLS` (App. C.1.1).
"""

import json
import os
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sandbox.models import (
    PROTOCOL_FILE,
    RESEARCH_PROMPT,
    SHORT_ANSWER_KIND,
    AnswerFile,
    ShortAnswerProtocol,
    TerminationReason,
)
from sandbox.skills import installed, tool_schemas

from ._capability import Capability
from ._compaction import CONTEXT_HANDLING, compact_messages
from ._loop import IMAGE_TOOLS, NativeLog, execute, frames_message

SHORT_ANSWER_TOOLS = (
    "sample_video", "read_subtitles", "search_web", "fetch_url", "download_file", "read_artifact",
    "browser_open", "browser_click", "browser_fill", "browser_submit", "browser_read", "browser_back",
    "browser_close",
)
"""The reference agent's tools on a short-answer task, by their manifest names (App. C.1.1: frame sampling,
subtitles, search, pages, downloads and the artifacts they leave, a persistent browser). Those the manifest does
not have yet are left out."""

PROTOCOL_ENV = "OMNIDR_PROTOCOL"
"""Where the protocol file is (default `/input/protocol.json`); tests point it elsewhere."""

# Upstream messages that mean the prompt no longer fits the model's context (OpenAI, Anthropic, vLLM, ...).
_CONTEXT_OVERFLOW = re.compile(r"context.length|context.window|maximum context|prompt is too long|too many "
                               r"(input )?tokens|input is too long|context_length_exceeded", re.IGNORECASE)


def load_protocol(path: Path) -> ShortAnswerProtocol:
    """The protocol the host mounted; the paper's defaults when there is none."""
    if not path.is_file():
        return ShortAnswerProtocol()
    return ShortAnswerProtocol.model_validate_json(path.read_text("utf-8"))


def protocol_path() -> Path:
    return Path(os.environ.get(PROTOCOL_ENV) or f"/input/{PROTOCOL_FILE}")


def short_answer_capability(level: str) -> Capability:
    """The short-answer tools the manifest offers at capability `level`, in `SHORT_ANSWER_TOOLS` order."""
    offered = {t["function"]["name"] for t in tool_schemas(level, kind=SHORT_ANSWER_KIND)}
    return Capability(level, tuple(t for t in SHORT_ANSWER_TOOLS if t in offered),
                      media_search=installed(level, "multimodal"), workflow=False)


def user_message(question: str, video: str) -> str:
    """The user turn: the instruction without the research prompt at its head (that is the system message), and
    the video's path unless the instruction names it."""
    body = question.strip().removeprefix(RESEARCH_PROMPT).strip()
    return body if video in body else f"{body}\n\nThe video is at {video} (read-only)."


def classify_failure(exc: BaseException) -> tuple[TerminationReason, str]:
    """Why a failed model request ended research: the gateway's budget refusal, a context overflow, or an
    execution error (with its text)."""
    text = f"{type(exc).__name__}: {exc}"
    body = getattr(exc, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else {}
    kinds = {getattr(exc, "code", None), *((inner.get("code"), inner.get("type")) if isinstance(inner, dict) else ())}
    if "budget_exhausted" in kinds or "Research has ended" in str(exc):  # a budget, or the controller's clock
        return "budget_exhausted", text
    if "context_length_exceeded" in kinds or _CONTEXT_OVERFLOW.search(str(exc)):
        return "context_overflow", text
    return "execution_error", text


@dataclass
class Research:
    """How research went: the answer file to write and the counts for the native log."""

    answer: AnswerFile
    steps: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    compacted_requests: int = 0  # requests whose conversation compaction changed
    detail: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict:
        return {"steps": self.steps, "model_calls": self.model_calls, "tool_calls": self.tool_calls,
                "tool_errors": self.tool_errors, "compacted_requests": self.compacted_requests,
                "end": self.answer.termination, "termination": self.answer.termination,
                "source": self.answer.source, "answer": self.answer.answer, **self.detail}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _ended(termination: TerminationReason, error: str | None = None) -> AnswerFile:
    return AnswerFile(answer="", termination=termination, source="none", execution_error=error)


def research(client, model: str, tools, prompt: str, log: NativeLog, protocol: ShortAnswerProtocol,
             max_steps: int | None = None, clock=time.monotonic) -> Research:
    """Run the research loop to its end (see the module docstring). `prompt` is the user message (`user_message`
    of the question and the video)."""
    messages: list[dict] = [{"role": "system", "content": RESEARCH_PROMPT},
                            {"role": "user", "content": prompt}]
    schemas = tools.schemas()
    t0 = clock()
    run = Research(_ended("budget_exhausted"))
    while True:
        if max_steps is not None and run.steps >= max_steps:
            run.answer, run.detail["reason"] = _ended("budget_exhausted"), f"the agent's own {max_steps} steps"
            return run
        if clock() - t0 >= protocol.research_wall_s:
            run.answer = _ended("budget_exhausted")
            run.detail["reason"] = f"the research wall clock of {protocol.research_wall_s:g} s"
            return run
        run.steps += 1
        sent = compact_messages(messages, protocol.compaction)
        run.compacted_requests += any(a is not b for a, b in zip(sent, messages, strict=True))
        started, t1 = _now(), time.monotonic()
        try:
            kwargs = {"tools": schemas} if schemas else {}
            resp = client.chat.completions.create(model=model, messages=sent, **kwargs)
        except Exception as exc:  # the gateway refused (budget), the context overflowed, the upstream failed, ...
            run.model_calls += 1
            termination, error = classify_failure(exc)
            log.write({"type": "model_call", "step": run.steps, "started_at": started, "ended_at": _now(),
                       "duration_s": round(time.monotonic() - t1, 3), "error": error,
                       "status": getattr(exc, "status_code", None), "termination": termination})
            run.answer = _ended(termination, error if termination == "execution_error" else None)
            return run
        run.model_calls += 1
        choice = resp.choices[0]
        msg = choice.message
        calls = list(msg.tool_calls or [])
        usage = getattr(resp, "usage", None)
        log.write({"type": "model_call", "step": run.steps, "started_at": started, "ended_at": _now(),
                   "duration_s": round(time.monotonic() - t1, 3), "model": getattr(resp, "model", model),
                   "finish_reason": choice.finish_reason, "content": msg.content,
                   "tool_calls": [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                                  for c in calls],
                   "usage": None if usage is None else {"prompt_tokens": usage.prompt_tokens,
                                                        "completion_tokens": usage.completion_tokens,
                                                        "total_tokens": usage.total_tokens},
                   "context": {"handling": CONTEXT_HANDLING, "messages": len(sent)}})
        if not calls:
            text = (msg.content or "").strip()
            if choice.finish_reason == "length":
                run.answer = _ended("incomplete_output")
            elif text:
                run.answer = AnswerFile(answer=text, termination="complete_answer", source="research")
            else:  # an empty final message: no answer came out of the model's output
                run.answer, run.detail["reason"] = _ended("incomplete_output"), "an empty final message"
            return run
        messages.append({"role": "assistant", "content": msg.content or "", "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.function.name,
                                                          "arguments": c.function.arguments or "{}"}}
            for c in calls]})
        spent, shown = False, []
        for c in calls:
            if run.tool_calls >= protocol.research_tool_calls:  # Sec. 3.1: research ends at 100 calls; a call
                spent = True  # past it is answered, not run, so the conversation stays whole for finalization
                messages.append({"role": "tool", "tool_call_id": c.id, "content": json.dumps(
                    {"error": f"not run: the research budget of {protocol.research_tool_calls} tool calls is spent"})})
                continue
            content, result = execute(tools, c, run.steps, log)
            run.tool_calls += 1
            run.tool_errors += result is None
            messages.append({"role": "tool", "tool_call_id": c.id, "content": content})
            if c.function.name in IMAGE_TOOLS and result is not None:
                shown.append((c.function.name, result))
        for tool, result in shown:  # the sampled frames and viewed images, as images (App. C.1.2; capped by the
            extra = frames_message(result, tools.report_dir, tool)  # compaction's image limit, App. C.2.1)
            if extra is not None:
                messages.append(extra)
        if spent or run.tool_calls >= protocol.research_tool_calls:
            run.answer = _ended("budget_exhausted")
            run.detail["reason"] = f"the research budget of {protocol.research_tool_calls} tool calls"
            return run


def config_record(protocol: ShortAnswerProtocol, source: Path) -> dict:
    """What config.json records of a short-answer run: the context handling and its settings."""
    return {"task_kind": SHORT_ANSWER_KIND, "context_handling": CONTEXT_HANDLING,
            "compaction": protocol.compaction.model_dump(), "research_wall_s": protocol.research_wall_s,
            "protocol": str(source) if source.is_file() else None, "prompt": "RESEARCH_PROMPT (sandbox.models)"}
