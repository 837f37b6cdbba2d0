"""Assembling a `Trajectory` step by step while a parser reads a log."""

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ._models import AgentStep, Observation, Step, StepUsage, ToolCall, Trajectory
from ._phases import phase_of, skill_of


def timestamp(value: Any) -> datetime | None:
    """A log timestamp (ISO text, or epoch seconds/milliseconds) as an aware UTC datetime."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, (int, float)):
            seconds = value / 1000 if value > 1e11 else value
            return datetime.fromtimestamp(seconds, tz=UTC)
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except (ValueError, OverflowError, OSError):
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class TrajectoryBuilder:
    """Numbers steps, labels tool-call phases, and ties observations to the calls they answer."""

    def __init__(self, harness: str, source_format: str, path: Path | None):
        self.harness = harness
        self.source_format = source_format
        self.path = path
        self.steps: list[Step] = []
        self.warnings: list[str] = []
        self._owner: dict[str, AgentStep] = {}

    def add(self, step: Step) -> Step:
        step.index = len(self.steps) + 1
        self.steps.append(step)
        return step

    def agent(self, **fields: Any) -> AgentStep:
        step = AgentStep(index=1, **fields)
        self.add(step)
        return step

    def call(self, step: AgentStep, call_id: str, name: str, arguments: Any) -> ToolCall:
        call = ToolCall(id=call_id, name=name, arguments=arguments, phase=phase_of(self.harness, name, arguments),
                        skill=skill_of(self.harness, name, arguments))
        step.tool_calls.append(call)
        self._owner[call_id] = step
        return call

    def has_call(self, call_id: str) -> bool:
        return call_id in self._owner

    def observe(self, call_id: str | None, content: str, is_error: bool, when: datetime | None = None,
                line: int | None = None) -> Observation:
        """Attach a tool result to the step whose call it answers (else to the last agent step)."""
        obs = Observation(tool_call_id=call_id, content=content, is_error=is_error, timestamp=when)
        owner = self._owner.get(call_id) if call_id else None
        if owner is None:
            agents = [s for s in self.steps if isinstance(s, AgentStep)]
            if not agents:
                self.warnings.append(f"line {line}: tool result for unknown call {call_id!r} dropped")
                return obs
            owner = agents[-1]
            self.warnings.append(f"line {line}: tool result for unknown call {call_id!r} kept on step {owner.index}")
        owner.observations.append(obs)
        return obs

    def build(self, **fields: Any) -> Trajectory:
        return Trajectory(
            harness=self.harness, source_format=self.source_format,
            source_file=str(self.path) if self.path else None, steps=self.steps,
            warnings=self.warnings + fields.pop("warnings", []), **fields,
        )


def usage_from(data: dict[str, Any] | None, *, anthropic: bool) -> StepUsage | None:
    """Per-turn usage from an Anthropic-style (input excludes cache) or OpenAI-style usage dict."""
    if not isinstance(data, dict):
        return None
    cache_read = int(data.get("cache_read_input_tokens") or data.get("cached_input_tokens") or 0)
    cache_write = int(data.get("cache_creation_input_tokens") or 0)
    base = int(data.get("input_tokens") or data.get("prompt_tokens") or 0)
    reasoning = data.get("reasoning_output_tokens") or data.get("reasoning_tokens")
    return StepUsage(
        input_tokens=base + cache_read + cache_write if anthropic else base,
        output_tokens=int(data.get("output_tokens") or data.get("completion_tokens") or 0),
        cache_read_input_tokens=cache_read or None,
        cache_creation_input_tokens=cache_write or None,
        reasoning_tokens=int(reasoning) if reasoning else None,
    )
