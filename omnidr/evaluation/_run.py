"""`omnidr score RUN_DIR`: evaluate what every task of a run folder delivered, by the snapshot's task kind: the
report of a `report` task (here), the answer of a `short_answer` or `mcq` task (`_answer_run.py`).

Layout read (written by `omnidr run`): RUN_DIR/run.json, and per task
RUN_DIR/attempts/<task_id>/<n>/attempt.json with the report under the attempt folder at
`report_path`. The report of a task is the one of its last finished attempt; a task whose last
attempt delivered nothing, or whose report is missing or unreadable, is a failure scoring 0.

Layout written: OUT/<task_id>/evaluation.json (+ material.json, screenshots/), OUT/summary.json,
and the judge cache in OUT/judge-cache/ unless another cache folder is given.
"""

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from omnidr._files import write_atomic
from omnidr._runread import read_record
from omnidr.benchmark import Snapshot, open_snapshot
from omnidr.errors import UserError
from omnidr.paths import SUMMARY_FILE, AttemptPaths, RunPaths
from omnidr.scoring import AnswerSystem, SystemDecisions, SystemKey

from ._answer_judge import AnswerJudge
from ._answer_run import answer_tasks, format_judge, read_answer_run, score_answers
from ._baseline import BaselineJudge
from ._browser import ChromiumBrowser, ProbeLimits
from ._cache import JudgeCache
from ._evaluate import (
    EVALUATION_FILE,
    PROBE_FILE,
    DeliveredReport,
    TaskInputs,
    judge_task,
    probe_task,
    read_evaluation,
)
from ._judge import Judge, JudgeSettings, OpenAIJudge
from ._models import (
    EVALUATOR_VERSION,
    AnswerEvaluation,
    Evaluation,
    EvaluatorPlace,
    JudgeIdentity,
    JudgeUsage,
    ProbedRun,
    ProbeRecord,
    RunEvaluation,
    TaskScore,
)
from ._request import ScoreRequest

if TYPE_CHECKING:
    from omnidr.attempts import RunConfig

Progress = Callable[[str], None]


JUDGE_CACHE_DIR = "judge-cache"
"""The judge cache inside an output folder, unless another folder is given."""


def read_run_config(run_dir: Path) -> "RunConfig":
    """`run.json` of a run folder, read with the attempts stage's own model."""
    from omnidr.attempts import RunConfig

    path = RunPaths(Path(run_dir)).config
    if not Path(run_dir).is_dir():
        raise UserError(f"{run_dir}: no such folder; pass a run folder made by `omnidr run`")
    if not path.is_file():
        raise UserError(f"{run_dir}: no run.json; pass a run folder made by `omnidr run`")
    config = read_record(path, RunConfig, "run file")
    assert config is not None  # the file is there (checked above)
    return config


def _attempt_number(folder: Path) -> int | None:
    return int(folder.name) if folder.name.isdigit() else None


def delivered_report(run_dir: Path, task_id: str) -> DeliveredReport:
    """The last finished attempt of a task and its report (never raises for a bad attempt folder)."""
    finished = [a.root for a in RunPaths(Path(run_dir)).attempt_folders(task_id) if a.finished]
    if not finished:
        return DeliveredReport(task_id, None, None, "index.html", None, "no finished attempt")
    folder = finished[-1]
    from omnidr.attempts import NOT_COUNTED, AttemptRecord

    n = _attempt_number(folder)
    try:
        record = AttemptRecord.model_validate_json(AttemptPaths(folder).record.read_text("utf-8"))
    except (ValidationError, UnicodeDecodeError, OSError) as exc:
        return DeliveredReport(task_id, n, None, "index.html", None, f"attempt {n}: unreadable attempt.json ({type(exc).__name__})")
    if not record.delivered or not record.report_path:
        detail = f": {record.detail}" if record.detail else ""
        failure = f"attempt {n} ended '{record.reason.value}'{detail}"[:300]
        pending = (f"attempt {n} ended '{record.reason.value}', not the agent's failure; rerun to try the task again"
                   if record.reason in NOT_COUNTED else None)
        return DeliveredReport(task_id, n, None, "index.html", None, failure, pending)
    entry_path = folder / record.report_path
    rel = entry_path.relative_to(run_dir).as_posix() if entry_path.is_relative_to(run_dir) else record.report_path
    resolved_folder = folder.resolve()
    try:
        inside = resolved_folder in entry_path.parent.resolve().parents or entry_path.parent.resolve() == resolved_folder
    except (OSError, RuntimeError):
        inside = False
    if not inside:
        return DeliveredReport(task_id, n, None, "index.html", rel, f"attempt {n}: report path leaves the attempt folder")
    return DeliveredReport(task_id, n, entry_path.parent, entry_path.name, rel, None)


