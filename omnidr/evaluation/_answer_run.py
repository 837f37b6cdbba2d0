"""`omnidr score RUN_DIR` on a run of answers: short answers (task kind `short_answer`, OpenDS-World, paper 002),
judged by the answer judge, or multiple-choice answers (task kind `mcq`, VideoOdyssey, paper 004), checked by the
option letter read from them (`_mcq_check.py`).

Layout read: RUN_DIR/attempts/<task_id>/<n>/attempt.json and, in the same attempt folder, output/answer.json (an
AnswerFile) and the trajectory (`omnidr.trajectory.load_attempt_trajectory`). The answer of a task is that of its
last finished attempt. A missing or unreadable answer file is no answer, and the execution status the judge gets
says why (so the hard rules make it incorrect without a call); an attempt ended by an outage or an infrastructure
failure (the attempt record's reason) leaves the task not final, to be run again.

Layout written: the same as for reports: OUT/<task_id>/evaluation.json (an AnswerEvaluation) and OUT/summary.json
(a RunEvaluation whose task lines total 100 for a correct answer and 0 otherwise). A judge that does not answer is
recorded per task (no verdict, the reason, not final), never as a wrong answer; rerunning the same command asks
again for those only, the others being read from the judge cache.
"""

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from omnidr._files import write_atomic
from omnidr.benchmark import McqTask, ShortAnswerTask, Snapshot, TaskFormat
from omnidr.errors import UserError
from omnidr.paths import EVALUATION_FILE, SUMMARY_FILE, AttemptPaths, RunPaths
from omnidr.scoring import ToolUse, tool_use
from sandbox.models import AnswerFile

from ._answer_judge import AnswerJudge, AnswerRequest, make_short_answer_judge
from ._answer_judge import answer_judge_identity as short_answer_identity
from ._judge import JudgeSettings
from ._mcq_check import McqChecker, mcq_checker_identity, official_letter
from ._models import (
    ANSWER_EVALUATOR_VERSION,
    AnswerEvaluation,
    EvaluatorPlace,
    JudgeIdentity,
    JudgeUsage,
    RunEvaluation,
    TaskScore,
)

if TYPE_CHECKING:
    from omnidr.attempts import AttemptRecord, RunConfig

Progress = Callable[[str], None]

AnswerTask = ShortAnswerTask | McqTask
"""A task answered in `/output/answer.json`."""


_TASK_FORMATS: dict[type, TaskFormat] = {ShortAnswerTask: TaskFormat.short_answer, McqTask: TaskFormat.mcq}
"""The task format of each answer task model."""


def answer_format(tasks: "Mapping[str, AnswerTask] | Sequence[AnswerTask]") -> TaskFormat:
    """The task format of a set of answer tasks (all of one format: a snapshot has one); short answers for none."""
    items = list(tasks.values()) if isinstance(tasks, Mapping) else list(tasks)
    return _TASK_FORMATS[type(items[0])] if items else TaskFormat.short_answer


def answer_request(task: AnswerTask, candidate: str, execution_error: str | None) -> AnswerRequest:
    """What the judge (short answer) or the option checker (multiple choice) is given about one answer."""
    return AnswerRequest(question=task.question, reference=task.answer, candidate=candidate,
                         execution_error=execution_error, options=task.choices)


@dataclass(frozen=True)
class DeliveredAnswer:
    """The answer a task is judged on, from its last finished attempt, or why there is none."""

    task_id: str
    attempt: int | None
    folder: Path | None  # the attempt folder
    answer_file: str | None  # relative to the run folder
    answer: AnswerFile | None
    execution_error: str | None  # the execution status the judge gets
    record: "AttemptRecord | None" = None
    incomplete: str | None = None  # the attempt ended by an outage or an infrastructure failure: not final


def _first_problem(exc: ValidationError) -> str:
    e = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in e["loc"])
    return f"{where + ': ' if where else ''}{e['msg']}"[:200]


