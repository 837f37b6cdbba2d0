"""One report in, one `evaluation.json` out: probes for M atoms, the judge for J atoms, then the
scoring stage's aggregation."""

import asyncio
import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from omnidr._files import write_atomic
from omnidr.benchmark import (
    Atom,
    FactLibrary,
    Hyperparameters,
    ReferenceBudgets,
    ReportContract,
    RubricTree,
    Task,
    check_report,
    direction_inventory,
    open_snapshot,
)
from omnidr.errors import UserError
from omnidr.paths import EVALUATION_FILE
from omnidr.scoring import ReportScore, score_report

from ._browser import ChromiumBrowser, ProbeLimits
from ._cache import report_sha256
from ._judge import IMAGE_TYPES, MAX_IMAGE_BYTES, Judge, JudgeRequest, judge_atom
from ._material import ReportMaterial
from ._models import (
    EVALUATOR_VERSION,
    AtomEvaluation,
    Evaluation,
    EvaluatorPlace,
    JudgeUsage,
    ProbeRecord,
    ProbeResult,
)
from ._probes import DEFAULT_SECTIONS, ProbeCall, ProbeContext, ProbeOutcome, call_key, entry_problem, probe_report
from ._prompt import MAX_FIGURES, frame_moments, is_visual

MATERIAL_FILE = "material.json"
PROBE_FILE = "probe.json"
FIGURES_DIR = "figures"


@dataclass(frozen=True)
class TaskInputs:
    """What the evaluator needs about a task besides the report (never shown to the agent)."""

    rubric: RubricTree
    task: Task | None = None
    facts: FactLibrary | None = None
    hyperparameters: Hyperparameters | None = None
    contract: ReportContract | None = None
    video: Path | None = None  # the snapshot's source video: frames of cited moments for visual criteria

    @property
    def task_id(self) -> str:
        return self.rubric.task_id

    @property
    def entry(self) -> str:
        return self.contract.entry if self.contract else "index.html"

    @property
    def sections(self) -> tuple[str, ...]:
        return tuple(self.contract.required_sections) if self.contract else DEFAULT_SECTIONS


def gate_directions() -> frozenset[str]:
    return frozenset(d.id for d in direction_inventory().directions if d.gate)


def _m_atom(atom: Atom, result, gates: frozenset[str]) -> AtomEvaluation:
    verdict = "yes" if result.status == "pass" else "no"
    if result.status == "error":
        return AtomEvaluation(atom_id=atom.id, direction=atom.direction, evaluator="M", polarity=atom.polarity.value,
                              gate=atom.direction in gates, outcome="skipped", verdict=None, probe=result,
                              rationale=result.reason, elapsed_s=result.elapsed_s, error=result.reason)
    outcome = "pass" if verdict == atom.polarity.value else "fail"
    return AtomEvaluation(atom_id=atom.id, direction=atom.direction, evaluator="M", polarity=atom.polarity.value,
                          gate=atom.direction in gates, outcome=outcome, verdict=verdict, probe=result,
                          rationale=result.reason, elapsed_s=result.elapsed_s)


def failed_evaluation(inputs: TaskInputs, judge: Judge, reason: str, started: float, started_at: datetime,
                      attempt: int | None = None, report: str | None = None, incomplete: str | None = None) -> Evaluation:
    """The record of a report that could not be evaluated: it scores 0 and counts as a failure, unless
    `incomplete` says why it is not final (an outage: the task is run again, not failed)."""
    return Evaluation(
        evaluator_version=EVALUATOR_VERSION, judge=judge.identity, judge_endpoint=judge.endpoint,
        evaluator=EvaluatorPlace.here(), task_id=inputs.task_id, attempt=attempt, report=report, failure=reason,
        started_at=started_at, incomplete=incomplete,
        elapsed_s=round(time.monotonic() - started, 3), score=ReportScore.failure(inputs.task_id, reason),
    )


