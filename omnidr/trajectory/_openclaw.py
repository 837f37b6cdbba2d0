"""OpenClaw session transcripts (`<state dir>/agents/<agent>/sessions/<id>.jsonl`).

Documented format (version 3, shared with the pi coding agent): a `session` header line, then
entries with `id`/`parentId`/`timestamp`: `model_change`, `thinking_level_change`, `compaction`,
`custom`, and `message` entries whose `message.role` is `user`, `assistant` (content parts
`text`, `thinking`, `toolCall{id,name,arguments}`, with `usage{input,output,cacheRead,
cacheWrite,totalTokens,cost}`, `stopReason`, `errorMessage`) or `toolResult` (`toolCallId`,
`toolName`, `content`, `isError`). Entries form a tree through `parentId`; we keep file order,
which is the order they happened in (a rewound branch stays visible, with a warning).
OpenClaw's `input` excludes cached tokens; we add cache reads and writes to match the gateway.
"""

from pathlib import Path
from typing import Any

from ._builder import TrajectoryBuilder, timestamp
from ._jsonl import content_text
from ._models import AgentStep, StepUsage, SystemStep, TokenTotals, Trajectory, UserStep

HARNESS = "openclaw"


def parse_openclaw_records(records: list[tuple[int, dict[str, Any]]], path: Path | None) -> Trajectory:
    b = TrajectoryBuilder(HARNESS, "openclaw-session", path)
    session_id = version = model = None
    last_id = None
    last_stop = None
    for line, d in records:
        kind = d.get("type")
        when = timestamp(d.get("timestamp"))
        if d.get("parentId") is not None and last_id is not None and d.get("parentId") != last_id:
            b.warnings.append(f"line {line}: entry branches off {d.get('parentId')} (session was rewound)")
        last_id = d.get("id", last_id)
        if kind == "session":
            session_id, version = d.get("id"), d.get("version")
        elif kind == "model_change":
            model = d.get("modelId") or model
            b.add(SystemStep(index=1, timestamp=when, line=line,
                             message=f"model {d.get('provider')}/{d.get('modelId')}"))
        elif kind == "compaction":
            b.add(SystemStep(index=1, timestamp=when, line=line, message="context compacted"))
        elif kind == "message":
            msg = d.get("message") or {}
            role = msg.get("role")
            when = when or timestamp(msg.get("timestamp"))
            if role == "user":
                b.add(UserStep(index=1, timestamp=when, line=line, message=content_text(msg.get("content"))))
            elif role == "assistant":
                last_stop = msg.get("stopReason")
                model = model or msg.get("model")
                step = b.agent(timestamp=when, line=line, model=msg.get("model"), usage=_usage(msg.get("usage")),
                               error=msg.get("errorMessage") if last_stop in ("error", "aborted") else None)
                _assistant_content(b, step, msg.get("content") or [])
            elif role == "toolResult":
                b.observe(msg.get("toolCallId"), content_text(msg.get("content")), bool(msg.get("isError")), when, line)
    traj = b.build(session_id=session_id, harness_version=str(version) if version is not None else None,
                   model=model, complete=None if last_stop is None else last_stop == "stop")
    usages = [s.usage for s in traj.agent_steps() if s.usage]
    if usages:
        traj.final_metrics.harness_tokens = TokenTotals(
            input_tokens=sum(u.input_tokens for u in usages), output_tokens=sum(u.output_tokens for u in usages),
            requests=len(usages))
    return traj


def _assistant_content(b: TrajectoryBuilder, step: AgentStep, content: list[Any]) -> None:
    """An assistant message's parts onto its step: text, thinking, and tool calls."""
    texts, thoughts = [], []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            texts.append(str(part.get("text", "")))
        elif part.get("type") == "thinking":
            thoughts.append(str(part.get("thinking", "")))
        elif part.get("type") == "toolCall":
            b.call(step, str(part.get("id", "")), str(part.get("name", "")), part.get("arguments"))
    step.message = "\n".join(t for t in texts if t)
    step.reasoning = "\n".join(t for t in thoughts if t) or None


def _usage(data: Any) -> StepUsage | None:
    if not isinstance(data, dict) or not data:
        return None
    read, write = int(data.get("cacheRead") or 0), int(data.get("cacheWrite") or 0)
    return StepUsage(input_tokens=int(data.get("input") or 0) + read + write, output_tokens=int(data.get("output") or 0),
                     cache_read_input_tokens=read or None, cache_creation_input_tokens=write or None,
                     reasoning_tokens=int(data["reasoning"]) if data.get("reasoning") else None)
