"""Models of answer results: short answers (task kind `short_answer`, OpenDS-World, paper 002) and multiple-choice
answers (task kind `mcq`, VideoOdyssey, paper 004): what one task's judged answer contributes, and the accuracy
leaderboard with its breakdowns and process statistics (paper 002 Sec. 3, App. D, E; paper 004 Sec. 4, App. C.1).

Accuracy is in percent (a correct answer counts 100, anything else 0), so that its task-bootstrap interval and a
paired difference between two systems come from the same machinery as the report leaderboard's points."""

from typing import Literal

from pydantic import Field

from ._base import ScoringModel
from ._tables import PairedComparison, SystemKey

ToolCategory = Literal["search", "browse", "read", "download", "video", "other"]
"""What a tool call does, for the tool-use analysis (paper 002, Sec. 3.4, 3.5; see `_tool_use.py`)."""

TOOL_CATEGORY_ORDER: tuple[ToolCategory, ...] = ("search", "browse", "read", "download", "video", "other")

BREAKDOWNS = ("domain", "modality", "format", "access_type", "duration", "difficulty")
"""The task labels accuracy is broken down by (App. D.1-D.3, Sec. 3.2): domain (8), evidence modality (4), format
category (8; a task counts in every category it has), access type (7), anchor-video duration group (5) and, when the
tasks carry it, the human-calibrated difficulty group (Low, Medium, High)."""

MCQ_BREAKDOWNS = ("subset", "task_type", "dimension", "domain", "audio_type", "duration", "ccl_bin")
"""The labels multiple-choice accuracy is broken down by (paper 004, Sec. 3.2, 4.2, Fig. 4): subset (V, AV), task
type, dimension (when the questions carry it), the video's domain, audio type (AV questions only; a V question is in
no group), the video's duration (the authors' scorer's bins, `DURATION_BINS`, from the release's
`duration_minutes` where the snapshot was imported from it, else the probed length) and the continuous certificate
length's bin (`CCL_BINS`, computed from the window)."""

AnswerBoardKind = Literal["short_answer", "mcq"]
"""The answer boards there are: a short-answer board or a multiple-choice board (the task kind's format)."""

KIND_BREAKDOWNS: dict[str, tuple[str, ...]] = {"short_answer": BREAKDOWNS, "mcq": MCQ_BREAKDOWNS}
"""The breakdowns of each answer board, in order."""

UNRECORDED = "unrecorded"
"""Termination of a task whose attempt left no answer file (or none at all): how research ended is not known."""


class ToolUse(ScoringModel):
    """Tool calls of one attempt's trajectory, by category, with their latency (paper 002, Sec. 3.4-3.5, App. E)."""

    calls: int = Field(0, description="Tool calls in the trajectory.")
    failed_calls: int = Field(0, description="Calls whose result was an error.")
    timed_calls: int = Field(0, description="Calls whose latency could be measured (the turn and the result were "
                                            "both timestamped).")
    latency_s: float = Field(0.0, description="Summed latency of the timed calls, seconds.")
    failed_latency_s: float = Field(0.0, description="Part of latency_s spent on calls that failed, seconds.")
    categories: dict[str, int] = Field(default_factory=dict, description="Tool category -> calls.")
    transitions: dict[str, int] = Field(
        default_factory=dict, description="'a->b' -> times a call of category a was directly followed by a call of "
        "category b (consecutive calls of the trajectory, in order).")


class AnswerOutcome(ScoringModel):
    """One task of one system as the short-answer leaderboard reads it (from the task's answer evaluation)."""

    task_id: str = Field(description="Task id.")
    correct: bool = Field(description="The judge found the answer equivalent to the reference and complete.")
    answered: bool = Field(description="A non-empty answer was delivered (App. C.2.3: answer generation).")
    incomplete: str | None = Field(None, description="Why this outcome is not final, if it is not (the judge did "
                                   "not answer, or the attempt was ended by an outage or an infrastructure failure).")
    judge: str | None = Field(None, description="Key of the judge that decided it (None when none was asked).")
    termination: str | None = Field(None, description="Why research ended (sandbox.models.TerminationReason); None "
                                    "when the attempt left no answer file.")
    limit: str | None = Field(None, exclude_if=lambda v: v is None, description="Which limit ended research when "
                              "the termination is budget_exhausted: time limit, tool-call limit, model-call limit or "
                              "token limit (paper 002, Sec. 3.6 tells the time limit from the call limit).")
    tokens: int | None = Field(None, description="Input + output tokens of the attempt, counted by the gateway; None "
                               "when unknown.")
    elapsed_s: float | None = Field(None, description="Wall time of the attempt, seconds; None when unknown.")
    tool_use: ToolUse | None = Field(None, description="Tool calls of the attempt's trajectory; None when it has none "
                                     "to read.")
    unparseable: bool = Field(False, exclude_if=lambda v: not v, description="Multiple choice: the answer named no "
                              "single option (counted as wrong).")
    official: str | None = Field(None, exclude_if=lambda v: v is None, description="Multiple choice: the letter the "
                                 "VideoOdyssey authors' runner reads from the answer, or `Error` / `API_Error`; None "
                                 "where the evaluation predates it.")