def _snapshot_path(run_dir: Path, run: "RunConfig", snapshot: Path | None) -> Path:
    if snapshot is not None:
        return Path(snapshot)
    given = Path(run.snapshot)
    for candidate in (given, Path(run_dir) / given):
        if (candidate / "snapshot.json").is_file():
            return candidate
    raise UserError(f"the run's snapshot '{run.snapshot}' is not found from here; pass --snapshot PATH")


def task_inputs(snapshot: Path, task_ids: Sequence[str], snap: Snapshot | None = None) -> dict[str, TaskInputs]:
    """Rubric trees, tasks, facts, hyperparameters and contract of the tasks; a task the snapshot
    lacks or cannot load is a user error naming it. `snap`: the snapshot at `snapshot`, when loaded already."""
    snap = snap if snap is not None else open_snapshot(snapshot)
    out = {}
    for task_id in task_ids:
        bundle = snap.tasks.get(task_id)
        if bundle is None:
            raise UserError(f"task '{task_id}' is not in the snapshot {snapshot}; pass the snapshot the run used (--snapshot)")
        if bundle.rubric is None:
            problem = next((p.line() for p in snap.problems if p.file.startswith(f"tasks/{task_id}/")), "rubric.json did not load")
            raise UserError(f"{snapshot}: task '{task_id}': {problem}")
        video = bundle.folder / bundle.task.video.file if bundle.task is not None else None
        out[task_id] = TaskInputs(rubric=bundle.rubric, task=bundle.task, facts=bundle.facts,
                                  hyperparameters=snap.hyperparameters, contract=snap.contract, video=video)
    return out


def make_judge(settings: JudgeSettings | None, cache_dir: Path | None) -> Judge:
    """The model judge when an endpoint is configured, else the offline baseline."""
    if settings is None:
        return BaselineJudge()
    return OpenAIJudge(settings, JudgeCache(cache_dir) if cache_dir is not None else None)


def _task_score(ev: Evaluation, out_dir: Path, folder: Path) -> TaskScore:
    return TaskScore(task_id=ev.task_id, attempt=ev.attempt, total=ev.score.total, failed=ev.score.failed,
                     failure_reason=ev.score.failure_reason, incomplete=ev.incomplete, evaluation=(folder / EVALUATION_FILE).relative_to(out_dir).as_posix())


PROBED_FILE = "probed.json"


def _writable(out_dir: Path) -> None:
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe_file = out_dir / ".write-test"
        probe_file.write_text("")
        probe_file.unlink()
    except OSError as exc:
        raise UserError(f"cannot write to {out_dir} ({exc.strerror}); pass a writable --out folder") from None


def copy_regular_files(src: Path, dest: Path, max_bytes: int = 256 << 20) -> None:
    """Copy the regular files under `src` to `dest` (same relative paths), never following or copying a symbolic
    link and never writing outside `dest`: the judge step takes the probe step's output this way, so that a link
    planted there cannot make it read its own files (the judge key) into what it sends or keeps."""
    import os
    import shutil
    import stat

    src, dest = Path(src), Path(dest)
    copied = 0
    for folder, _dirs, files in os.walk(src, followlinks=False):
        here = Path(folder)
        for name in files:
            path = here / name
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode):
                continue
            copied += info.st_size
            if copied > max_bytes:
                raise RuntimeError(f"the probe step's output under {src} is larger than {max_bytes >> 20} MiB")
            target = dest / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as reader, open(target, "wb") as writer:
                shutil.copyfileobj(reader, writer)


