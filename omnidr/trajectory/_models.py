"""The common trajectory format: one model for every harness.

A `Trajectory` is an ordered list of steps, each a `SystemStep`, `UserStep` or `AgentStep`
(told apart by `type`, which is also the step's source in Harbor's ATIF). An agent step is one
model turn: its text, its exposed reasoning, the tool calls it made, and the observations
(tool results) that came back for those calls. `to_atif` exports the same data as an ATIF dict.
"""

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "omnidr-trajectory/1"

Phase = Literal["video", "search", "read", "write", "verify", "other"]
"""What a tool call does for the research task (see `_phases.py` for the per-harness mapping)."""

PHASES: tuple[Phase, ...] = ("video", "search", "read", "write", "verify", "other")


class StepUsage(BaseModel):
    """Tokens of one model turn as the harness reported them."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    input_tokens: int = Field(0, description="Prompt tokens, cached ones included.")
    output_tokens: int = Field(0, description="Generated tokens, reasoning tokens included.")
    cache_read_input_tokens: int | None = Field(None, description="Part of input_tokens read from a prompt cache.")
    cache_creation_input_tokens: int | None = Field(None, description="Part of input_tokens written to a cache.")
    reasoning_tokens: int | None = Field(None, description="Part of output_tokens spent on hidden reasoning.")
    server_search_requests: int | None = Field(
        None, description="Web searches the model provider ran itself for this turn (server-side tools).")
    server_fetch_requests: int | None = Field(
        None, description="Web fetches the model provider ran itself for this turn (server-side tools).")


class ToolCall(BaseModel):
    """One tool invocation the model asked for."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    id: str = Field(description="Call id given by the model or harness (ties the call to its observation).")
    name: str = Field(description="Tool name as the harness exposes it (e.g. `WebSearch`, `shell`).")
    arguments: Any = Field(None, description="Arguments: a JSON value (decoded when the log held a JSON string).")
    phase: Phase = Field("other", description="Research phase of the call, from the harness's phase table.")
    skill: str | None = Field(None, description="The research skill action the call runs (`video frames`), from a "
                                                "reference-agent tool or an `omnidr-skill` shell command; None otherwise.")


