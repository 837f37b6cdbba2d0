"""The short-answer delivery contract (task kind `short_answer`, OpenDS-World): `/output/answer.json`.

What an agent (or the harness's finalization stage) hands in instead of a report folder: the answer text and
why research ended. OpenDS-World records the termination reason apart from whether an answer was generated
and whether it is correct (paper 002, App. C.2.3), so the file carries all three facts the run can know.
"""

from pathlib import Path
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


class FinalizeRequest(BaseModel):
    """`POST /_gateway/finalize` (admin token): run the tool-free finalization stage (paper 002, App. C.2.3) on the
    evidence the attempt's research collected, i.e. the last conversation the agent sent through the gateway.

    From this call on the agent's token is refused: research is over. The gateway sends at most `max_requests`
    requests upstream, in the API family of that conversation, with every tool removed, `prompt` appended as the
    last user message, the first request capped at `first_tokens` output tokens and the whole stage at
    `total_tokens`; each is logged in `gateway.jsonl` with phase `finalization`. An answer is accepted only when it
    is non-empty, complete (not cut at the token cap) and carries no tool call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: str = Field(min_length=1, description="The final-answer prompt (App. C.3.2).")
    question: str = Field(min_length=1, description="The task's instruction: the conversation when research sent "
                                                    "no model request at all.")
    max_requests: int = Field(2, ge=1, description="At most this many requests (App. C.2.3: 2).")
    total_tokens: int = Field(5000, ge=1, description="Output tokens of the whole stage (App. C.2.3: 5,000).")
    first_tokens: int = Field(4000, ge=1, description="Output tokens of the first request (App. C.2.3: 4,000).")


class FinalizationResult(BaseModel):
    """The gateway's answer to `POST /_gateway/finalize`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    answer: str = Field("", description="The accepted answer; empty when no request produced one.")
    accepted: bool = Field(False, description="Whether a request produced an acceptable answer.")
    requests: int = Field(0, ge=0, description="Requests sent upstream.")
    output_tokens: int = Field(0, ge=0, description="Output tokens the stage used.")
    rejected: list[str] = Field(default_factory=list, description="Why each request that produced no accepted "
                                                                  "answer was rejected (tool call, empty, cut short, "
                                                                  "upstream error).")
    family: str | None = Field(None, description="The API family the stage spoke (that of the research "
                                                 "conversation), None when no request could be sent.")


def read_answer_file(path: Path) -> AnswerFile | None:
    """The answer file at `path`; None when it is missing or is not an AnswerFile (an agent's broken write)."""
    try:
        return AnswerFile.model_validate_json(Path(path).read_text("utf-8"))
    except (OSError, ValueError):
        return None


FINAL_ANSWER_PROMPT = (
    "Research is over: no more tools can be called. Using only the evidence collected above, give your final "
    "answer to the question now. Unless the question asks for another format, write one direct English paragraph "
    "of one to three sentences, at most 80 words. If the evidence is not sufficient, say so plainly."
)
"""The finalization stage's prompt (paper 002, App. C.3.2, in our words): a short answer from the collected
evidence only, no tool calls, insufficient evidence acknowledged. The gateway appends it as the last user message;
the scripted model recognises a finalization request by it."""
