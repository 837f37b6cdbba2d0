"""Process statistics of one trajectory (the paper's Tables 22-24) and their medians.

Positions are over the trajectory's *actions*: its tool calls in order (the events that carry a
phase). An action at index i of n has position 100 * i / (n - 1) (0% the first action, 100%
the last; a single action is at 0%).

- first write / last search: position of the first `write` call and of the last `search` call.
- searches after write: share (%) of `search` calls that come after the first `write` call;
  0 when there are searches but no write, None when there are no searches.
- write blocks: maximal runs of consecutive `write` calls (any other call ends a block).
- interleaved: searches after write >= 30% and write blocks >= 4 (the paper's rule; the paper
  applies it to a configuration's medians, `summarize` does the same over many trajectories).
- repeated-failure loop: >= 3 consecutive tool calls that all failed with the same tool name
  and the same arguments (the agent retrying a broken call unchanged).
"""

import json
from datetime import datetime
from statistics import median

from pydantic import BaseModel, Field

from ._models import PHASES, Phase, SystemStep, ToolCall, Trajectory

INTERLEAVED_SEARCHES_AFTER_WRITE_PCT = 30.0
INTERLEAVED_WRITE_BLOCKS = 4
LOOP_MIN_REPEATS = 3


class FailureLoop(BaseModel):
    """A run of identical failing tool calls."""

    tool: str = Field(description="Tool name of the repeated call.")
    arguments: str = Field(description="Canonical JSON of the repeated arguments (cut to 200 characters).")
    repeats: int = Field(description="How many times the failing call was made in a row.")
    first_action: int = Field(description="Position of the first call of the run among all tool calls, from 1.")


class ProcessStats(BaseModel):
    """Process statistics of one trajectory."""

    steps: int = Field(description="Logged trajectory entries (system, user and agent steps).")
    agent_steps: int = Field(description="Model turns.")
    subagent_steps: int = Field(description="Model turns run inside subagents (part of agent_steps).")
    tool_calls: int = Field(description="Tool invocations.")
    tool_errors: int = Field(description="Tool invocations whose result was an error.")
    system_errors: int = Field(description="Errors the harness reported outside tools (API retries, aborts).")
    wall_time_s: float | None = Field(description="Seconds from the first to the last timestamped step, or the "
                                      "attempt's wall time when given; None when unknown.")
    input_tokens: int | None = Field(description="Input tokens (gateway when attached, else harness).")
    output_tokens: int | None = Field(description="Output tokens (same source).")
    total_tokens: int | None = Field(description="input_tokens + output_tokens.")
    token_source: str | None = Field(description="`gateway`, `harness`, or None when no counts exist.")
    harness_total_tokens: int | None = Field(description="Tokens the harness itself reported, kept for comparison.")
    phase_counts: dict[str, int] = Field(description="Tool calls per phase.")
    first_write_pct: float | None = Field(description="Position of the first write call, % of the trace.")
    last_search_pct: float | None = Field(description="Position of the last search call, % of the trace.")
    searches_after_write_pct: float | None = Field(description="% of search calls after the first write call.")
    write_blocks: int = Field(description="Contiguous runs of write calls.")
    interleaved: bool = Field(description="searches_after_write_pct >= 30 and write_blocks >= 4.")
    failure_loops: list[FailureLoop] = Field(description="Repeated-failure loops (>= 3 identical failing calls).")


def _position(i: int, n: int) -> float:
    return 0.0 if n <= 1 else round(100.0 * i / (n - 1), 1)


