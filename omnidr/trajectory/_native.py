"""Reading any supported log into a `Trajectory`: format detection and the per-harness parsers.

Log file names the harness adapters write under the agent's logs folder (ctx.logs_dir, which is
`output/harness-logs/` of the attempt folder) live here so that adapters and the audit agree.
"""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ._claude_code import CLAUDE_CONFIG_DIR, parse_claude_code_records
from ._codex import parse_codex_exec_records, parse_codex_rollout_records
from ._jsonl import TrajectoryFormatError, read_jsonl
from ._models import Step, Trajectory
from ._openclaw import parse_openclaw_records

CLAUDE_CODE_LOG = "claude-code.jsonl"
"""stream-json stdout of `claude -p`, under the logs folder."""
CODEX_EXEC_LOG = "codex-exec.jsonl"
"""`codex exec --json` stdout, under the logs folder."""
CODEX_HOME_DIR = "codex-home"
"""CODEX_HOME under the logs folder; rollouts land in its sessions/ folder."""
OPENCLAW_STATE_DIR = "openclaw-state"
"""OPENCLAW_STATE_DIR under the logs folder; sessions land in agents/<agent>/sessions/."""
OPENCLAW_LOG = "openclaw.jsonl"
"""stdout of `openclaw agent --json`, kept for debugging (not parsed)."""

NATIVE_LOG_GLOBS: dict[str, list[str]] = {
    "claude-code": [CLAUDE_CODE_LOG, f"{CLAUDE_CONFIG_DIR}/projects/*/*.jsonl"],
    "codex": [f"{CODEX_HOME_DIR}/sessions/**/rollout-*.jsonl", CODEX_EXEC_LOG],
    "openclaw": [f"{OPENCLAW_STATE_DIR}/agents/*/sessions/*.jsonl"],
}
"""Where the audit looks for each harness's native log under output/harness-logs/, best first
(a Codex rollout has timestamps, its exec stream has none)."""

Parser = Callable[[list[tuple[int, dict[str, Any]]], Path | None], Trajectory]

FORMATS: dict[str, tuple[str, Parser]] = {
    "claude-code-stream": ("claude-code", parse_claude_code_records),
    "claude-code-transcript": ("claude-code", parse_claude_code_records),
    "codex-exec": ("codex", parse_codex_exec_records),
    "codex-rollout": ("codex", parse_codex_rollout_records),
    "openclaw-session": ("openclaw", parse_openclaw_records),
}

_CLAUDE_TYPES = {"assistant", "user", "system", "result", "summary", "file-history-snapshot", "progress",
                 "queue-operation", "stream_event"}
_ROLLOUT_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_OPENCLAW_TYPES = {"session", "message", "model_change", "thinking_level_change", "compaction", "custom",
                   "custom_message", "branch_summary", "label"}


def format_of(record: dict[str, Any]) -> str | None:
    """Which native format one log line belongs to, or None if it is not recognisable."""
    kind = record.get("type")
    if not isinstance(kind, str):
        return None
    if kind.startswith(("thread.", "turn.", "item.")):
        return "codex-exec"
    if kind in _ROLLOUT_TYPES and "payload" in record:
        return "codex-rollout"
    if kind in _OPENCLAW_TYPES and ("parentId" in record or (kind == "session" and "version" in record)):
        return "openclaw-session"
    if kind in _CLAUDE_TYPES:
        if "sessionId" in record or kind in ("summary", "file-history-snapshot"):
            return "claude-code-transcript"
        if "session_id" in record or "message" in record:
            return "claude-code-stream"
    return None


def parse_native_log(path: Path, harness: str | None = None) -> Trajectory:
    """Parse a native harness log (format detected from its lines) into a `Trajectory`.

    `harness`, when given, must match the detected format's harness. Raises
    `TrajectoryFormatError` naming the file and line for an empty, unreadable or unknown log.
    """
    path = Path(path)
    records, warnings = read_jsonl(path)
    detected = None
    for _line, record in records[:50]:
        detected = format_of(record)
        if detected:
            break
    if detected is None:
        first_line, first = records[0]
        raise TrajectoryFormatError(
            path, first_line, f"unknown log format (first event type {first.get('type')!r}); expected Claude Code "
            "stream-json/transcript, Codex exec/rollout or OpenClaw session lines")
    owner, parser = FORMATS[detected]
    if harness is not None and harness != owner:
        raise TrajectoryFormatError(path, records[0][0], f"this is a {detected} log, not a {harness} log")
    traj = parser(records, path)
    traj.warnings[:0] = warnings
    if warnings and traj.complete is None:
        traj.complete = False
    return traj


# --- the common format as a harness may write it -----------------------------------------------

_STEP = TypeAdapter(Step)


def read_common_trajectory(path: Path, harness: str) -> Trajectory:
    """Read output/trajectory.jsonl written by a harness in the common format.

    Each line is one step (`{"type": "system"|"user"|"agent", ...}`, the dump of a `Step`; `index`
    may be left out and is renumbered). An optional line `{"type": "trajectory", ...}` carries the
    other `Trajectory` fields (harness, model, session_id, final_metrics, ...).
    """
    records, warnings = read_jsonl(path)
    header: dict[str, Any] = {}
    steps: list[Step] = []
    for line, record in records:
        if record.get("type") == "trajectory":
            header = {k: v for k, v in record.items() if k not in ("type", "steps")}
            continue
        try:
            steps.append(_STEP.validate_python({"index": len(steps) + 1, **record, "line": line}))
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(map(str, problem["loc"]))
            raise TrajectoryFormatError(path, line, f"not a trajectory step: {where}: {problem['msg']}") from None
    for i, step in enumerate(steps, start=1):
        step.index = i
    header.setdefault("harness", harness)
    header["source_format"] = "common"
    header["source_file"] = str(path)
    try:
        traj = Trajectory.model_validate({**header, "steps": [s.model_dump() for s in steps]})
    except ValidationError as exc:
        raise TrajectoryFormatError(path, None, f"bad trajectory header: {exc.errors()[0]['msg']}") from None
    traj.warnings[:0] = warnings
    return traj


def dump_trajectory_jsonl(trajectory: Trajectory) -> str:
    """The trajectory as trajectory.jsonl text: a header line, then one line per step."""
    header = trajectory.model_dump(mode="json", exclude={"steps"})
    lines = [json.dumps({"type": "trajectory", **header}, ensure_ascii=False)]
    lines += [step.model_dump_json() for step in trajectory.steps]
    return "\n".join(lines) + "\n"