class AnswerSystem(ScoringModel):
    """Every judged answer of one system (one per task; a task without one counts as incorrect)."""

    system: SystemKey = Field(description="The system.")
    outcomes: list[AnswerOutcome] = Field(description="One per task, at most.")


class GroupAccuracy(ScoringModel):
    """Accuracy over the tasks carrying one label."""

    group: str = Field(description="The label: a domain, modality, format category, access type or duration group.")
    tasks: int = Field(description="Tasks of the task set carrying the label.")
    correct: int = Field(description="Of those, answered correctly.")
    accuracy: float | None = Field(description="correct / tasks, percent; None when no task carries the label.")


class AnswerProcess(ScoringModel):
    """A system's costs and behaviour over the task set (paper 002, Sec. 3.3-3.6, App. E)."""

    tasks_with_tokens: int = Field(description="Tasks whose token count is known.")
    mean_tokens: float | None = Field(description="Mean input + output tokens per task.")
    median_tokens: float | None = Field(description="Median input + output tokens per task.")
    tasks_timed: int = Field(description="Tasks whose wall time is known.")
    mean_elapsed_s: float | None = Field(description="Mean wall time per task, seconds.")
    median_elapsed_s: float | None = Field(description="Median wall time per task, seconds.")
    terminations: dict[str, int] = Field(description=f"Termination reason -> tasks (`{UNRECORDED}`: no answer file).")
    budget_exhausted_share: float = Field(description="Share of the tasks whose research ended by budget "
                                                      "exhaustion, fraction 0-1.")
    traces: int = Field(description="Tasks with a trajectory to measure tool use on.")
    tool_calls: int = Field(description="Tool calls over those trajectories.")
    failed_calls: int = Field(description="Of those, failed.")
    failed_call_share: float | None = Field(description="failed_calls / tool_calls, fraction; None without calls.")
    tool_latency_s: float = Field(description="Summed latency of the timed calls, seconds.")
    failed_latency_share: float | None = Field(description="Share of that latency spent on failed calls, fraction; "
                                               "None when no call was timed.")
    categories: dict[str, int] = Field(description="Tool category -> calls.")
    transitions: dict[str, int] = Field(description="'a->b' -> consecutive-call transitions, over all trajectories.")
    transition_shares: dict[str, float] = Field(
        description="'a->b' -> share of the transitions leaving category a that go to b, fraction (e.g. "
        "search->search, the paper's Search->Search share).")


class VideoHoldout(ScoringModel):
    """Accuracy with one video's questions left out (paper 004, App. C.1)."""

    video: str = Field(description="Id of the video whose questions are left out.")
    questions: int = Field(description="Questions of that video in the task set.")
    accuracy: float | None = Field(description="Accuracy over the other videos' questions, percent; None when no "
                                   "question is left.")
    change: float | None = Field(description="accuracy minus the overall accuracy, percentage points.")


class LeaveOneVideoOut(ScoringModel):
    """Leave-one-video-out accuracy of one system (paper 004, App. C.1, Table 11): whether a single source video
    dominates its overall accuracy."""

    holdouts: list[VideoHoldout] = Field(description="One per video of the task set, in video id order.")
    min_accuracy: float | None = Field(description="Lowest leave-one-video-out accuracy, percent.")
    max_accuracy: float | None = Field(description="Highest leave-one-video-out accuracy, percent.")
    max_abs_change: float | None = Field(description="Largest |leave-one-out accuracy - overall accuracy|, "
                                         "percentage points (the paper's maximum change).")
    max_change_video: str | None = Field(description="The video whose removal changes accuracy the most.")


OFFICIAL_DIMENSIONS = ("video_category", "question_type", "audio_type", "duration", "certificate_length")
"""The breakdowns of the VideoOdyssey authors' scorer (`scripts/test_acc.py`), in its order."""