def _copy_figures(material: ReportMaterial, report_dir: Path, out_dir: Path) -> None:
    """The report's own figures the judge may be shown (MAX_FIGURES, local image files inside the report folder,
    at most MAX_IMAGE_BYTES each), copied to out_dir/figures/ under their report paths: the judge step reads them
    there and never opens the report folder."""
    root = Path(report_dir).resolve()
    for fig in material.figures[:MAX_FIGURES]:
        try:
            src = (root / fig.path).resolve()
            if (root not in src.parents or src.suffix.lower() not in IMAGE_TYPES or not src.is_file()
                    or src.stat().st_size > MAX_IMAGE_BYTES):
                continue
            dest = (out_dir / FIGURES_DIR / fig.path).resolve()
            if (out_dir / FIGURES_DIR).resolve() not in dest.parents:
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
        except (OSError, ValueError):
            continue  # a figure that cannot be copied is a figure the judge does not see


@dataclass(frozen=True)
class DeliveredReport:
    """The report a task is scored on, or why there is none."""

    task_id: str
    attempt: int | None
    report_dir: Path | None
    entry: str
    report: str | None  # entry page relative to the run folder
    failure: str | None
    incomplete: str | None = None  # the last attempt ended by an outage: not final


async def probe_task(
    browser: ChromiumBrowser,
    delivered: DeliveredReport,
    inputs: TaskInputs,
    out_dir: Path,
    limits: ProbeLimits = ProbeLimits(),
) -> ProbeRecord:
    """The probe step on one report: the M atoms' probes, the material for the judge (with frames of the cited
    moments and copies of the figures) and `probe.json`, all in `out_dir`. Runs the report's JavaScript; needs no
    judge. A `failure` of `delivered` (or a missing entry page) gives a record without probes."""
    started, started_at = time.monotonic(), datetime.now(UTC)
    report_dir, attempt, report = delivered.report_dir, delivered.attempt, delivered.report
    failure, incomplete = delivered.failure, delivered.incomplete
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    warnings: list[str] = []
    if failure is None and report_dir is not None:
        failure = entry_problem(report_dir, inputs.entry)
        if failure is None:  # App. F.1: the evaluator applies the attempt's report check itself, whatever it says
            check = check_report(Path(report_dir), inputs.contract.data_file if inputs.contract else "data.js")
            failure, warnings = check.problem, check.warnings
    elif failure is None:
        failure = "no report"
    if failure is not None:
        record = ProbeRecord(task_id=inputs.task_id, attempt=attempt, report=report, failure=failure,
                             incomplete=incomplete, started_at=started_at, elapsed_s=round(time.monotonic() - started, 3))
        write_atomic(out_dir / PROBE_FILE, record.model_dump_json(indent=2))
        return record
    assert report_dir is not None
    atoms = inputs.rubric.atoms
    report_hash = await asyncio.to_thread(report_sha256, report_dir)
    m_atoms = [a for a in atoms if a.probe is not None]
    j_atoms = [a for a in atoms if a.probe is None]
    wants_shots = (any(a.probe is not None and a.probe.name == "screenshot" for a in m_atoms)
                   or any(is_visual(a) for a in j_atoms))
    context = ProbeContext(
        duration_s=inputs.task.video.duration_s if inputs.task else None, sections=inputs.sections,
        screenshots_dir=out_dir / "screenshots" if wants_shots else None,
        budgets=(inputs.hyperparameters or Hyperparameters()).budgets,
    )
    outcome = await probe_report(browser, Path(report_dir), [a.probe for a in m_atoms if a.probe is not None], context,
                                 limits, inputs.entry)
    material: ReportMaterial = outcome.material
    if any(is_visual(a) for a in j_atoms):
        material = await asyncio.to_thread(with_frames, material, inputs.video, out_dir)
        await asyncio.to_thread(_copy_figures, material, Path(report_dir), out_dir)
    write_atomic(out_dir / MATERIAL_FILE, material.model_dump_json(indent=2))
    record = ProbeRecord(task_id=inputs.task_id, attempt=attempt, report=report, incomplete=incomplete,
                         report_sha256=report_hash, started_at=started_at,
                         elapsed_s=round(time.monotonic() - started, 3), results=outcome.results,
                         session=outcome.session, material=MATERIAL_FILE, report_warnings=warnings)
    write_atomic(out_dir / PROBE_FILE, record.model_dump_json(indent=2))
    return record


