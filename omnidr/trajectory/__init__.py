"""Trajectory stage: one common step format for every harness, parsed from native logs.

`parse_native_log` reads Claude Code, Codex and OpenClaw logs; `trajectory_from_gateway`
rebuilds a minimal trajectory from gateway.jsonl; `attach_gateway_totals` puts the gateway's
token totals (the source of truth) beside the harness's own; `process_stats` measures a
trajectory (paper Tables 22-24); `audit_run` does all of it for a run folder (`omnidr audit`).
"""

from ._audit import (
    AttemptAudit,
    attempt_dirs,
    audit_attempt,
    audit_run,
    load_attempt_trajectory,
    run_harness,
    scored_trace_stats,
)
from ._gateway import attach_gateway_totals, read_gateway_log, trajectory_from_gateway
from ._jsonl import TrajectoryFormatError
from ._models import (
    PHASES,
    AgentStep,
    FinalMetrics,
    Observation,
    Phase,
    Step,
    StepUsage,
    SystemStep,
    TokenTotals,
    ToolCall,
    Trajectory,
    UserStep,
    to_atif,
)
from ._native import (
    CLAUDE_CODE_LOG,
    CLAUDE_CONFIG_DIR,
    CODEX_EXEC_LOG,
    CODEX_HOME_DIR,
    NATIVE_LOG_GLOBS,
    OPENCLAW_LOG,
    OPENCLAW_STATE_DIR,
    dump_trajectory_jsonl,
    parse_native_log,
    read_common_trajectory,
)
from ._phases import TOOL_PHASES, phase_of
from ._stats import FailureLoop, ProcessStats, StatsSummary, process_stats, summarize

__all__ = [
    "CLAUDE_CODE_LOG", "CLAUDE_CONFIG_DIR", "CODEX_EXEC_LOG", "CODEX_HOME_DIR", "NATIVE_LOG_GLOBS", "OPENCLAW_LOG",
    "OPENCLAW_STATE_DIR", "PHASES", "TOOL_PHASES", "AgentStep", "AttemptAudit", "FailureLoop", "FinalMetrics",
    "Observation", "Phase", "ProcessStats", "StatsSummary", "Step", "StepUsage", "SystemStep", "TokenTotals", "ToolCall",
    "Trajectory", "TrajectoryFormatError", "UserStep", "attach_gateway_totals", "attempt_dirs", "audit_attempt", "audit_run",
    "dump_trajectory_jsonl", "load_attempt_trajectory", "parse_native_log", "phase_of", "process_stats",
    "read_common_trajectory", "read_gateway_log", "run_harness", "scored_trace_stats", "summarize", "to_atif", "trajectory_from_gateway",
]
