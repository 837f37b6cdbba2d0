"""Behavioural calibration (paper Sec. 3.4 S5, App. E.4): R1 < R2 < R3 and R3 - R1 > delta_cal per task.

"R1 receives the video but cannot search the web. R2 uses [one model] under [one harness] with the full
tool set and video-research skill. R3 receives compact evidence-map briefs. The same model and harness
generate all three reports so that the calibration varies information access rather than the report
generator." In this project R1 is the harness at capability `video` (no web tools), R2 at `full`, R3 at
`full` with the task's evidence brief (omnidr.benchmark.evidence_brief) appended to its instruction.

The issue that asked for this check also wanted each single gap (R2 - R1, R3 - R2) to exceed
delta_cal; the paper asks it of R3 - R1 only, and so does this check. A task without a delivered report
in one configuration scores 0 there, as an unparseable report does in the paper (App. F).
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnidr.benchmark import CALIBRATION_FILE, Calibration, CalibrationScores, calibration_problem
from omnidr.errors import UserError
from omnidr.paths import RunPaths
from omnidr.scoring import Grid

from ._store import RELIABILITY_DIR

LEVELS = ("R1", "R2", "R3")
REPORT_NAME = "calibration"


def task_totals(folder: Path) -> dict[str, float]:
    """Task id -> report score (0-100) of one scored system folder; a failed attempt scores 0."""
    from omnidr.evaluation import read_scored_run

    summary, _evaluations = read_scored_run(RunPaths(Path(folder)).evaluation)
    return {t.task_id: t.total for t in summary.tasks}


def calibration_of(folders: dict[str, Path], labels: dict[str, str], judge: str, tasks: list[str]) -> Calibration:
    """The calibration record of three scored system folders (R1, R2, R3 -> folder)."""
    totals = {level: task_totals(folders[level]) for level in LEVELS}
    return Calibration(systems=dict(labels), judge=judge, tasks={
        t: CalibrationScores(**{level: round(totals[level].get(t, 0.0), 4) for level in LEVELS}) for t in tasks})


def calibration_grid(cal: Calibration, gap: float) -> Grid:
    rows = []
    for task, s in cal.tasks.items():
        problem = calibration_problem(s, gap)
        rows.append([task, f"{s.R1:.1f}", f"{s.R2:.1f}", f"{s.R3:.1f}", f"{s.R3 - s.R1:+.1f}",
                     "pass" if problem is None else f"FAIL: {problem}"])
    passed = sum(1 for r in rows if r[-1] == "pass")
    head = f"Behavioural calibration: {passed}/{len(rows)} task(s) pass R1 < R2 < R3 and R3 - R1 > {100 * gap:g} points"
    return Grid(head, ["task", "R1", "R2", "R3", "R3 - R1", "check"], rows, frozenset({1, 2, 3, 4}))


def systems_line(cal: Calibration) -> str:
    return (f"R1 {cal.systems['R1']}, R2 {cal.systems['R2']}, R3 {cal.systems['R3']}; judge {cal.judge}")


def failures(cal: Calibration, gap: float) -> dict[str, str]:
    return {t: p for t, s in cal.tasks.items() if (p := calibration_problem(s, gap)) is not None}


def plot(cal: Calibration, gap: float, path: Path) -> Path:
    """Grouped bars of R1, R2 and R3 per task, with each task's R1 + delta_cal bar to clear."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    tasks = list(cal.tasks)
    x = np.arange(len(tasks))
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(tasks) + 2), 3.6), dpi=100)
    for k, level in enumerate(LEVELS):
        ax.bar(x + (k - 1) * 0.26, [getattr(cal.tasks[t], level) for t in tasks], 0.26, label=level)
    for i, t in enumerate(tasks):
        ax.hlines(cal.tasks[t].R1 + 100 * gap, i - 0.42, i + 0.42, colors="black", linestyles="dashed",
                  label="R1 + gap" if i == 0 else "_nolegend_")  # one legend entry for all the lines
    ax.set_xticks(x, tasks, fontsize=8)
    ax.set_ylim(0, 100)
    ax.set_ylabel("report score")
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def write_calibration(snapshot: Path, run_root: Path, cal: Calibration, gap: float) -> list[Path]:
    """SNAPSHOT/calibration.json (what `snapshot validate` and `freeze` check) and, in the run root,
    reliability/calibration.json, .md and .png."""
    record = cal.model_dump_json(indent=2) + "\n"
    target = Path(snapshot) / CALIBRATION_FILE
    tmp = target.with_suffix(".json.tmp")
    tmp.write_text(record, "utf-8")
    tmp.replace(target)
    folder = Path(run_root) / RELIABILITY_DIR
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{REPORT_NAME}.json").write_text(record, "utf-8")
    png = plot(cal, gap, folder / f"{REPORT_NAME}.png")
    md = folder / f"{REPORT_NAME}.md"
    md.write_text(calibration_grid(cal, gap).markdown() + f"\n\n{systems_line(cal)}\n\n"
                  f"![R1, R2 and R3 per task]({png.name})\n", "utf-8")
    return [target, folder / f"{REPORT_NAME}.json", md, png]


