"""The short-answer delivery contract (task kind `short_answer`, OpenDS-World): `/output/answer.json`.

What an agent (or the harness's finalization stage) hands in instead of a report folder: the answer text and
why research ended. OpenDS-World records the termination reason apart from whether an answer was generated
and whether it is correct (paper 002, App. C.2.3), so the file carries all three facts the run can know.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ANSWER_FILE = "answer.json"
"""Name of the answer file in the agent's output folder (`/output/answer.json`)."""

TerminationReason = Literal["complete_answer", "budget_exhausted", "incomplete_output", "context_overflow",
                            "execution_error"]
"""Why research ended (App. C.2.3): the model gave a complete, non-empty answer without further tool calls; or
a research budget (3,600 s or 100 tool calls in the paper) was spent; or the output was cut short; or the
context overflowed; or execution failed."""

TERMINATION_REASONS: tuple[TerminationReason, ...] = (
    "complete_answer", "budget_exhausted", "incomplete_output", "context_overflow", "execution_error")

AnswerSource = Literal["research", "finalization", "none"]
"""Which stage produced the answer: research itself, the tool-free finalization stage that follows a research
phase ended without a complete answer (App. C.2.3), or neither (no answer)."""


class AnswerFile(BaseModel):
    """`/output/answer.json`: the candidate answer, how research ended, and which stage answered."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    answer: str = Field(description="The candidate answer as delivered; empty when there is none.")
    termination: TerminationReason = Field(description="Why research ended (App. C.2.3).")
    source: AnswerSource = Field(description="The stage that produced the answer.")
    execution_error: str | None = Field(None, description="The error that ended execution, if one did; the answer "
                                                          "judge receives it as the execution status (App. C.4).")

    @property
    def has_answer(self) -> bool:
        """Whether an answer was generated: a non-empty text (App. C.2.3 accepts only non-empty answers)."""
        return bool(self.answer.strip())
