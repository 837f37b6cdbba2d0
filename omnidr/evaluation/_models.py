"""Records of the evaluation stage: probe results, judge votes, atom decisions and `evaluation.json`."""

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from omnidr._records import DiskRecord
from omnidr.benchmark import TaskFormat
from omnidr.scoring import AnswerOutcome, AtomDecision, Decisions, ReportScore, ToolUse
from sandbox.models import AnswerSource, TerminationReason

from ._answer_baseline import AnswerVerdict

EVALUATOR_VERSION = "omnidr-evaluator-2"
"""Version of the probe semantics, the report-material extraction and the scoring rules an evaluation's
saved score follows; bumped when any changes, so that a resumed eval scores its reports again.
2: N/A candidates only from coverage checks, exact guard ties (App. A.4, Eq. 5)."""

ANSWER_EVALUATOR_VERSION = "omnidr-answer-evaluator-2"
"""Version of how a short answer is read from its attempt, held to the hard rules and measured (tokens, time,
tool use); bumped when any changes, so that a resumed eval evaluates its answers again."""

Verdict = Literal["yes", "no", "na"]
"""A judge verdict (Yes / No / N/A), or an M probe's answer (yes = the probed property holds)."""

Outcome = Literal["pass", "fail", "na", "skipped"]


class EvaluationModel(BaseModel):
    """A record whose JSON dump is the file on disk."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)


class JudgeIdentity(EvaluationModel):
    """Which judge decided the J atoms. Scores from different identities must not be compared."""

    kind: Literal["openai-compatible", "offline-baseline", "mcq-exact-match"] = Field(
        description="openai-compatible: a model behind a chat-completions endpoint; offline-baseline: the "
        "deterministic lexical stand-in used when no endpoint is configured; mcq-exact-match: the multiple-choice "
        "checker (the option letter read from the answer against the key, no model)."
    )
    model: str = Field(description="Model name sent to the endpoint, or the baseline's algorithm name.")
    prompt_version: str = Field(description="Version of the judge instruction and of the material layout it receives.")
    description: str | None = Field(None, exclude_if=lambda v: v is None,
                                    description="What the judge does, in words, where the name does not say it (the "
                                    "answer baseline: `normalised exact and numeric match`).")

    @property
    def key(self) -> str:
        """One string naming the judge, e.g. `openai-compatible:gpt-x:omnidr-judge-1`."""
        return f"{self.kind}:{self.model}:{self.prompt_version}"

    @property
    def label(self) -> str:
        """The judge for a reader: `offline-baseline: normalised exact and numeric match`, or the key."""
        return f"{self.kind}: {self.description}" if self.description else self.key

    @property
    def checks_key(self) -> bool:
        """Whether it checks an option letter against the key (exact match: no model, no call, no cache)."""
        return self.kind == "mcq-exact-match"


IMAGE_ENV = "OMNIDR_EVALUATOR_IMAGE"
"""Set by the host in the evaluator containers to the image they run; its absence means the host evaluator."""


class EvaluatorPlace(EvaluationModel):
    """Where an evaluation was computed: in the evaluator image (the default) or on the host (`--evaluator host`,
    for development: the report's JavaScript then runs beside the judge key)."""

    where: Literal["docker", "host"] = Field(description="docker: the evaluator image, probes and judge in separate "
                                             "containers; host: this machine's Python and Chromium.")
    image: str | None = Field(None, description="The evaluator image's tag, for `docker`.")

    @classmethod
    def here(cls) -> "EvaluatorPlace":
        """The place of the code now running, read from IMAGE_ENV."""
        import os

        image = os.environ.get(IMAGE_ENV) or None
        return cls(where="docker" if image else "host", image=image)


class ProbeResult(EvaluationModel):
    """What one deterministic probe found on the rendered report."""

    name: str = Field(description="Probe name from the probe catalog.")
    params: dict[str, object] = Field(default_factory=dict, description="Arguments the atom gave the probe.")
    status: Literal["pass", "fail", "error"] = Field(
        description="pass / fail: the property holds or not (a hang or crash of the report is a fail); "
        "error: the evaluator itself failed, so the atom is skipped."
    )
    reason: str = Field(description="One line saying what was measured and why it passed or failed.")
    elapsed_s: float = Field(0.0, description="Wall time of the probe, seconds (diagnostic; never decides an outcome).")


class PageFault(EvaluationModel):
    """Something the report did that a well-behaved report does not (hostile-input record)."""

    kind: Literal["timeout", "unresponsive", "crash", "dialog", "navigation", "popup", "network", "dom_size", "oversize"] = Field(
        description="What happened."
    )
    detail: str = Field(description="Details: the dialog text, the URL, the step that timed out, ...")


class BlockedRequest(EvaluationModel):
    """A request of the report to anything outside its own folder; it was refused."""

    url: str = Field(description="Requested URL (truncated to 300 characters).")
    resource_type: str = Field(description="Browser resource type: image, media, fetch, xhr, script, document, ...")


class ProbeSession(EvaluationModel):
    """The browser session that ran every probe of one report (one browser context)."""

    entry_url: str = Field(description="URL the report was served under (a private origin mapped to the report folder).")
    browser_version: str = Field(description="Chromium version that rendered the report.")
    chromium_sandbox: bool | None = Field(None, description="Chromium ran with its own sandbox (renderers in their own "
                                          "namespaces); False where the kernel or the user (root) does not allow it; "
                                          "None in records made before this was recorded.")
    loaded: bool = Field(description="The page reached its load event within the load timeout.")
    responsive: bool = Field(description="The page answered after loading (a page stuck in a script loop does not).")
    content_free: bool = Field(description="No timeline segment, finding or source record is rendered: an unfilled interface.")
    dom_nodes: int | None = Field(None, description="Elements in the document after load.")
    console_errors: list[str] = Field(default_factory=list, description="JavaScript errors and uncaught exceptions (at most 50).")
    faults: list[PageFault] = Field(default_factory=list, description="Hostile or broken behaviour observed (at most 50).")
    blocked_requests: list[BlockedRequest] = Field(default_factory=list, description="Refused requests (at most 100).")
    blocked_total: int = Field(0, description="All refused requests, including those not listed.")
    served: int = Field(0, description="Requests served from the report folder.")
    screenshots: dict[str, str] = Field(
        default_factory=dict, description="Screenshot name (page, or a section id) -> file relative to the evaluation folder."
    )
    elapsed_s: float = Field(0.0, description="Wall time of the whole session, seconds.")


class ProbeRecord(EvaluationModel):
    """What the probe step found on one task's report (`probe.json`): everything the judge step reads besides the
    snapshot and the files beside it (material.json, screenshots/, frames/, figures/). The probe step runs the
    report's JavaScript and holds no judge key; the judge step holds the key and runs no browser."""

    task_id: str = Field(description="Task the report answers.")
    attempt: int | None = Field(None, description="Attempt number the report comes from (None outside a run).")
    report: str | None = Field(None, description="Report entry page, relative to the run folder when probed from a run.")
    failure: str | None = Field(None, description="Why there is no report to judge (it scores 0).")
    incomplete: str | None = Field(None, description="Why the task's result is not final (an outage ended its last attempt).")
    report_sha256: str | None = Field(None, description="Hash of the report folder (the judge cache's key).")
    started_at: datetime = Field(description="When the probe step started on this report (UTC).")
    elapsed_s: float = Field(0.0, description="Wall time of the probe step on this report, seconds.")
    results: dict[str, ProbeResult] = Field(default_factory=dict, description="Probe call (name and parameters) -> result.")
    session: ProbeSession | None = Field(None, description="The browser session.")
    material: str | None = Field(None, description="material.json beside this file, when the report was read.")
    report_warnings: list[str] = Field(default_factory=list, description="Deviations from the report contract the "
                                       "evaluator read past (the report check of App. F.1).")


class ProbedRun(EvaluationModel):
    """The probe step's summary of a run folder (`probed.json`): what the judge step needs of run.json."""

    run_dir: str = Field(description="Run folder that was probed.")
    snapshot: str = Field(description="Snapshot folder the rubric trees came from.")
    model: str = Field("", description="Model of the evaluated system (from run.json).")
    harness: str = Field("", description="Harness of the evaluated system (from run.json).")
    tasks: list[str] = Field(description="Tasks probed, run order; each has a folder with probe.json.")


class JudgeVote(EvaluationModel):
    """One judge call (a gate atom has three)."""

    verdict: Verdict | None = Field(description="yes, no or na; None when the call failed.")
    rationale: str = Field("", description="The judge's short, report-grounded reason.")
    quote: str = Field("", description="Report span the judge quoted as evidence ('' when none).")
    quote_found: bool | None = Field(
        None, description="Whether the quote occurs in the material the judge was given (whitespace-normalised); None without a quote."
    )
    cached: bool = Field(False, description="Answered from the judge cache (no call was made).")
    calls: int = Field(0, description="HTTP calls made for this vote, retries included (0 when cached).")
    input_tokens: int = Field(0, description="Prompt tokens over those calls.")
    cached_input_tokens: int = Field(0, description="Part of input_tokens the provider read from its prompt cache "
                                     "(`prompt_tokens_details.cached_tokens`), where it reports them.")
    output_tokens: int = Field(0, description="Completion tokens over those calls.")
    elapsed_s: float = Field(0.0, description="Wall time of the vote, seconds.")
    error: str | None = Field(None, description="Why the vote has no verdict (after the last retry).")


class AtomEvaluation(EvaluationModel):
    """The decision on one atom with everything needed to audit it."""

    atom_id: str = Field(description="Atom id from the rubric tree.")
    direction: str = Field(description="Direction id.")
    evaluator: Literal["J", "M"] = Field(description="J: model judge; M: deterministic probe.")
    polarity: Literal["yes", "no"] = Field(description="Verdict that counts as a pass.")
    gate: bool = Field(description="The atom belongs to a gate direction (judged by three votes when J).")
    outcome: Outcome = Field(description="pass / fail / na / skipped (evaluator error: excluded from denominators).")
    verdict: Verdict | None = Field(description="Decided verdict (majority of the votes for a gate); None when skipped.")
    votes: list[JudgeVote] = Field(default_factory=list, description="Judge votes (J atoms).")
    probe: ProbeResult | None = Field(None, description="Probe result (M atoms).")
    rationale: str = Field("", description="Why: the probe's reason or the deciding vote's rationale.")
    quote: str = Field("", description="Quoted report span of the deciding vote ('' for M atoms).")
    elapsed_s: float = Field(0.0, description="Wall time spent on the atom, seconds.")
    input_tokens: int = Field(0, description="Judge prompt tokens spent on the atom (0 when cached or M).")
    output_tokens: int = Field(0, description="Judge completion tokens spent on the atom.")
    error: str | None = Field(None, description="Why the atom was skipped.")

    def decision(self) -> AtomDecision:
        """The decision as the scoring stage reads it (votes kept when all are binary)."""
        votes: list[str] = []
        if len(self.votes) > 1 and all(v.verdict in ("yes", "no") for v in self.votes):
            votes = ["pass" if v.verdict == self.polarity else "fail" for v in self.votes]
        return AtomDecision(outcome=self.outcome, votes=votes, rationale=self.rationale or None)


class JudgeUsage(EvaluationModel):
    """Judge spending of one report."""

    calls: int = Field(0, description="HTTP calls to the judge endpoint, retries included.")
    cache_hits: int = Field(0, description="Votes answered from the cache.")
    votes: int = Field(0, description="Votes needed (one per J atom, three per gate J atom).")
    failed_votes: int = Field(0, description="Votes without a verdict after the last retry.")
    input_tokens: int = Field(0, description="Prompt tokens.")
    cached_input_tokens: int = Field(0, description="Part of input_tokens read from the provider's prompt cache "
                                     "(the report's calls share the material prefix; see PROMPT_VERSION 3).")
    output_tokens: int = Field(0, description="Completion tokens.")


class Evaluation(DiskRecord, EvaluationModel):
    """`evaluation.json`: one report's decisions, scores and provenance."""

    SCHEMA = "omnidr.evaluation/1"

    evaluator_version: str = Field(description="EVALUATOR_VERSION of the code that produced the file.")
    judge: JudgeIdentity = Field(description="The judge of the J atoms.")
    judge_endpoint: str | None = Field(None, description="Base URL of the judge endpoint (None for the offline baseline).")
    evaluator: EvaluatorPlace | None = Field(None, description="Where the evaluation was computed (None in records "
                                             "made before this was recorded).")
    task_id: str = Field(description="Task the report answers.")
    attempt: int | None = Field(None, description="Attempt number the report comes from (None outside a run).")
    report: str | None = Field(None, description="Report entry page, relative to the run folder when scored from a run.")
    report_sha256: str | None = Field(None, description="Content hash of the report folder (paths and bytes of every file).")
    failure: str | None = Field(None, description="Why the report could not be evaluated (missing, unreadable, an "
                                "unfilled skeleton: the report check of App. F.1); it scores 0.")
    started_at: datetime = Field(description="When the evaluation started (UTC).")
    elapsed_s: float = Field(description="Wall time of the evaluation, seconds.")
    atoms: list[AtomEvaluation] = Field(default_factory=list, description="One decision per atom, rubric order.")
    session: ProbeSession | None = Field(None, description="The browser session of the probes.")
    judge_usage: JudgeUsage = Field(default_factory=JudgeUsage, description="Judge calls, cache hits and tokens.")
    skipped_atoms: int = Field(0, description="Atoms skipped because the evaluator failed on them.")
    incomplete: str | None = Field(
        None, description="Why this score is not final, if it is not: the judge did not answer for some atoms, or the "
        "task's last attempt was ended by an upstream outage or an infrastructure failure (not the agent's failure). "
        "Such a score is provisional; rerunning the same command completes it.")
    material: str | None = Field(None, description="File (relative to this one) holding the report material the judge saw.")
    report_warnings: list[str] = Field(default_factory=list, description="Deviations from the report contract the "
                                       "evaluator read past: the report still counts (App. F.1).")
    score: ReportScore = Field(description="Omni-ART score: total, dimensions, direction rates, na_guard (scoring stage).")

    def decisions(self) -> Decisions:
        """The scoring stage's input, so that the score can be re-aggregated without the judge."""
        if self.failure is not None:
            return Decisions(task_id=self.task_id, failure=self.failure)
        return Decisions(task_id=self.task_id, judge=self.judge.key,
                         decisions={a.atom_id: a.decision() for a in self.atoms})


class TaskScore(EvaluationModel):
    """One line of `summary.json`."""

    task_id: str = Field(description="Task id.")
    attempt: int | None = Field(description="Attempt whose report was scored (None when the task has none).")
    total: float = Field(description="Report score S, points 0-100 (0 for a failure).")
    failed: bool = Field(description="The report was missing or unreadable, or every attempt failed.")
    failure_reason: str | None = Field(None, description="Why.")
    incomplete: str | None = Field(None, description="Why the score is not final, if it is not (see Evaluation).")
    evaluation: str = Field(description="evaluation.json of the task, relative to the output folder.")
    correct: bool | None = Field(None, exclude_if=lambda v: v is None,
                                 description="A short-answer task: whether the answer was judged correct (its total "
                                 "is then 100, else 0); None for a report, or when the judge did not answer.")


class RunEvaluation(DiskRecord, EvaluationModel):
    """`summary.json` of `omnidr score`: every task of a run, of either task kind. Each task's line has its total in
    points: a report's Omni-ART score, or 100 for a correct short answer and 0 otherwise, so that `mean_total` is
    a short-answer run's accuracy in percent."""

    SCHEMA = "omnidr.run-evaluation/1"

    task_kind: TaskFormat = Field(TaskFormat.report, exclude_if=lambda v: v is TaskFormat.report,
                                description="Kind of the run's tasks: `report` (each evaluation.json an Evaluation) or "
                                "`short_answer` or `mcq` (each an AnswerEvaluation).")
    evaluator_version: str = Field(description="EVALUATOR_VERSION (ANSWER_EVALUATOR_VERSION for short answers).")
    judge: JudgeIdentity = Field(description="Judge of every evaluation in the folder.")
    evaluator: EvaluatorPlace | None = Field(None, description="Where the scoring was computed (None in records made "
                                             "before this was recorded).")
    run_dir: str = Field(description="Run folder that was scored.")
    snapshot: str = Field(description="Snapshot folder the rubric trees came from.")
    model: str = Field("", description="Model of the evaluated system (from run.json).")
    harness: str = Field("", description="Harness of the evaluated system (from run.json).")
    tasks: list[TaskScore] = Field(description="One line per task of the run, run order.")
    mean_total: float = Field(description="Mean report score over the run's tasks with failures as 0, points; for "
                              "short answers, the accuracy in percent.")
    judge_usage: JudgeUsage = Field(description="Judge spending over the run.")
    elapsed_s: float = Field(description="Wall time of the scoring, seconds.")


class AnswerEvaluation(DiskRecord, EvaluationModel):
    """`evaluation.json` of a short-answer task (OpenDS-World, paper 002, App. C.4) or a multiple-choice task
    (VideoOdyssey, paper 004; the judge is then the option checker): the answer its last finished attempt
    delivered, the verdict on it, and what the attempt spent, with everything needed to audit it."""

    SCHEMA = "omnidr.answer-evaluation/1"

    evaluator_version: str = Field(description="ANSWER_EVALUATOR_VERSION of the code that produced the file.")
    judge: JudgeIdentity = Field(description="The answer judge.")
    judge_endpoint: str | None = Field(None, description="Base URL of the judge endpoint (None for the offline baseline).")
    evaluator: EvaluatorPlace | None = Field(None, description="Where the evaluation was computed (None in records "
                                             "made before this was recorded).")
    task_id: str = Field(description="Task the answer is for.")
    attempt: int | None = Field(None, description="Attempt the answer comes from (None when the task has no finished "
                                "attempt).")
    answer_file: str | None = Field(None, description="The attempt's answer.json, relative to the run folder.")
    answer: str | None = Field(None, description="The candidate answer as delivered; None when no answer file could "
                               "be read.")
    termination: TerminationReason | None = Field(None, description="Why research ended (App. C.2.3); None without "
                                                  "an answer file.")
    source: AnswerSource | None = Field(None, description="The stage that produced the answer; None without an answer "
                                        "file.")
    execution_error: str | None = Field(None, description="The execution status the judge received: the answer "
                                        "file's error, or why there is no answer file; None when none.")
    attempt_reason: str | None = Field(None, description="How the attempt ended (attempt.json's reason).")
    verdict: AnswerVerdict | None = Field(None, description="The judge's decision; None when the judge did not "
                                          "answer (see error).")
    hard_rule: bool = Field(False, description="The verdict was taken with no judge call: an empty answer (the model "
                            "judge), or the offline baseline's pattern rules (failed execution, empty answer, refusal "
                            "or insufficient evidence).")
    cached: bool = Field(False, description="The verdict was read from the judge cache (no call was made).")
    judge_usage: JudgeUsage = Field(default_factory=JudgeUsage, description="Judge calls, cache hits and tokens.")
    error: str | None = Field(None, description="Why there is no verdict (the judge failed after its retries).")
    incomplete: str | None = Field(
        None, description="Why this evaluation is not final, if it is not: the judge did not answer, or the attempt was "
        "ended by an upstream outage or an infrastructure failure (not the agent's failure). Rerunning the same "
        "command completes it.")
    limit: str | None = Field(None, description="Which limit ended research when the termination is "
                              "budget_exhausted: time limit, tool-call limit, model-call limit or token limit.")
    input_tokens: int | None = Field(None, description="Input tokens of the attempt (gateway count).")
    output_tokens: int | None = Field(None, description="Output tokens of the attempt (gateway count).")
    wall_time_s: float | None = Field(None, description="Wall time of the attempt, seconds.")
    tool_use: ToolUse | None = Field(None, description="Tool calls of the attempt's trajectory (categories, failures, "
                                     "latency, transitions); None when it has none to read.")
    trajectory_note: str | None = Field(None, description="Why tool_use is missing, or where the trajectory came from.")
    chosen_option: str | None = Field(None, exclude_if=lambda v: v is None,
                                      description="Multiple choice: the option letter read from the answer.")
    unparseable: bool = Field(False, exclude_if=lambda v: not v,
                              description="Multiple choice: the answer is not empty but no single option could be "
                              "read from it (counted as wrong).")
    official_answer: str | None = Field(None, exclude_if=lambda v: v is None, description="Multiple choice: what the "
                                        "VideoOdyssey authors' runner makes of the reply (`official_letter`): a letter, "
                                        "`Error` (none found) or `API_Error` (no reply); the official accuracy and "
                                        "`omnidr export videoodyssey` use it.")
    started_at: datetime = Field(description="When the evaluation started (UTC).")
    elapsed_s: float = Field(description="Wall time of the evaluation, seconds.")

    @property
    def correct(self) -> bool:
        return self.verdict is not None and self.verdict.correct

    @property
    def answered(self) -> bool:
        """A non-empty answer was delivered (App. C.2.3)."""
        return bool(self.answer and self.answer.strip())

    def outcome(self) -> AnswerOutcome:
        """The scoring stage's input for this task, so that the leaderboard is rebuilt without the judge."""
        tokens = (self.input_tokens or 0) + (self.output_tokens or 0) \
            if self.input_tokens is not None or self.output_tokens is not None else None
        return AnswerOutcome(task_id=self.task_id, correct=self.correct, answered=self.answered,
                             incomplete=self.incomplete, judge=self.judge.key, termination=self.termination,
                             limit=self.limit,
                             tokens=tokens, elapsed_s=self.wall_time_s, tool_use=self.tool_use,
                             unparseable=self.unparseable, official=self.official_answer)