def delivered_answer(run_dir: Path, task_id: str) -> DeliveredAnswer:
    """The last finished attempt of a task and its answer file (never raises for a bad attempt folder)."""
    from omnidr.attempts import NOT_COUNTED, AttemptRecord

    run_dir = Path(run_dir)
    finished = [a for a in RunPaths(run_dir).attempt_folders(task_id) if a.finished]
    if not finished:
        return DeliveredAnswer(task_id, None, None, None, None, "no finished attempt")
    paths: AttemptPaths = finished[-1]
    n = int(paths.root.name)
    rel = paths.answer.relative_to(run_dir).as_posix()
    record: AttemptRecord | None = None
    unreadable = ""
    try:
        record = AttemptRecord.model_validate_json(paths.record.read_text("utf-8"))
    except (ValidationError, UnicodeDecodeError, OSError) as exc:
        unreadable = f"attempt {n}: unreadable attempt.json ({type(exc).__name__})"
    answer: AnswerFile | None = None
    error: str | None
    if not paths.answer.is_file():
        if record is None:
            error = unreadable
        else:
            detail = f": {record.detail}" if record.detail else ""
            error = f"no answer file: attempt {n} ended '{record.reason.value}'{detail}"[:300]
    else:
        try:
            answer = AnswerFile.model_validate_json(paths.answer.read_bytes())
            error = answer.execution_error
        except ValidationError as exc:
            error = f"attempt {n}: unreadable answer file ({_first_problem(exc)})"
        except OSError as exc:
            error = f"attempt {n}: unreadable answer file ({exc.strerror or type(exc).__name__})"
    pending = None
    if record is not None and record.reason in NOT_COUNTED and not (answer is not None and answer.has_answer):
        pending = (f"attempt {n} ended '{record.reason.value}', not the agent's failure; rerun the run to try the "
                   "task again")
    return DeliveredAnswer(task_id, n, paths.root, rel, answer, error, record, pending)


def _tool_use_of(folder: Path | None, harness: str) -> tuple[ToolUse | None, str | None]:
    """Tool use of the attempt's trajectory, and where it came from or why there is none."""
    if folder is None:
        return None, "no finished attempt"
    from omnidr.trajectory import load_attempt_trajectory

    try:
        trajectory, origin = load_attempt_trajectory(folder, harness)
    except (UserError, OSError, ValueError) as exc:
        return None, f"no trajectory: {str(exc).splitlines()[0][:200]}"
    return tool_use(trajectory), f"from {origin}"


LIMITS = {"max_tool_calls": "tool-call limit", "max_iterations": "model-call limit", "max_total_tokens": "token limit"}
"""The gateway's budget names, as the terminations table names the limit that ended research."""


def budget_limit(termination: str | None, record: "AttemptRecord | None") -> str | None:
    """Which limit ended research (paper 002, Sec. 3.6 tells the time limit from the call limit): the gateway's budget
    that was spent, or else the research time limit (the controller's clock); None unless the budget ended it."""
    if termination != "budget_exhausted":
        return None
    spent = record.budget_use.exhausted if record is not None else None
    return LIMITS.get(spent, spent) if spent else "time limit"


async def evaluate_answer(judge: AnswerJudge, task: AnswerTask, found: DeliveredAnswer, harness: str,
                          out_dir: Path) -> AnswerEvaluation:
    """Judge one task's answer and write its `evaluation.json` into `out_dir`."""
    started, started_at = time.monotonic(), datetime.now(UTC)
    text = found.answer.answer if found.answer is not None else ""
    judged = await judge.judge(answer_request(task, text, found.execution_error))
    use, note = await asyncio.to_thread(_tool_use_of, found.folder, harness)
    incomplete = found.incomplete
    if judged.verdict is None:
        incomplete = f"the judge did not answer ({judged.error}); rerun to ask it again"
    record = found.record
    termination = found.answer.termination if found.answer is not None else None
    ev = AnswerEvaluation(
        evaluator_version=ANSWER_EVALUATOR_VERSION, judge=judge.identity, judge_endpoint=judge.endpoint,
        evaluator=EvaluatorPlace.here(), task_id=task.id, attempt=found.attempt, answer_file=found.answer_file,
        answer=found.answer.answer if found.answer is not None else None,
        termination=termination, limit=budget_limit(termination, record),
        source=found.answer.source if found.answer is not None else None, execution_error=found.execution_error,
        attempt_reason=record.reason.value if record is not None else None, verdict=judged.verdict,
        hard_rule=judged.hard_rule, cached=judged.cached, judge_usage=judged.usage(), error=judged.error,
        incomplete=incomplete,
        input_tokens=record.budget_use.input_tokens if record is not None else None,
        output_tokens=record.budget_use.output_tokens if record is not None else None,
        wall_time_s=record.wall_time_s if record is not None else None, tool_use=use, trajectory_note=note,
        chosen_option=judged.chosen, unparseable=judged.unparseable,
        official_answer=official_letter(found.answer.answer if found.answer is not None else None)
        if task.choices is not None else None, started_at=started_at, elapsed_s=round(time.monotonic() - started, 3),
    )
    write_atomic(Path(out_dir) / EVALUATION_FILE, ev.model_dump_json(indent=2))
    return ev


