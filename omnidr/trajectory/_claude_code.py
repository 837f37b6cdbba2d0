"""Claude Code logs: headless `--output-format stream-json` events and session transcripts.

Both formats carry the same `assistant`/`user` message lines. Claude Code writes one line per
content block of an answer, each repeating the message id and its usage: lines with the same
message id are merged into one agent step and the usage is counted once (the last copy wins,
since streaming copies may carry partial output counts). Tool results arrive in `user` lines
and are attached to the step that made the call. Sidechain (subagent) turns are kept and
flagged `subagent=True`. Hook, progress, snapshot and background-task lines are skipped.
"""

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ._builder import TrajectoryBuilder, timestamp, usage_from
from ._jsonl import content_text, read_jsonl
from ._models import AgentStep, SystemStep, TokenTotals, Trajectory, UserStep

HARNESS = "claude-code"
CLAUDE_CONFIG_DIR = "claude-config"
"""CLAUDE_CONFIG_DIR under the logs folder, beside the stream log; session transcripts land in its projects/ folder."""


def parse_claude_code_records(records: list[tuple[int, dict[str, Any]]], path: Path | None) -> Trajectory:
    transcript = any("sessionId" in d for _, d in records)
    b = TrajectoryBuilder(HARNESS, "claude-code-transcript" if transcript else "claude-code-stream", path)
    by_message: dict[str, AgentStep] = {}
    session_id = version = model = None
    result: dict[str, Any] | None = None
    results: list[dict[str, Any]] = []
    for line, d in records:
        kind = d.get("type")
        when = timestamp(d.get("timestamp"))
        session_id = session_id or d.get("session_id") or d.get("sessionId")
        version = version or d.get("version") or d.get("claude_code_version")
        if kind == "system":
            if d.get("subtype") == "init":
                model = d.get("model") or model
                version = d.get("claude_code_version") or version
            if (step := _system_step(d, line, when)) is not None:
                b.add(step)
        elif kind == "assistant":
            _assistant(b, by_message, d, line, when)
            model = model or (d.get("message") or {}).get("model")
        elif kind == "user" and not d.get("isMeta"):
            _user(b, d, line, when)
        elif kind == "result":
            result = d
            results.append(d)
            if d.get("is_error"):
                text = f"run ended with {d.get('subtype')}: {str(d.get('result') or '')[:500]}"
                b.add(SystemStep(index=1, timestamp=when, line=line, message=text, is_error=True))
    if not transcript and path is not None:
        _final_usage(by_message, path, session_id)
    traj = b.build(session_id=session_id, harness_version=version, model=model,
                   complete=None if transcript else result is not None)
    if result is not None and result.get("is_error"):
        # a headless run that ended on an API error still says subtype "success" (Claude Code 2.1): the run failed
        status = result.get("api_error_status")
        traj.ended_with_error = " ".join(str(x) for x in (
            result.get("terminal_reason") or result.get("subtype"), status, str(result.get("result") or "")[:300])
            if x not in (None, ""))
    if path is not None and not all(s.subagent for s in traj.steps):  # a subagent's own file has none of its own
        _merge_subagents(traj, _subagent_files(path, session_id, transcript))
    _harness_metrics(traj, by_message, results)
    return traj


def _system_step(d: dict[str, Any], line: int, when: datetime | None) -> SystemStep | None:
    """The step a `system` record shows (session start, API retry, compaction); None: one it does not show."""
    sub = d.get("subtype")
    if sub == "init":
        return SystemStep(index=1, timestamp=when, line=line, message=f"session started, model {d.get('model')}")
    if sub == "api_retry":
        text = f"API retry {d.get('attempt')}/{d.get('max_retries')}: {d.get('error_status')} {d.get('error')}"
        return SystemStep(index=1, timestamp=when, line=line, message=text, is_error=True)
    if sub == "compact_boundary":
        return SystemStep(index=1, timestamp=when, line=line, message="context compacted")
    return None


def _harness_metrics(traj: Trajectory, by_message: dict[str, AgentStep], results: list[dict[str, Any]]) -> None:
    """The harness's own token counts, cost and duration, from its `result` records (else its steps' usage)."""
    result = results[-1] if results else None
    m = traj.final_metrics
    if results:
        # every `result` of the session counts (a resumed session has several); `modelUsage` also
        # holds subagents' and web sub-requests' tokens, which the top-level `usage` leaves out
        totals = [_model_usage(r) for r in results]  # (requests: answered messages; errors are "<synthetic>")
        m.harness_tokens = TokenTotals(input_tokens=sum(t[0] for t in totals), output_tokens=sum(t[1] for t in totals),
                                       requests=sum(1 for st in by_message.values() if st.model != "<synthetic>") or None)
    else:
        usages = [s.usage for s in traj.agent_steps() if s.usage]
        if usages:
            m.harness_tokens = TokenTotals(input_tokens=sum(u.input_tokens for u in usages),
                                           output_tokens=sum(u.output_tokens for u in usages), requests=len(usages))
    if result is not None:
        m.harness_cost_usd = result.get("total_cost_usd")
        if result.get("duration_ms") is not None:
            m.harness_duration_s = result["duration_ms"] / 1000


def _model_usage(result: dict) -> tuple[int, int]:
    """(input, output) tokens of one `result`: its per-model `modelUsage` when present, else `usage`."""
    per_model = result.get("modelUsage")
    if isinstance(per_model, dict) and per_model:
        inputs = sum(int(u.get("inputTokens") or 0) + int(u.get("cacheReadInputTokens") or 0)
                     + int(u.get("cacheCreationInputTokens") or 0) for u in per_model.values() if isinstance(u, dict))
        outputs = sum(int(u.get("outputTokens") or 0) for u in per_model.values() if isinstance(u, dict))
        return inputs, outputs
    u = usage_from(result.get("usage"), anthropic=True)
    return (u.input_tokens, u.output_tokens) if u else (0, 0)