class SubsetAccuracy(ScoringModel):
    """One subset of a multiple-choice board (VideoOdyssey's V and AV are never pooled): our accuracy, where an
    answer naming no single option is wrong, and the official accuracy of the authors' scorer, where a prediction
    that is not exactly one of A-D is left out of the denominator."""

    subset: str = Field(description="V or AV.")
    questions: int = Field(description="Questions of the subset in the task set.")
    correct: int = Field(description="Answered correctly (our checker).")
    accuracy: float = Field(description="correct / questions, percent.")
    accuracy_ci_low: float = Field(description="Lower end of the task-bootstrap interval over the subset, percent.")
    accuracy_ci_high: float = Field(description="Upper end of that interval, percent.")
    unparseable: int = Field(description="Answers from which our checker read no single option (counted wrong).")
    official_valid: int | None = Field(description="Predictions the authors' runner reads as A-D; None when an "
                                       "evaluation predates the official reading.")
    official_correct: int | None = Field(description="Of those, equal to the answer key.")
    official_invalid: int | None = Field(description="The scorer's `invalid_prediction`: Error, API_Error or a "
                                         "question without an answer, left out of its denominator.")
    official_accuracy: float | None = Field(description="official_correct / official_valid, percent; None without a "
                                            "valid prediction.")
    official_breakdowns: dict[str, list[GroupAccuracy]] = Field(
        default_factory=dict, description="The authors' scorer's breakdowns over the valid predictions "
        "(`OFFICIAL_DIMENSIONS`; a question counts in each of its types; audio types only when the subset's "
        "questions carry any), labels as that scorer prints them; empty when an evaluation predates the official "
        "reading.")


class AnswerSystemResult(ScoringModel):
    """One row of the short-answer leaderboard."""

    rank: int | None = Field(description="1 = highest accuracy; ties (within 1e-9) share a rank. None for a "
                             "provisional row, which is not ranked.")
    system: SystemKey = Field(description="The system.")
    label: str = Field(description="Display name of the system.")
    tasks: int = Field(description="Tasks in the task set.")
    correct: int = Field(description="Tasks answered correctly.")
    answered: int = Field(description="Tasks with a non-empty answer.")
    accuracy: float = Field(description="correct / tasks, percent (the primary metric, Sec. 3.1).")
    accuracy_ci_low: float = Field(description="Lower end of the task-bootstrap percentile interval, percent.")
    accuracy_ci_high: float = Field(description="Upper end of the interval, percent.")
    breakdowns: dict[str, list[GroupAccuracy]] = Field(
        description="Breakdown name (`BREAKDOWNS`, or `MCQ_BREAKDOWNS` for multiple choice) -> accuracy per label, "
        "in the taxonomy's order.")
    process: AnswerProcess = Field(description="Tokens, time, terminations and tool use.")
    incomplete: list[str] = Field(default_factory=list, description="Tasks whose outcome is not final; a row with "
                                  "any is provisional, shown marked as such and not ranked.")
    unparseable: int | None = Field(None, exclude_if=lambda v: v is None, description="Multiple choice: answers that "
                                    "named no single option (counted wrong); None for short answers.")
    lovo: LeaveOneVideoOut | None = Field(None, exclude_if=lambda v: v is None, description="Multiple choice: "
                                          "leave-one-video-out accuracy; None for short answers.")
    subsets: list[SubsetAccuracy] | None = Field(None, exclude_if=lambda v: v is None, description="Multiple "
                                                 "choice: per subset in the task set, our accuracy and the official "
                                                 "one; None for short answers.")

    @property
    def provisional(self) -> bool:
        return bool(self.incomplete)


class AnswerLeaderboard(ScoringModel):
    """Answer systems (short-answer or multiple-choice) over one task set, ranked by accuracy."""

    task_kind: AnswerBoardKind = Field("short_answer", exclude_if=lambda v: v == "short_answer",
                                                      description="The task kind; it decides the breakdowns.")
    chance_accuracy: float | None = Field(None, exclude_if=lambda v: v is None, description="Multiple choice: the "
                                          "accuracy of a random guess, percent (25 for four options).")
    task_ids: list[str] = Field(description="The task set.")
    judge: str | None = Field(description="Key of the one judge behind every outcome (None if none was asked).")
    replicates: int = Field(description="Task-bootstrap replicates behind the intervals.")
    seed: int = Field(description="Seed of the bootstrap index matrix.")
    confidence: float = Field(description="Coverage of the percentile intervals, fraction (0.95).")
    rows: list[AnswerSystemResult] = Field(description="Systems, best accuracy first (provisional rows last).")
    comparisons: list[PairedComparison] = Field(
        default_factory=list, description="Paired accuracy differences (percentage points), if asked for.")

    @property
    def breakdowns(self) -> tuple[str, ...]:
        """The breakdown names of the board's kind, in order."""
        return KIND_BREAKDOWNS[self.task_kind]