def answer_tasks(snap: Snapshot, task_ids: Sequence[str]) -> dict[str, AnswerTask]:
    """The answer tasks of the run (short-answer or multiple-choice, by the snapshot's kind); one the snapshot
    lacks or cannot load is a user error naming it."""
    out: dict[str, AnswerTask] = {}
    for task_id in task_ids:
        bundle = snap.tasks.get(task_id)
        if bundle is None:
            raise UserError(f"task '{task_id}' is not in the snapshot {snap.root}; pass the snapshot the run used "
                            "(--snapshot)")
        task = bundle.answer_task
        if task is None:
            problem = next((p.line() for p in snap.problems if p.file.startswith(f"tasks/{task_id}/")),
                           "task.json did not load")
            raise UserError(f"{snap.root}: task '{task_id}': {problem}")
        out[task_id] = task
    return out


def task_line(ev: AnswerEvaluation) -> TaskScore:
    """The summary line of one answer: 100 when correct, else 0; failed when no answer was delivered or its
    execution failed."""
    failure = ev.execution_error or (None if ev.answered else "empty answer")
    return TaskScore(task_id=ev.task_id, attempt=ev.attempt, total=100.0 if ev.correct else 0.0,
                     failed=failure is not None, failure_reason=failure, incomplete=ev.incomplete,
                     evaluation=f"{ev.task_id}/{EVALUATION_FILE}",
                     correct=ev.verdict.correct if ev.verdict is not None else None)


@dataclass(frozen=True)
class AnswerCheck:
    """How the answers of one task format are checked: the checker's identity for the judge settings (known before
    any answer is judged, so that a resumed run finds the evaluations of the same judge), the checker itself, and
    what is said when it is no model (None: nothing)."""

    identity: Callable[[JudgeSettings | None], JudgeIdentity]
    make: Callable[[JudgeSettings | None, Path | None], AnswerJudge]
    note: Callable[[JudgeIdentity, JudgeSettings | None], str | None]


def _judge_note(identity: JudgeIdentity, settings: JudgeSettings | None) -> str | None:
    if settings is not None:
        return None
    return (f"no judge endpoint configured: answers are judged by the offline baseline ({identity.label}; it cannot "
            "see paraphrase, and its accuracy is not comparable with a model judge's)")


def _checker_note(identity: JudgeIdentity, _settings: JudgeSettings | None) -> str:
    return (f"multiple-choice answers are checked by {identity.label} against the key (exact match, paper 004 Sec. "
            "4.1); no judge is asked")


ANSWER_CHECKS: dict[TaskFormat, AnswerCheck] = {
    TaskFormat.short_answer: AnswerCheck(short_answer_identity, make_short_answer_judge, _judge_note),
    TaskFormat.mcq: AnswerCheck(lambda _s: mcq_checker_identity(), lambda _s, _c: McqChecker(), _checker_note),
}
"""The answer check of each answer format: the answer judge for short answers (the model judge when an endpoint is
configured, else the offline baseline); the option checker for multiple choice, whatever the settings."""


def answer_judge_identity(settings: JudgeSettings | None,
                          fmt: TaskFormat = TaskFormat.short_answer) -> JudgeIdentity:
    """The identity of the answer check of format `fmt` with these settings (see `ANSWER_CHECKS`)."""
    return ANSWER_CHECKS[fmt].identity(settings)