def _final_usage(by_message: dict[str, AgentStep], stream: Path, session_id: str | None) -> None:
    """Replace the stream's per-step usage with the session transcript's.

    Claude Code's stream-json `assistant` lines carry the usage of `message_start`, where the output
    count is still 1; the transcript under CLAUDE_CONFIG_DIR/projects records each message's final
    usage under the same message id."""
    if not session_id:
        return
    final: dict[str, dict] = {}
    for transcript in sorted(stream.parent.glob(f"{CLAUDE_CONFIG_DIR}/projects/*/{session_id}.jsonl")):
        records, _ = read_jsonl(transcript)
        for _, d in records:
            msg = d.get("message") if d.get("type") == "assistant" else None
            if isinstance(msg, dict) and msg.get("id") and isinstance(msg.get("usage"), dict):
                final[msg["id"]] = msg["usage"]
    for mid, step in by_message.items():
        if mid in final:
            step.usage = usage_from(final[mid], anthropic=True)


def _subagent_files(path: Path, session_id: str | None, transcript: bool) -> list[Path]:
    """The session's subagent transcripts: Claude Code 2.1 writes each subagent's turns to
    `projects/<project>/<session>/subagents/agent-*.jsonl`, beside the main transcript `<session>.jsonl`; from a
    stream log they are found under its CLAUDE_CONFIG_DIR."""
    if transcript:
        return sorted((path.parent / path.stem / "subagents").glob("agent-*.jsonl"))
    if not session_id:
        return []
    return sorted(path.parent.glob(f"{CLAUDE_CONFIG_DIR}/projects/*/{session_id}/subagents/agent-*.jsonl"))


def _merge_subagents(traj: Trajectory, files: list[Path]) -> None:
    """Add the steps of the session's subagents, which a stream and a main transcript leave out (a foreground
    subagent), marked `subagent=True` and placed among the main steps by time. A step the log already holds (a
    background subagent's turns also appear in the stream, with `parent_tool_use_id`) is not added again: its tool
    calls are there already, or, for a turn without calls, the same text from a subagent."""
    calls = {c.id for c in traj.tool_calls()}
    texts = {s.message for s in traj.agent_steps() if s.subagent and not s.tool_calls and s.message}
    added: list = []
    for path in files:
        records, warnings = read_jsonl(path)
        sub = parse_claude_code_records(records, path)
        for step in sub.steps:
            step.subagent = True
            if isinstance(step, UserStep):  # the subagent's prompt is the parent's Agent call
                continue
            if isinstance(step, AgentStep) and (any(c.id in calls for c in step.tool_calls) or
                                                (not step.tool_calls and step.message and step.message in texts)):
                continue
            added.append(step)
        traj.warnings += [f"{path.name}: {w}" for w in warnings]
    if not added:
        return
    far = datetime.max.replace(tzinfo=UTC)
    order = {id(s): k for k, s in enumerate(traj.steps + added)}
    steps = sorted(traj.steps + added, key=lambda s: (s.timestamp or far, order[id(s)]))
    for k, step in enumerate(steps, 1):
        step.index = k
    traj.steps = steps


def _assistant(b: TrajectoryBuilder, by_message: dict[str, AgentStep], d: dict, line: int, when) -> None:
    msg = d.get("message") or {}
    mid = msg.get("id")
    step = by_message.get(mid) if mid else None
    if step is None:
        step = b.agent(timestamp=when, line=line, model=msg.get("model"), subagent=_sidechain(d))
        if mid:
            by_message[mid] = step
    if msg.get("usage"):
        step.usage = usage_from(msg["usage"], anthropic=True)  # same id, same usage: counted once
    if d.get("isApiErrorMessage") or d.get("is_api_error_message"):  # transcript / stream spelling
        step.error = content_text(msg.get("content")) or str(d.get("error"))
    elif d.get("error"):
        step.error = str(d.get("error"))
    for block in msg.get("content") or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and block.get("text", "").strip():
            step.message = "\n".join(p for p in (step.message, block["text"]) if p)
        elif kind == "thinking" and block.get("thinking"):
            step.reasoning = "\n".join(p for p in (step.reasoning, block["thinking"]) if p)
        elif kind in ("tool_use", "server_tool_use") and not b.has_call(block.get("id", "")):
            b.call(step, str(block.get("id", "")), str(block.get("name", "")), block.get("input"))
        elif kind == "web_search_tool_result":
            b.observe(block.get("tool_use_id"), content_text(block.get("content")), False, when, line)


def _user(b: TrajectoryBuilder, d: dict, line: int, when) -> None:
    content = (d.get("message") or {}).get("content")
    texts = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                b.observe(block.get("tool_use_id"), content_text(block.get("content")), bool(block.get("is_error")),
                          when, line)
            else:
                texts.append(content_text([block]))
    else:
        texts.append(content_text(content))
    text = "\n".join(t for t in texts if t)
    if text:
        b.add(UserStep(index=1, timestamp=when, line=line, message=text, subagent=_sidechain(d)))


def _sidechain(d: dict) -> bool:
    """A line of a subagent's context: a transcript's sidechain, or a stream line of a subagent's turn."""
    return bool(d.get("isSidechain")) or d.get("parent_tool_use_id") is not None