def _what_to_score(request: ScoreRequest) -> tuple["RunConfig | None", list[str], Path, str | None, str | None, str]:
    """(the run's record, task ids, snapshot folder, model, harness, run label) of a request; the judge step reads
    them from the probe step's output (no run folder, no record)."""
    if request.step == "judge":
        if request.probe_dir is None or request.snapshot is None:
            raise UserError("the judge step needs --probe-dir and --snapshot")
        try:
            probed = ProbedRun.model_validate_json((Path(request.probe_dir) / PROBED_FILE).read_text("utf-8"))
        except (OSError, ValidationError, UnicodeDecodeError) as exc:
            raise UserError(f"{request.probe_dir}: no readable {PROBED_FILE} ({str(exc).splitlines()[0][:200]}); run "
                            "the probe step first") from None
        return None, probed.tasks, Path(request.snapshot), probed.model, probed.harness, probed.run_dir
    if request.run_dir is None:
        raise UserError("give the run folder to score")
    run_dir = Path(request.run_dir)
    run, task_ids = _run_and_tasks(run_dir, request.tasks)
    return run, task_ids, _snapshot_path(run_dir, run, request.snapshot), run.model, run.harness, str(run_dir)


async def _probe_reports(run_dir: Path, task_ids: Sequence[str], inputs: dict, out_dir: Path, limits: ProbeLimits,
                         progress: Progress) -> dict[str, ProbeRecord]:
    """The probe step on every task's delivered report (run order), in one Chromium."""
    records: dict[str, ProbeRecord] = {}
    async with ChromiumBrowser() as browser:
        if not browser.sandboxed:
            progress(f"Chromium runs without its own sandbox: {browser.sandbox_note}")
        for task_id in task_ids:
            found = delivered_report(run_dir, task_id)
            if found.report_dir is not None and found.failure is None:
                progress(f"{task_id}: probing {found.report}")
            records[task_id] = await probe_task(browser, found, inputs[task_id], out_dir / task_id, limits)
    return records


async def score_run_async(request: ScoreRequest, progress: Progress = lambda _m: None) -> RunEvaluation | None:
    """Score a run folder (see `score_run`). `step="probe"` writes the probe step's output to `out_dir` and returns
    None; `step="judge"` reads it from `probe_dir` (no run folder: `run_dir` is None) and finishes the scoring."""
    started = time.monotonic()
    run, task_ids, snapshot_path, model, harness, run_label = _what_to_score(request)
    run_dir = Path(request.run_dir) if request.run_dir is not None else None
    judge_settings = request.judge_settings
    snap = open_snapshot(snapshot_path)
    out_dir = Path(request.out_dir) if request.out_dir is not None else RunPaths(Path(run_label)).evaluation
    if snap.kind.delivers_answer:
        if request.step != "all" or run_dir is None or run is None:
            raise UserError(f"{snap.kind.value} tasks are scored in one step (no browser runs): drop --step")
        questions = answer_tasks(snap, task_ids)
        _writable(out_dir)
        answer_judge = format_judge(questions, judge_settings, request.cache_dir or out_dir / JUDGE_CACHE_DIR, progress)
        return await score_answers(run_dir, run, questions, snapshot_path, out_dir, answer_judge, progress)
    inputs = task_inputs(snapshot_path, task_ids, snap)
    _writable(out_dir)
    if request.step == "judge":
        assert request.probe_dir is not None
        records = await _probed_records(Path(request.probe_dir), task_ids, out_dir)
    else:
        assert run_dir is not None
        records = await _probe_reports(run_dir, task_ids, inputs, out_dir, request.limits, progress)
        if request.step == "probe":
            write_atomic(out_dir / PROBED_FILE, ProbedRun(run_dir=str(run_dir), snapshot=str(snapshot_path), model=model,
                                                          harness=harness, tasks=task_ids).model_dump_json(indent=2))
            return None
    judge = make_judge(judge_settings, request.cache_dir or out_dir / JUDGE_CACHE_DIR)
    if judge_settings is None:
        progress("no judge endpoint configured: J atoms are decided by the offline baseline judge "
                 "(lexical; its scores are not comparable with model-judged scores)")
    lines, evaluations = await _judge_reports(judge, records, inputs, out_dir, progress)
    usage = JudgeUsage(**{f: sum(getattr(e.judge_usage, f) for e in evaluations) for f in JudgeUsage.model_fields})
    summary = RunEvaluation(
        evaluator_version=EVALUATOR_VERSION, judge=judge.identity, evaluator=EvaluatorPlace.here(), run_dir=run_label,
        snapshot=str(snapshot_path), model=model, harness=harness, tasks=lines,
        mean_total=round(sum(t.total for t in lines) / len(lines), 4) if lines else 0.0,
        judge_usage=usage, elapsed_s=round(time.monotonic() - started, 3),
    )
    write_atomic(out_dir / SUMMARY_FILE, summary.model_dump_json(indent=2))
    return summary


