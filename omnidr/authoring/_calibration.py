"""S5's behavioural calibration of a package (paper Sec. 3.2 S5, App. E.4): `omnidr calibrate`'s check, run on the
package. One model under one harness writes three reports of the task: R1 with the video and no web search, R2 with
the full tools, R3 with the full tools and the evidence brief of the package's fact library; "each task must satisfy
R1 < R2 < R3 and R3 - R1 > delta_cal" (`calibration_gap` in hyperparameters.json; the reading of delta_cal is
`omnidr.benchmark`'s). The runs go to RUNS_ROOT/calibration/<snapshot id>/ as `omnidr calibrate`'s do; the package
keeps `calibration.json` (what `snapshot validate` checks) and `authoring/s5/record.json`.

The paper: "Every retained task satisfies" the rule, so a package that fails it is excluded by S6 (`finish`), and its
attrition trace has an `S5 calibration` row. Open in the paper, chosen here: calibration is not repaired (the paper
names no stage a failure returns to), and a package excluded by it stays excluded.
"""

from pathlib import Path

from omnidr.benchmark import CALIBRATION_FILE, Calibration, Hyperparameters, RubricTree, calibration_problem
from omnidr.errors import UserError

from ._models import Attrition
from ._package import Package, dump

STEP = "S5 calibration"


def calibration_row(pkg: Package) -> tuple[Attrition | None, str | None]:
    """The package's calibration as an attrition row, and why it fails (None: it passes, or was not run)."""
    path = pkg.root / CALIBRATION_FILE
    if not path.is_file():
        return None, None
    task = pkg.draft().id
    cal = Calibration.model_validate_json(path.read_text("utf-8"))
    scores = cal.tasks.get(task)
    if scores is None:
        return None, None
    gap = pkg.hyperparameters().calibration_gap if (pkg.root / "hyperparameters.json").is_file() else \
        Hyperparameters().calibration_gap
    problem = calibration_problem(scores, gap)
    said = f"R1 {scores.R1:g}, R2 {scores.R2:g}, R3 {scores.R3:g}; R3 - R1 must exceed {100 * gap:g} points"
    row = Attrition(step=STEP, candidates=1, accepted=0 if problem else 1, excluded=1 if problem else 0,
                    decision=f"failed: {problem}" if problem else f"passed ({said})")
    return row, problem


def calibrate_package(pkg: Package, harness: str, console, options: dict):
    """Run S5's calibration on the package (`options`: `omnidr calibrate`'s, from the CLI); returns the calibration
    outcome (None when the run produced no run root) and records it in `authoring/s5/record.json`."""
    from omnidr.reliability import run_calibration

    draft = pkg.draft()
    rubric = RubricTree.model_validate_json((pkg.task_dir(draft) / "rubric.json").read_text("utf-8"))
    if not rubric.atoms:
        raise UserError(f"{pkg.root}: S5 calibration needs the assembled package; run S0-S4 first (`omnidr author run`)")
    options = {**options, "tasks": options.get("tasks") or (draft.id,)}
    outcome, result = run_calibration(pkg.root, harness, console, options)
    if result is None or result.calibration is None:
        return result
    row, problem = calibration_row(pkg)
    dump(pkg.stage("s5") / "record.json", {
        "stage": "S5", "check": "behavioural calibration (paper App. E.4)", "systems": result.calibration.systems,
        "judge": result.calibration.judge, "scores": result.calibration.tasks[draft.id].model_dump(),
        "gap_points": 100 * result.gap, "passed": problem is None, "problem": problem,
        "run_root": str(Path(outcome.run_root)), "files": [str(f) for f in result.files],
        "decision": row.decision if row else None})
    return result
