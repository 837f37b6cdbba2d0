"""Process statistics of one trajectory (the paper's Tables 23-24, App. F.7) and their medians.

- The trace is the main trajectory (`Trajectory.main`): "Claude Code main trajectories also omit internal steps
  executed in isolated subagent contexts" (App. F.7). Steps, tool calls and errors with the subagents' own steps
  merged in are kept beside them (`*_with_subagents`), as an extra view, never as the paper's numbers.
- steps: logged trajectory entries (system, user and agent steps), as Table 23 counts them.
- Positions are "normalized event positions, where 0% is the start of a trace and 100% is the
  end": over the trace's events, in order: every tool call is an event, and an entry without tool
  calls (a message, a system note) is one. An event at index i of n is at 100 * i / (n - 1).
- first write / last search: position of the first report-writing event (a write under the report
  folder, `writes_report`: not a scratch file, not a bare `mkdir`) and of the last `search` call.
- searches after write: share (%) of `search` calls after the first report-writing event; 0 when
  there are searches but no report write, None when there are no searches.
- write blocks: "contiguous report-writing episodes separated by other actions": maximal runs of
  consecutive report-writing tool calls (any other call ends a block).
- interleaved: searches after write >= 30% and write blocks >= 4 (the paper's rule, applied to a
  configuration's medians; `summarize` does the same).
- repeated-failure loop: >= 3 consecutive tool calls that all failed with the same tool name
  and the same arguments (the agent retrying a broken call unchanged).

A configuration's medians are taken over its tasks, one trace per task ("median process statistics
over available task traces"): `summarize` takes per-task values, and `omnidr audit` gives it each
task's last attempt, the one whose report is scored.
"""

import json
from datetime import datetime
from statistics import median

from pydantic import BaseModel, Field

from ._models import PHASES, AgentStep, Phase, SystemStep, ToolCall, Trajectory
from ._phases import writes_report

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

    steps: int = Field(description="Logged entries of the main trajectory (system, user and agent steps).")
    agent_steps: int = Field(description="Model turns of the main trajectory.")
    subagent_steps: int = Field(description="Model turns run inside subagent contexts (not in agent_steps).")
    tool_calls: int = Field(description="Tool invocations of the main trajectory.")
    tool_errors: int = Field(description="Tool invocations of the main trajectory whose result was an error.")
    steps_with_subagents: int = Field(0, description="Logged entries, the subagents' own included.")
    tool_calls_with_subagents: int = Field(0, description="Tool invocations, the subagents' own included.")
    tool_errors_with_subagents: int = Field(0, description="Failed tool invocations, the subagents' own included.")
    system_errors: int = Field(description="Errors the harness reported outside tools (API retries, aborts).")
    wall_time_s: float | None = Field(description="Seconds from the first to the last timestamped step, or the "
                                      "attempt's wall time when given; None when unknown.")
    input_tokens: int | None = Field(description="Input tokens (gateway when attached, else harness), every "
                                     "request of the attempt, the subagents' included.")
    output_tokens: int | None = Field(description="Output tokens (same source).")
    total_tokens: int | None = Field(description="input_tokens + output_tokens.")
    token_source: str | None = Field(description="`gateway`, `harness`, or None when no counts exist.")
    harness_total_tokens: int | None = Field(description="Tokens the harness itself reported: the paper's "
                                             "runner-reported tokens (App. F.6-F.7).")
    phase_counts: dict[str, int] = Field(description="Tool calls per phase.")
    events: int = Field(0, description="Events of the trace positions are measured over (tool calls, and entries "
                        "without any).")
    report_writes: int = Field(0, description="Tool calls that wrote under the report folder.")
    first_write_pct: float | None = Field(description="Position of the first report-writing event, % of the trace.")
    last_search_pct: float | None = Field(description="Position of the last search call, % of the trace.")
    searches_after_write_pct: float | None = Field(description="% of search calls after the first report-writing event.")
    write_blocks: int = Field(description="Contiguous runs of report-writing calls.")
    interleaved: bool = Field(description="searches_after_write_pct >= 30 and write_blocks >= 4.")
    failure_loops: list[FailureLoop] = Field(description="Repeated-failure loops (>= 3 identical failing calls).")
    web_requests: int | None = Field(None, description="Requests through the egress proxy (network.jsonl); None "
                                                       "when the web log was not read.")
    provider_web_requests: int | None = Field(
        None, description="Searches and fetches the model provider ran (provider_web.jsonl), refused ones included.")


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