async def _probed_records(probe_dir: Path, task_ids: Sequence[str], out_dir: Path) -> dict[str, ProbeRecord]:
    """The probe step's record of every task, its files copied into `out_dir` (the judge step's input)."""
    records: dict[str, ProbeRecord] = {}
    for task_id in task_ids:
        folder = probe_dir / task_id
        try:
            records[task_id] = ProbeRecord.model_validate_json((folder / PROBE_FILE).read_text("utf-8"))
            if records[task_id].task_id != task_id:
                raise ValueError(f"probe.json is for task '{records[task_id].task_id}'")
        except (OSError, ValidationError, ValueError, UnicodeDecodeError) as exc:
            raise RuntimeError(f"{folder}: the probe step's record is unreadable: {str(exc).splitlines()[0][:200]}") from None
        await asyncio.to_thread(copy_regular_files, folder, out_dir / task_id)
    return records


async def _judge_reports(judge: Judge, records: dict[str, ProbeRecord], inputs: dict, out_dir: Path,
                         progress: Progress) -> tuple[list[TaskScore], list[Evaluation]]:
    """Judge every probed report (run order) and write its evaluation; the judge is closed at the end."""
    lines: list[TaskScore] = []
    evaluations: list[Evaluation] = []
    try:
        for task_id, record in records.items():
            folder = out_dir / task_id
            ev = await judge_task(judge, record, inputs[task_id], folder)
            evaluations.append(ev)
            lines.append(_task_score(ev, out_dir, folder))
            note = f"failure: {ev.failure}" if ev.failure else f"{ev.score.total:.1f}"
            if ev.incomplete:
                note += f" (not final: {ev.incomplete})"
            progress(f"{task_id}: {note}")
    finally:
        await judge.aclose()
    return lines, evaluations


def score_run(request: ScoreRequest, progress: Progress = lambda _m: None) -> RunEvaluation:
    """Synchronous `score_run_async`, in this process whatever `request.evaluator` says (`score_folder` honours it).
    The snapshot's task kind decides what is evaluated: reports (probes and the atom judge), short answers (the
    answer judge) or multiple-choice answers (the option checker); `limits` applies to reports only. Either way OUT
    holds one evaluation.json per task and summary.json (`task_kind` says which)."""
    summary = asyncio.run(score_run_async(request, progress))
    if summary is None:
        raise ValueError("score_run with step='probe' scores nothing; call probe_run")
    return summary


def probe_run(run_dir: Path, out_dir: Path, snapshot: Path | None = None, tasks: Sequence[str] | None = None,
              progress: Progress = lambda _m: None) -> None:
    """The probe step alone: each task's probe.json (and material, screenshots, frames, figures) and probed.json in
    `out_dir`, for a judge step to finish (`score_run(ScoreRequest(step="judge", probe_dir=out_dir, ...))`)."""
    request = ScoreRequest(run_dir=run_dir, out_dir=out_dir, snapshot=snapshot, tasks=tasks, step="probe")
    asyncio.run(score_run_async(request, progress))


# ------------------------------------------------------------------------------------------------
# reading scored runs back, one judge only


