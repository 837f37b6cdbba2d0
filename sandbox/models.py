"""Models shared by the host (`omnidr`) and the code that runs inside the sandbox containers.

Only pydantic is needed here, so that the gateway and proxy images stay small.
"""

from pydantic import BaseModel, ConfigDict, Field

# How an evidence brief (calibration's R3) marks a question no source answers: `- [<fact id> open question] <claim>`.
# The host writes it (omnidr.benchmark.evidence_brief); the scripted model reads it.
OPEN_QUESTION_TAG = "open question"


class Budget(BaseModel):
    """Everything one attempt is allowed (paper App. F.1). Frozen: it must not change once a run starts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_iterations: int = Field(500, ge=1, description="Agent iterations, counted as model requests through the gateway.")
    max_output_tokens: int = Field(64_000, ge=1, description="Per-request output tokens; larger requests are clamped to this.")
    max_total_tokens: int | None = Field(None, ge=1, description="Input plus output tokens over the attempt; None = unlimited.")
    max_tool_calls: int | None = Field(None, ge=0, description="Tool-use blocks in model responses over the attempt; None = unlimited.")
    wall_time_s: float = Field(36_000.0, gt=0, description="Wall-clock limit of one attempt, seconds (10 h).")
    upstream_retries: int = Field(5, ge=0, description="Retries of one model request on upstream 5xx, 429 or connection failure.")
    attempts_per_task: int = Field(3, ge=1, description="Complete report attempts per task.")