async def judge_task(judge: Judge, record: ProbeRecord, inputs: TaskInputs, out_dir: Path) -> Evaluation:
    """The judge step on one report: J atoms judged on what the probe step wrote in `out_dir` (probe.json,
    material.json, screenshots, frames, figures), M atoms decided by its probe results, the score aggregated;
    writes `evaluation.json`. Runs no browser and never opens the report folder."""
    started = time.monotonic()
    out_dir = Path(out_dir)
    if record.failure is not None:
        ev = failed_evaluation(inputs, judge, record.failure, started, record.started_at, record.attempt,
                               record.report, record.incomplete)
        ev = ev.model_copy(update={"elapsed_s": round(record.elapsed_s + ev.elapsed_s, 3)})
        write_atomic(out_dir / EVALUATION_FILE, ev.model_dump_json(indent=2))
        return ev
    material = ReportMaterial.model_validate_json((out_dir / (record.material or MATERIAL_FILE)).read_text("utf-8"))
    atoms = inputs.rubric.atoms
    m_atoms = [a for a in atoms if a.probe is not None]
    j_atoms = [a for a in atoms if a.probe is None]
    gates = gate_directions()
    facts = {f.id: f for f in inputs.facts.facts} if inputs.facts else {}
    missing = ProbeResult(name="", status="error", reason="the probe step recorded no result for this probe")
    decided: dict[str, AtomEvaluation] = {
        a.id: _m_atom(a, record.results.get(call_key(a.probe), missing.model_copy(update={"name": a.probe.name})), gates)
        for a in m_atoms if a.probe is not None}
    requests = [
        JudgeRequest(atom=a, task=inputs.task, fact=facts.get(a.fact_id or ""), material=material,
                     report_hash=record.report_sha256 or "", report_dir=out_dir / FIGURES_DIR, evaluation_dir=out_dir)
        for a in j_atoms
    ]
    # a gate atom is decided by the majority of `gate_votes` votes (hyperparameters.json), others by one
    gate_votes = (inputs.hyperparameters or Hyperparameters()).gate_votes
    judged = await asyncio.gather(*(judge_atom(judge, r, gate_votes if r.atom.direction in gates else 1)
                                    for r in requests))
    decided.update({e.atom_id: e for e in judged})
    ordered = [decided[a.id] for a in atoms]

    votes = [v for e in ordered for v in e.votes]
    usage = JudgeUsage(
        calls=sum(v.calls for v in votes), cache_hits=sum(1 for v in votes if v.cached), votes=len(votes),
        failed_votes=sum(1 for v in votes if v.verdict is None),
        input_tokens=sum(v.input_tokens for v in votes), output_tokens=sum(v.output_tokens for v in votes),
        cached_input_tokens=sum(v.cached_input_tokens for v in votes),
    )
    skipped = sum(1 for e in ordered if e.outcome == "skipped")
    draft = Evaluation(
        evaluator_version=EVALUATOR_VERSION, judge=judge.identity, judge_endpoint=judge.endpoint,
        evaluator=EvaluatorPlace.here(), task_id=inputs.task_id, attempt=record.attempt, report=record.report,
        report_sha256=record.report_sha256, started_at=record.started_at, elapsed_s=0.0, atoms=ordered,
        session=record.session, judge_usage=usage, skipped_atoms=skipped, material=record.material,
        report_warnings=record.report_warnings,
        incomplete=f"the judge did not answer for {skipped} atom(s); rerun to ask it again" if skipped else None,
        score=ReportScore.failure(inputs.task_id, "not scored yet"),
    )
    score = score_report(inputs.rubric, draft.decisions(), inputs.hyperparameters, na_guard=True)
    ev = draft.model_copy(update={"score": score,
                                  "elapsed_s": round(record.elapsed_s + time.monotonic() - started, 3)})
    write_atomic(out_dir / EVALUATION_FILE, ev.model_dump_json(indent=2))
    return ev


async def evaluate_report(
    browser: ChromiumBrowser,
    judge: Judge,
    report_dir: Path,
    inputs: TaskInputs,
    out_dir: Path,
    limits: ProbeLimits = ProbeLimits(),
    attempt: int | None = None,
    report: str | None = None,
) -> Evaluation:
    """Evaluate the report in `report_dir` and write `evaluation.json` (and `probe.json`, `material.json`,
    screenshots) into `out_dir`: the probe step, then the judge step, in this process. A missing or unreadable
    entry page gives a failure record."""
    delivered = DeliveredReport(inputs.task_id, attempt, report_dir, inputs.entry, report, None)
    record = await probe_task(browser, delivered, inputs, out_dir, limits)
    return await judge_task(judge, record, inputs, out_dir)