def calibration_systems(harness: str, endpoint) -> dict:
    """R1, R2 and R3 of App. E.4 as systems of one model under one harness: without web search (capability
    video), with the full tools, and with the full tools and the task's evidence brief."""
    from omnidr.harness import HARNESSES
    from omnidr.pipeline import make_system

    if harness in HARNESSES and "video" not in HARNESSES[harness].capabilities:
        raise UserError(f"R1 needs the {harness} harness without web search, but it runs at "
                        f"{', '.join(HARNESSES[harness].capabilities)} only; calibrate with --harness reference")
    return {"R1": make_system(harness, "video", endpoint), "R2": make_system(harness, "full", endpoint),
            "R3": make_system(harness, "full", endpoint, brief=True)}


@dataclass
class CalibrationOutcome:
    """What `omnidr calibrate` concluded from its three systems' scores."""

    problem: str | None = None  # why nothing was concluded (scores missing or not final); rerun the command
    calibration: Calibration | None = None
    gap: float = 0.0
    failed: dict[str, str] = field(default_factory=dict)  # task -> why it fails the check
    files: list[Path] = field(default_factory=list)  # SNAPSHOT/calibration.json, then the run root's reliability files
    tracking_uri: str | None = None


def conclude_calibration(snapshot: Path, run_root: Path, board, systems: dict, judge: str,
                         task_ids: list[str] | None) -> CalibrationOutcome:
    """Check R1 < R2 < R3 with R3 - R1 above the snapshot's calibration_gap on every task, write the result
    (SNAPSHOT/calibration.json and the run root's reliability files) and log it to MLflow."""
    from omnidr.benchmark import Hyperparameters, open_snapshot

    from ._store import log_reliability

    folders = {level: run_root / spec.label for level, spec in systems.items()}
    unscored = [f.name for f in folders.values() if not RunPaths(f).scored]
    if unscored:
        return CalibrationOutcome(problem=f"{', '.join(unscored)} has no scores; rerun the same command")
    provisional = [r.label for r in (board.rows if board is not None else []) if r.incomplete]
    if provisional:
        return CalibrationOutcome(problem=f"scores are not final for {', '.join(provisional)}; rerun the same command "
                                          "once the model and the judge answer")
    snap = open_snapshot(snapshot)
    gap = (snap.hyperparameters or Hyperparameters()).calibration_gap
    cal = calibration_of(folders, {level: spec.label for level, spec in systems.items()}, judge,
                         list(task_ids or snap.tasks))
    files = write_calibration(snapshot, run_root, cal, gap)
    failed = failures(cal, gap)
    metrics = {"tasks": float(len(cal.tasks)), "tasks_passed": float(len(cal.tasks) - len(failed)),
               **{f"mean_{level}": sum(getattr(s, level) for s in cal.tasks.values()) / len(cal.tasks)
                  for level in ("R1", "R2", "R3")}}
    uri = log_reliability(run_root, "calibration", metrics, files[1:])
    return CalibrationOutcome(calibration=cal, gap=gap, failed=failed, files=files, tracking_uri=uri)



def run_calibration(snapshot: Path, harness: str, console, options: Mapping[str, Any]):
    """`omnidr calibrate`'s work, also S5 of `omnidr author calibrate`: the three systems' runs (into
    RUNS_ROOT/calibration/<snapshot id>/, resumable), then `conclude_calibration`. `options` are the eval options
    (`omnidr.pipeline.eval_options`) by their Click names. Returns the pipeline's outcome and the calibration outcome
    (None when the run produced no run root)."""
    from omnidr.pipeline import eval_request, judge_key, parse_model, run_with_progress

    o = options
    systems = calibration_systems(harness, parse_model(o["model"], o["model_key_env"]))
    request = eval_request(snapshot, list(systems.values()), o, runs_root=Path(o["runs_root"]) / "calibration")
    outcome = run_with_progress(request, check_examples=False, console=console)
    if outcome.run_root is None:
        return outcome, None
    return outcome, conclude_calibration(snapshot, outcome.run_root, outcome.board, systems, judge_key(request.judge),
                                         request.tasks)