def make_answer_judge(settings: JudgeSettings | None, cache_dir: Path | None,
                      fmt: TaskFormat = TaskFormat.short_answer) -> AnswerJudge:
    """The answer check of format `fmt` with these settings (see `ANSWER_CHECKS`)."""
    return ANSWER_CHECKS[fmt].make(settings, cache_dir)


def format_judge(tasks: Mapping[str, AnswerTask], settings: JudgeSettings | None, cache_dir: Path,
                 progress: Progress = lambda _m: None) -> AnswerJudge:
    """The judge the tasks' format gives (see `make_answer_judge`), said to `progress` when it is no model."""
    check = ANSWER_CHECKS[answer_format(tasks)]
    judge = check.make(settings, cache_dir)
    note = check.note(judge.identity, settings)
    if note is not None:
        progress(note)
    return judge


async def score_answers(run_dir: Path, run: "RunConfig", tasks: Mapping[str, AnswerTask], snapshot_path: Path,
                        out_dir: Path, judge: AnswerJudge, progress: Progress = lambda _m: None) -> RunEvaluation:
    """Judge the answer of every task in `tasks` (run order) with `judge` and write the evaluations and the summary
    (the judge is closed at the end)."""
    started = time.monotonic()
    kind = answer_format(tasks)

    async def one(task: AnswerTask) -> AnswerEvaluation:
        found = delivered_answer(run_dir, task.id)
        ev = await evaluate_answer(judge, task, found, run.harness, Path(out_dir) / task.id)
        if ev.verdict is None:
            note = f"NOT FINAL: {ev.incomplete}"
        else:
            note = ("correct" if ev.correct else "incorrect") + f" ({ev.verdict.reason[:120]})"
            if ev.incomplete:
                note += f" (not final: {ev.incomplete})"
        progress(f"{task.id}: {note}")
        return ev

    try:
        evaluations = list(await asyncio.gather(*(one(t) for t in tasks.values())))
    finally:
        await judge.aclose()
    lines = [task_line(ev) for ev in evaluations]
    usage = JudgeUsage(**{f: sum(getattr(e.judge_usage, f) for e in evaluations) for f in JudgeUsage.model_fields})
    summary = RunEvaluation(
        task_kind=kind, evaluator_version=ANSWER_EVALUATOR_VERSION, judge=judge.identity, evaluator=EvaluatorPlace.here(),
        run_dir=str(run_dir), snapshot=str(snapshot_path), model=run.model, harness=run.harness, tasks=lines,
        mean_total=round(sum(t.total for t in lines) / len(lines), 4) if lines else 0.0, judge_usage=usage,
        elapsed_s=round(time.monotonic() - started, 3),
    )
    write_atomic(Path(out_dir) / SUMMARY_FILE, summary.model_dump_json(indent=2))
    return summary


def read_answer_run(out_dir: Path) -> tuple[RunEvaluation, list[AnswerEvaluation]]:
    """`summary.json` of a scored run of answers (short-answer or multiple-choice) and every evaluation it lists."""
    path = Path(out_dir) / SUMMARY_FILE
    if not path.is_file():
        raise UserError(f"{out_dir}: no {SUMMARY_FILE}; pass an output folder of `omnidr score`")
    try:
        summary = RunEvaluation.model_validate_json(path.read_text("utf-8"))
    except (ValidationError, OSError, ValueError) as exc:
        raise UserError(f"{out_dir}: unreadable evaluation: {str(exc).splitlines()[0][:200]}") from None
    if not summary.task_kind.delivers_answer:
        raise UserError(f"{out_dir}: holds report evaluations, not answers; read it with read_scored_run")
    try:
        evaluations = [AnswerEvaluation.model_validate_json((Path(out_dir) / t.evaluation).read_text("utf-8"))
                       for t in summary.tasks]
    except (ValidationError, OSError, ValueError) as exc:
        raise UserError(f"{out_dir}: unreadable evaluation: {str(exc).splitlines()[0][:200]}") from None
    return summary, evaluations
