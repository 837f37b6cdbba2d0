"""The short-answer contract (task kind `short_answer`, OpenDS-World, paper 002): `/output/answer.json`, the
execution protocol the agent reads as `/input/protocol.json`, the two prompts, and the gateway's finalization stage.

`answer.json` is what an agent (or the harness's finalization stage) hands in instead of a report folder: the
answer text and why research ended. OpenDS-World records the termination reason apart from whether an answer was
generated and whether it is correct (App. C.2.3), so the file carries all three facts the run can know.
"""

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._policy import Budget

PROTOCOL_FILE = "protocol.json"
"""Name of the protocol file in the agent's input folder (`/input/protocol.json`): a `ShortAnswerProtocol` dump."""

RESEARCH_PROMPT = """\
You are answering a question about a video by researching it. The question is in the user's message, together \
with the path of a local copy of the video, which you may read but not change.
Work with the tools you are given: look at the video (sample its frames, read its subtitles) over the whole of it \
or over the stretches that matter, search the web, open pages, files and other media, and look at what you find \
yourself rather than trusting a title or a snippet. Check each piece of evidence before you rely on it, and keep \
going until the evidence settles the question or your budget is used up. How you search, which sources you trust \
and in which order you call the tools is for you to decide.
When you have the answer, deliver it and stop: run `omnidr-skill answer submit "YOUR ANSWER"` if you have a \
shell, or else reply with it and call no tool. Unless the question asks for another form, write one direct \
paragraph in English of one to three sentences and at most 80 words."""
"""The research prompt of a short-answer task (App. C.3.1, in our own words): inspect the media, verify the
evidence, go on until it suffices or the budget is spent; no strategy prescribed; the default answer form. Every
harness gets it at the head of its instruction (`omnidr.attempts` adds the question, the video and the budget); the
reference agent keeps it as its system message."""

FINAL_ANSWER_PROMPT = """\
Research has ended and no tool can be called any more. Give your final answer to the question now, based only on \
the evidence collected above. Do not call a tool. If that evidence does not settle the question, say plainly that \
it is insufficient instead of guessing. Unless the question asks for another form, answer in one to three English \
sentences of at most 80 words in all."""
"""The final-answer prompt of the finalization stage (App. C.3.2, in our own words): a short answer from the
collected evidence only, no further tool call, insufficient evidence acknowledged; the default answer form. The
gateway appends it as the last user message of a finalization request; the scripted model recognises it there."""

FINALIZATION_RETRY_NOTE = "Your previous reply was not accepted ({reason}). Reply once more with the final answer " \
                          "as plain text, without any tool call."
"""Added after the final-answer prompt in the finalization stage's second request, `{reason}` filled with why the
first answer was rejected (the paper allows two requests and does not say what the second one carries)."""

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

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

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
    `total_tokens` (the second gets what the first left), each logged in `gateway.jsonl` with phase `finalization`.
    An answer is accepted only when it is non-empty, complete (not cut at the token cap) and carries no tool call;
    the second request, sent only after a rejected first answer, adds `FINALIZATION_RETRY_NOTE` after the prompt."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    prompt: str = Field(FINAL_ANSWER_PROMPT, min_length=1, description="The final-answer prompt (App. C.3.2).")
    question: str = Field(min_length=1, description="The task's instruction: the conversation when research sent "
                                                    "no model request at all.")
    model: str | None = Field(None, description="The model to ask when research sent no model request (otherwise "
                                                "the model the research conversation named).")
    max_requests: int = Field(2, ge=1, description="At most this many requests (App. C.2.3: 2).")
    total_tokens: int = Field(5000, ge=1, description="Output tokens of the whole stage (App. C.2.3: 5,000).")
    first_tokens: int = Field(4000, ge=1, description="Output tokens of the first request (App. C.2.3: 4,000).")

    @model_validator(mode="after")
    def _first_within_total(self) -> "FinalizeRequest":
        if self.first_tokens > self.total_tokens:
            raise ValueError(f"first_tokens ({self.first_tokens}) exceeds total_tokens ({self.total_tokens})")
        return self