class Observation(BaseModel):
    """What came back for one tool call."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    tool_call_id: str | None = Field(description="Id of the call this answers; None if the log does not say.")
    content: str = Field("", description="Result text (non-text parts summarised as placeholders).")
    is_error: bool = Field(False, description="True when the tool failed (error flag or non-zero exit code).")
    timestamp: datetime | None = Field(None, description="When the result was logged (UTC); None if not logged.")


class _StepBase(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

    index: int = Field(ge=1, description="Position of the step in the trajectory, from 1.")
    timestamp: datetime | None = Field(
        None, description="When the step was logged (UTC); None when the format has none (Codex exec events)."
    )
    line: int | None = Field(None, description="Line of the native log the step starts at, from 1.")
    subagent: bool = Field(False, description="True when the step ran in a subagent's own context (a Claude Code "
                           "sidechain or subagent transcript): not part of the main trajectory.")


class SystemStep(_StepBase):
    """Something the harness itself reported: session start, API retry, aborted turn, compaction."""

    type: Literal["system"] = "system"
    message: str = Field("", description="What happened, in the harness's words.")
    is_error: bool = Field(False, description="True for an error the harness reported (API retry, aborted turn).")


class UserStep(_StepBase):
    """A message from the user (the task instruction, or a follow-up)."""

    type: Literal["user"] = "user"
    message: str = Field("", description="Message text.")


class AgentStep(_StepBase):
    """One model turn: text, reasoning, tool calls and their observations."""

    type: Literal["agent"] = "agent"
    model: str | None = Field(None, description="Model that produced the turn, if logged.")
    message: str = Field("", description="Visible text of the turn.")
    reasoning: str | None = Field(None, description="Reasoning text, when the harness exposes it.")
    tool_calls: list[ToolCall] = Field(default_factory=list, description="Tool calls of the turn, in order.")
    observations: list[Observation] = Field(default_factory=list, description="Results of those calls.")
    usage: StepUsage | None = Field(None, description="Harness-reported tokens of the turn; None if not logged.")
    error: str | None = Field(None, description="Model-call error of the turn, if any.")


Step = Annotated[SystemStep | UserStep | AgentStep, Field(discriminator="type")]
"""One trajectory entry."""


class TokenTotals(BaseModel):
    """Token totals of a whole trajectory from one source."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    input_tokens: int = Field(0, description="Prompt tokens over the trajectory, cached ones included.")
    output_tokens: int = Field(0, description="Generated tokens over the trajectory.")
    requests: int | None = Field(None, description="Model requests counted by that source, if it counts them.")

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class FinalMetrics(BaseModel):
    """Totals of the trajectory. The gateway is the source of truth for tokens; the harness's own
    counts are kept beside them for comparison."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    gateway_tokens: TokenTotals | None = Field(None, description="Totals from gateway.jsonl; None if not attached.")
    harness_tokens: TokenTotals | None = Field(None, description="Totals the harness itself reported.")
    harness_cost_usd: float | None = Field(None, description="Cost the harness reported, USD, if any.")
    harness_duration_s: float | None = Field(None, description="Run duration the harness reported, seconds.")
    gateway_errors: int | None = Field(None, description="Gateway exchanges that did not end `ok`.")

    @property
    def tokens(self) -> TokenTotals | None:
        """The totals to use: the gateway's when attached, else the harness's."""
        return self.gateway_tokens or self.harness_tokens


class Trajectory(BaseModel):
    """`trajectory.json`: the common record of one agent run."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    schema_version: str = Field(SCHEMA_VERSION, description="Version of this format.")
    harness: str = Field(description="Harness that produced the run (claude-code, codex, openclaw, command, ...).")
    source_format: str = Field(
        description="Where the steps came from: claude-code-stream, claude-code-transcript, codex-exec, "
        "codex-rollout, openclaw-session, gateway, or common (a trajectory.jsonl written by the harness)."
    )
    source_file: str | None = Field(None, description="Path of the log the steps were parsed from.")
    session_id: str | None = Field(None, description="The harness's session/thread id, if logged.")
    harness_version: str | None = Field(None, description="Harness version, if logged.")
    model: str | None = Field(None, description="Main model of the run, if logged.")
    complete: bool | None = Field(
        None, description="True when the log shows the run finished, False when it shows it was cut off, None if "
        "the format does not tell."
    )
    ended_with_error: str | None = Field(
        None, description="The error the run ended on, when the log says so (Claude Code: a `result` with is_error, "
        "e.g. the gateway's budget refusal, a 400): the run failed, even where the harness calls it a success; None "
        "when it ended normally or the log does not tell.")
    steps: list[Step] = Field(default_factory=list, description="Steps in log order.")
    final_metrics: FinalMetrics = Field(default_factory=FinalMetrics, description="Totals.")
    warnings: list[str] = Field(default_factory=list, description="What the parser skipped or had to guess.")

    def agent_steps(self) -> list[AgentStep]:
        return [s for s in self.steps if isinstance(s, AgentStep)]

    def main(self) -> "Trajectory":
        """The main trajectory: this one without the steps that ran in subagent contexts (paper App. F.7: "Claude
        Code main trajectories also omit internal steps executed in isolated subagent contexts"). A log that holds
        a subagent's context alone (a `subagents/agent-*.jsonl` file read by itself) is that trace whole."""
        flags = {s.subagent for s in self.steps}
        if flags != {False, True}:
            return self
        return self.model_copy(update={"steps": [s for s in self.steps if not s.subagent]})

    def tool_calls(self) -> list[ToolCall]:
        return [c for s in self.agent_steps() for c in s.tool_calls]

    def observation_for(self, call_id: str) -> Observation | None:
        for step in self.agent_steps():
            for obs in step.observations:
                if obs.tool_call_id == call_id:
                    return obs
        return None


def to_atif(trajectory: Trajectory) -> dict[str, Any]:
    """The trajectory as a Harbor ATIF-style dict (steps with source, tool_calls, observation, metrics)."""
    steps = []
    for step in trajectory.steps:
        out: dict[str, Any] = {
            "step_id": step.index,
            "timestamp": step.timestamp.isoformat() if step.timestamp else None,
            "source": step.type,
            "message": step.message,
        }
        if isinstance(step, AgentStep):
            out["model_name"] = step.model
            if step.reasoning:
                out["reasoning_content"] = step.reasoning
            if step.tool_calls:
                out["tool_calls"] = [
                    {"tool_call_id": c.id, "function_name": c.name, "arguments": c.arguments} for c in step.tool_calls
                ]
            if step.observations:
                out["observation"] = {
                    "results": [{"source_call_id": o.tool_call_id, "content": o.content} for o in step.observations]
                }
            if step.usage:
                out["metrics"] = {
                    "prompt_tokens": step.usage.input_tokens,
                    "completion_tokens": step.usage.output_tokens,
                    "cached_tokens": step.usage.cache_read_input_tokens,
                }
        steps.append(out)
    totals = trajectory.final_metrics.tokens
    return {
        "schema_version": "ATIF-v1.2",
        "session_id": trajectory.session_id,
        "agent": {"name": trajectory.harness, "version": trajectory.harness_version, "model_name": trajectory.model},
        "steps": steps,
        "final_metrics": {
            "total_prompt_tokens": totals.input_tokens if totals else None,
            "total_completion_tokens": totals.output_tokens if totals else None,
            "total_cost_usd": trajectory.final_metrics.harness_cost_usd,
            "total_steps": len(steps),
        },
    }