def read_evaluation(path: Path) -> Evaluation:
    return Evaluation.model_validate(json.loads(Path(path).read_text("utf-8")))


FRAMES_DIR = "frames"


def with_frames(material: ReportMaterial, video: Path | None, out_dir: Path) -> ReportMaterial:
    """The material with frames of the snapshot's source video at the moments the report cites (at most
    MAX_FRAMES, spread evenly), for visual criteria; what could not be taken is said in `frames_note`.
    Frames come from the snapshot's video, never from the copy in the report."""
    import shutil
    import subprocess

    moments = frame_moments(material.moments)
    if not moments:
        return material.model_copy(update={"frames_note": "the report cites no video moment"})
    if video is None or not Path(video).is_file():
        return material.model_copy(update={"frames_note": "the snapshot's source video is not available"})
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        return material.model_copy(update={"frames_note": "ffmpeg is not installed where the evaluator runs"})
    folder = Path(out_dir) / FRAMES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    frames, failed = {}, []
    for t in moments:
        path = folder / f"frame-{int(round(t * 1000)):08d}ms.jpg"
        if not path.is_file():
            done = subprocess.run([ffmpeg, "-v", "error", "-y", "-ss", f"{t:.3f}", "-i", str(video), "-frames:v", "1",
                                   "-vf", "scale=640:-2", "-q:v", "4", str(path)], capture_output=True, timeout=60)
            if done.returncode != 0 or not path.is_file():
                failed.append(t)
                continue
        frames[f"{t:g}"] = path.relative_to(out_dir).as_posix()
    note = f"no frame at {', '.join(f'{t:g} s' for t in failed)} (past the end of the video?)" if failed else None
    return material.model_copy(update={"frames": frames, "frames_note": note})


def probe_folder(report_dir: Path, calls: Sequence[ProbeCall], snapshot_path: Path | None = None, task_id: str | None = None,
                 screenshots: Path | None = None) -> tuple[ProbeOutcome, Sequence[ProbeCall]]:
    """`omnidr probe`: run `calls` (or, with a snapshot and a task, the task's M atoms) on one report folder in
    Chromium; the outcome and the calls run. Screenshots go to `screenshots`, or to a temporary folder."""
    duration, entry = None, "index.html"
    sections: tuple[str, ...] | None = None
    budgets: ReferenceBudgets | None = None
    if snapshot_path is not None:
        snap = open_snapshot(snapshot_path)
        if snap.hyperparameters is not None:
            budgets = snap.hyperparameters.budgets
        if snap.contract is not None:
            entry, sections = snap.contract.entry, tuple(snap.contract.required_sections)
        if task_id is not None:
            bundle = snap.tasks.get(task_id)
            if bundle is None or bundle.rubric is None:
                raise UserError(f"task '{task_id}' is not in {snapshot_path} (or its rubric does not load)")
            duration = bundle.task.video.duration_s if bundle.task else None
            if not calls:
                calls = [a.probe for a in bundle.rubric.atoms if a.probe is not None]
    if not calls:
        raise UserError("nothing to probe: give --snapshot with --task, or --probe NAME")

    async def go(shots: Path | None):
        context = ProbeContext(duration_s=duration, screenshots_dir=shots, screenshots_rel=str(shots or "screenshots"),
                               sections=sections or DEFAULT_SECTIONS,
                               budgets=budgets if budgets is not None else ReferenceBudgets())
        async with ChromiumBrowser() as browser:
            return await probe_report(browser, report_dir, calls, context, ProbeLimits(), entry)

    if screenshots is None and any(c.name == "screenshot" for c in calls):
        with tempfile.TemporaryDirectory(prefix="omnidr-shots-") as tmp:
            outcome = asyncio.run(go(Path(tmp)))
    else:
        outcome = asyncio.run(go(screenshots))
    return outcome, calls