def _canonical(arguments: object) -> str:
    try:
        return json.dumps(arguments, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(arguments)


def interleaved(searches_after_write_pct: float | None, write_blocks: float) -> bool:
    return (searches_after_write_pct or 0.0) >= INTERLEAVED_SEARCHES_AFTER_WRITE_PCT and \
        write_blocks >= INTERLEAVED_WRITE_BLOCKS


def _wall_time(trajectory: Trajectory) -> float | None:
    times: list[datetime] = [s.timestamp for s in trajectory.steps if s.timestamp]
    for step in trajectory.agent_steps():
        times += [o.timestamp for o in step.observations if o.timestamp]
    return (max(times) - min(times)).total_seconds() if len(times) >= 2 else None


def process_stats(trajectory: Trajectory, wall_time_s: float | None = None) -> ProcessStats:
    """Statistics of one trajectory; `wall_time_s` (e.g. from attempt.json) overrides the timestamps'."""
    calls: list[ToolCall] = trajectory.tool_calls()
    failed = {o.tool_call_id for s in trajectory.agent_steps() for o in s.observations if o.is_error}
    phases: list[Phase] = [c.phase for c in calls]
    n = len(calls)
    writes = [i for i, p in enumerate(phases) if p == "write"]
    searches = [i for i, p in enumerate(phases) if p == "search"]
    first_write = writes[0] if writes else None
    if not searches:
        after = None
    elif first_write is None:
        after = 0.0
    else:
        after = round(100.0 * sum(1 for i in searches if i > first_write) / len(searches), 1)
    blocks = sum(1 for i in writes if i == 0 or phases[i - 1] != "write")
    loops: list[FailureLoop] = []
    i = 0
    while i < n:
        j = i
        key = (calls[i].name, _canonical(calls[i].arguments))
        while j < n and calls[j].id in failed and (calls[j].name, _canonical(calls[j].arguments)) == key:
            j += 1
        if j - i >= LOOP_MIN_REPEATS:
            loops.append(FailureLoop(tool=key[0], arguments=key[1][:200], repeats=j - i, first_action=i + 1))
        i = max(j, i + 1)
    tokens = trajectory.final_metrics.tokens
    harness = trajectory.final_metrics.harness_tokens
    agents = trajectory.agent_steps()
    return ProcessStats(
        steps=len(trajectory.steps), agent_steps=len(agents), subagent_steps=sum(1 for s in agents if s.subagent),
        tool_calls=n, tool_errors=sum(1 for c in calls if c.id in failed),
        system_errors=sum(1 for s in trajectory.steps if isinstance(s, SystemStep) and s.is_error)
        + sum(1 for s in agents if s.error),
        wall_time_s=wall_time_s if wall_time_s is not None else _wall_time(trajectory),
        input_tokens=tokens.input_tokens if tokens else None, output_tokens=tokens.output_tokens if tokens else None,
        total_tokens=tokens.total_tokens if tokens else None,
        token_source=None if tokens is None else ("gateway" if trajectory.final_metrics.gateway_tokens else "harness"),
        harness_total_tokens=harness.total_tokens if harness else None,
        phase_counts={p: phases.count(p) for p in PHASES},
        first_write_pct=_position(first_write, n) if first_write is not None else None,
        last_search_pct=_position(searches[-1], n) if searches else None,
        searches_after_write_pct=after, write_blocks=blocks, interleaved=interleaved(after, blocks),
        failure_loops=loops,
    )


class StatsSummary(BaseModel):
    """Medians of process statistics over many trajectories (one configuration), as in Tables 22-24."""

    trajectories: int
    medians: dict[str, float | None] = Field(description="Median of each numeric statistic over the trajectories "
                                             "that have it; None when none has it.")
    interleaved: bool = Field(description="The paper's rule applied to the medians.")


SUMMARY_FIELDS = ("steps", "tool_calls", "tool_errors", "wall_time_s", "total_tokens", "first_write_pct",
                  "last_search_pct", "searches_after_write_pct", "write_blocks")


def summarize(stats: list[ProcessStats]) -> StatsSummary:
    medians: dict[str, float | None] = {}
    for name in SUMMARY_FIELDS:
        values = [getattr(s, name) for s in stats if getattr(s, name) is not None]
        medians[name] = float(median(values)) if values else None
    return StatsSummary(trajectories=len(stats), medians=medians,
                        interleaved=interleaved(medians["searches_after_write_pct"], medians["write_blocks"] or 0))