def process_stats(trajectory: Trajectory, wall_time_s: float | None = None, web: list | None = None) -> ProcessStats:
    """Statistics of one trajectory's main trace; `wall_time_s` (e.g. from attempt.json) overrides the timestamps'.
    `web`: the attempt's web log (`sandbox.egress.read_web_log`), both doors, for the request counts."""
    merged, trajectory = trajectory, trajectory.main()
    failed_anywhere = {o.tool_call_id for s in merged.agent_steps() for o in s.observations if o.is_error}
    calls: list[ToolCall] = trajectory.tool_calls()
    failed = {o.tool_call_id for s in trajectory.agent_steps() for o in s.observations if o.is_error}
    phases: list[Phase] = [c.phase for c in calls]
    n = len(calls)
    report = [writes_report(c.name, c.arguments, c.phase) for c in calls]
    # the event sequence: each tool call (with whether it wrote the report), and each entry that made none
    flags = iter(report)
    events: list[tuple[ToolCall, bool] | None] = []
    for step in trajectory.steps:
        made = step.tool_calls if isinstance(step, AgentStep) else []
        events += [(c, next(flags)) for c in made] or [None]
    writes = [i for i, e in enumerate(events) if e is not None and e[1]]
    searches = [i for i, e in enumerate(events) if e is not None and e[0].phase == "search"]
    first_write = writes[0] if writes else None
    if not searches:
        after = None
    elif first_write is None:
        after = 0.0
    else:
        after = round(100.0 * sum(1 for i in searches if i > first_write) / len(searches), 1)
    blocks = sum(1 for i, w in enumerate(report) if w and (i == 0 or not report[i - 1]))
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
        steps=len(trajectory.steps), agent_steps=len(agents),
        subagent_steps=sum(1 for s in merged.agent_steps() if s.subagent),
        tool_calls=n, tool_errors=sum(1 for c in calls if c.id in failed),
        steps_with_subagents=len(merged.steps), tool_calls_with_subagents=len(merged.tool_calls()),
        tool_errors_with_subagents=sum(1 for c in merged.tool_calls() if c.id in failed_anywhere),
        system_errors=sum(1 for s in trajectory.steps if isinstance(s, SystemStep) and s.is_error)
        + sum(1 for s in agents if s.error),
        wall_time_s=wall_time_s if wall_time_s is not None else _wall_time(merged),
        input_tokens=tokens.input_tokens if tokens else None, output_tokens=tokens.output_tokens if tokens else None,
        total_tokens=tokens.total_tokens if tokens else None,
        token_source=None if tokens is None else ("gateway" if trajectory.final_metrics.gateway_tokens else "harness"),
        harness_total_tokens=harness.total_tokens if harness else None,
        phase_counts={p: phases.count(p) for p in PHASES}, events=len(events), report_writes=sum(report),
        first_write_pct=_position(first_write, len(events)) if first_write is not None else None,
        last_search_pct=_position(searches[-1], len(events)) if searches else None,
        searches_after_write_pct=after, write_blocks=blocks, interleaved=interleaved(after, blocks),
        failure_loops=loops,
        web_requests=None if web is None else sum(1 for e in web if e.via == "proxy"),
        provider_web_requests=None if web is None else sum(1 for e in web if e.via == "provider"),
    )


class StatsSummary(BaseModel):
    """Medians of process statistics over many trajectories (one configuration), as in Tables 22-24."""

    trajectories: int
    medians: dict[str, float | None] = Field(description="Median of each numeric statistic over the trajectories "
                                             "that have it; None when none has it.")
    interleaved: bool = Field(description="The paper's rule applied to the medians.")


SUMMARY_FIELDS = ("steps", "tool_calls", "tool_errors", "wall_time_s", "total_tokens", "harness_total_tokens",
                  "first_write_pct", "last_search_pct", "searches_after_write_pct", "write_blocks",
                  "steps_with_subagents", "tool_calls_with_subagents")


def summarize(stats: list[ProcessStats]) -> StatsSummary:
    """Medians over the given traces: pass one per task (see the module docstring)."""
    medians: dict[str, float | None] = {}
    for name in SUMMARY_FIELDS:
        values = [getattr(s, name) for s in stats if getattr(s, name) is not None]
        medians[name] = float(median(values)) if values else None
    return StatsSummary(trajectories=len(stats), medians=medians,
                        interleaved=interleaved(medians["searches_after_write_pct"], medians["write_blocks"] or 0))