class FinalizationResult(BaseModel):
    """The gateway's answer to `POST /_gateway/finalize`."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    answer: str = Field("", description="The accepted answer; empty when no request produced one.")
    accepted: bool = Field(False, description="Whether a request produced an acceptable answer.")
    requests: int = Field(0, ge=0, description="Requests sent upstream.")
    output_tokens: int = Field(0, ge=0, description="Output tokens the stage used.")
    rejected: list[str] = Field(default_factory=list, description="Why each request that produced no accepted "
                                                                  "answer was rejected (tool call, empty, cut short, "
                                                                  "upstream error).")
    family: str | None = Field(None, description="The API family the stage spoke (that of the research "
                                                 "conversation), None when no request could be sent.")
    api: str | None = Field(None, description="The API of the stage's requests as the agent would have sent them "
                                              "(`chat_completions`, `responses`, `messages`).")

    def answer_file(self, termination: TerminationReason, execution_error: str | None = None) -> AnswerFile:
        """The `answer.json` after this stage, for a research phase that ended with `termination`: the accepted
        answer from the finalization stage, or no answer."""
        return AnswerFile(answer=self.answer if self.accepted else "", termination=termination,
                          source="finalization" if self.accepted else "none", execution_error=execution_error)


class Compaction(BaseModel):
    """Deterministic context compaction before each model request (App. C.2.2, C.2.1)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    keep_observations: int = Field(4, ge=1, description="The most recent tool observations kept whole.")
    truncate_chars: int = Field(2000, ge=1, description="Older text content is cut to this many characters.")
    search_results_kept: int = Field(2, ge=0, description="Older search results keep only their first entries.")
    image_limit: int = Field(250, ge=0, description="Images kept in the context; older ones become omission markers "
                                                    "(250 in the paper's historical runs; a run setting).")


class ShortAnswerProtocol(BaseModel):
    """`hyperparameters.json` of a short-answer snapshot, mounted in the agent container as `/input/protocol.json`:
    OpenDS-World's execution protocol (Sec. 3.1, App. C)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    version: str = Field("opends-world-released", description="Name of this parameter set.")
    research_wall_s: float = Field(3600.0, gt=0, description="Research ends at this many seconds (Sec. 3.1).")
    research_tool_calls: int = Field(100, ge=1, description="Research ends at this many tool calls (Sec. 3.1).")
    finalization_requests: int = Field(2, ge=1, description="At most this many finalization requests (App. C.2.3).")
    finalization_tokens: int = Field(5000, ge=1, description="Output tokens of the whole finalization stage.")
    finalization_first_tokens: int = Field(4000, ge=1, description="Output tokens of the first finalization request.")
    compaction: Compaction = Field(default_factory=Compaction, description="Context compaction (App. C.2.2).")
    video_frames: int = Field(10, ge=1, le=100, description="Frames the video reader samples by default (App. C.1.2).")
    video_frames_max: int = Field(100, ge=1, description="Most frames one video-reader call may ask for.")
    attempts_per_task: int = Field(1, ge=1, description="Attempts per task: the paper runs each task once; a failed "
                                                        "execution is scored, not retried (App. C.4).")

    def budget(self) -> Budget:
        """The attempt budget a run of this protocol gets unless the user names one: research ends at
        `research_wall_s` or `research_tool_calls` (Sec. 3.1); the finalization stage has its own budget."""
        return Budget(max_tool_calls=self.research_tool_calls, wall_time_s=self.research_wall_s,
                      attempts_per_task=self.attempts_per_task)

    def finalize_request(self, question: str, model: str | None = None) -> "FinalizeRequest":
        """The gateway's finalization call for a task whose research ended without a complete answer (`model`: the
        one to ask when research sent no request the conversation could be taken from)."""
        return FinalizeRequest(question=question, model=model, max_requests=self.finalization_requests,
                               total_tokens=self.finalization_tokens, first_tokens=self.finalization_first_tokens)


def read_answer_file(path: Path) -> AnswerFile | None:
    """The answer file at `path`; None when it is missing or is not an AnswerFile (an agent's broken write)."""
    try:
        return AnswerFile.model_validate_json(Path(path).read_text("utf-8"))
    except (OSError, ValueError):
        return None