def read_scored_run(out_dir: Path) -> tuple[RunEvaluation, list[Evaluation]]:
    """`summary.json` and every evaluation it lists."""
    path = Path(out_dir) / SUMMARY_FILE
    if not path.is_file():
        raise UserError(f"{out_dir}: no {SUMMARY_FILE}; pass an output folder of `omnidr score`")
    try:
        summary = RunEvaluation.model_validate_json(path.read_text("utf-8"))
        if summary.task_kind.delivers_answer:
            raise UserError(f"{out_dir}: holds {summary.task_kind.value} evaluations, not reports; read it with "
                            "read_answer_run")
        evaluations = [read_evaluation(Path(out_dir) / t.evaluation) for t in summary.tasks]
    except UserError:
        raise
    except (ValidationError, OSError, ValueError) as exc:
        raise UserError(f"{out_dir}: unreadable evaluation: {str(exc).splitlines()[0][:200]}") from None
    return summary, evaluations


def require_one_judge(items: Iterable[Evaluation | AnswerEvaluation | RunEvaluation]) -> JudgeIdentity | None:
    """The one judge behind all `items`; mixing judges is a user error (scores are not comparable)."""
    judges = {item.judge for item in items}
    if len(judges) > 1:
        names = ", ".join(sorted(j.key for j in judges))
        raise UserError(f"the evaluations come from {len(judges)} different judges ({names}); "
                        "re-score them with one judge before comparing them")
    return next(iter(judges), None)


def system_decisions(out_dirs: Sequence[Path]) -> tuple[JudgeIdentity | None, list[SystemDecisions]]:
    """Scored runs as the scoring stage's leaderboard input, refusing to mix judges."""
    systems: list[SystemDecisions] = []
    items: list[Evaluation | RunEvaluation] = []
    for out in out_dirs:
        summary, evaluations = read_scored_run(out)
        items += [summary, *evaluations]
        key = SystemKey(model=summary.model or Path(summary.run_dir).name, harness=summary.harness)
        systems.append(SystemDecisions(system=key, decisions=[e.decisions() for e in evaluations]))
    judge = require_one_judge(items)
    return judge, systems


def answer_systems(out_dirs: Sequence[Path]) -> tuple[JudgeIdentity | None, list[AnswerSystem]]:
    """Scored runs of answers (short-answer or multiple-choice) as the scoring stage's leaderboard input (`build_answer_leaderboard`,
    `compare_answer_systems`), refusing to mix judges. A system is named by its run's model and harness."""
    systems: list[AnswerSystem] = []
    items: list[AnswerEvaluation | RunEvaluation] = []
    for out in out_dirs:
        summary, evaluations = read_answer_run(out)
        items += [summary, *evaluations]
        key = SystemKey(model=summary.model or Path(summary.run_dir).name, harness=summary.harness)
        systems.append(AnswerSystem(system=key, outcomes=[e.outcome() for e in evaluations]))
    return require_one_judge(items), systems


def _run_and_tasks(run_dir: Path, tasks: Sequence[str] | None):
    """The run folder's record and the tasks to score (all of the run's when None); a task the run lacks is a user
    error."""
    run = read_run_config(run_dir)
    task_ids = list(tasks) if tasks else run.tasks
    unknown = sorted(set(task_ids) - set(run.tasks))
    if unknown:
        raise UserError(f"task(s) {', '.join(unknown)} are not part of the run {run_dir}")
    return run, task_ids


def score_answers_with(run_dir: Path, judge: AnswerJudge, snapshot: Path | None = None,
                       tasks: Sequence[str] | None = None, out_dir: Path | None = None,
                       progress: Progress = lambda _m: None) -> RunEvaluation:
    """Score a run of answers here with `judge` (a task kind's own answer check, which needs no browser and no
    evaluator image), writing the same records as `score_run` into `out_dir` (default RUN_DIR/evaluation)."""
    run_dir = Path(run_dir)
    run, task_ids = _run_and_tasks(run_dir, tasks)
    snapshot_path = _snapshot_path(run_dir, run, snapshot)
    questions = answer_tasks(open_snapshot(snapshot_path), task_ids)
    out = Path(out_dir) if out_dir is not None else RunPaths(run_dir).evaluation
    _writable(out)
    return asyncio.run(score_answers(run_dir, run, questions, snapshot_path, out, judge, progress))
