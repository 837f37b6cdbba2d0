"""Where reliability data lives in a run root, and how it is read against the run's evaluations.

    RUN_ROOT/labels/labels.jsonl           the imported human labels (`omnidr labels import`)
    RUN_ROOT/reliability/agreement.json    `omnidr judge agreement`: the Agreement model
    RUN_ROOT/reliability/agreement.md      the same as tables
"""

from pathlib import Path

from omnidr.errors import UserError
from omnidr.paths import EvalPaths, RunPaths

from ._agreement import MachineReport
from ._labels import (
    LABELS_DIR,
    LABELS_FILE,
    HumanLabel,
    merge_labels,
    read_labels,
    write_labels,
)

RELIABILITY_DIR = "reliability"


def machine_reports(root: Path) -> dict[tuple[str, str], MachineReport]:
    """The evaluator's decisions on every scored report of the run root, by (system folder, task)."""
    from omnidr.evaluation import read_scored_run

    root = Path(root)
    if not root.is_dir():
        raise UserError(f"{root}: no such folder; pass a run root of `omnidr eval` (runs/<snapshot id>)")
    out = {}
    for folder in (s.root for s in EvalPaths(root).scored_systems()):
        _, evaluations = read_scored_run(RunPaths(folder).evaluation)
        for e in evaluations:
            out[(folder.name, e.task_id)] = MachineReport(
                atoms={a.atom_id: (a.direction, a.outcome) for a in e.atoms},
                total=None if e.failure is not None else e.score.total)
    if not out:
        raise UserError(f"{root}: no scored system folder (none has evaluation/summary.json); run `omnidr eval` first")
    return out


def check_against_run(path: Path, labels: list[tuple[int, HumanLabel]],
                      machine: dict[tuple[str, str], MachineReport]) -> None:
    """Every label names a scored report of the run root and, for an atom label, one of its atoms."""
    systems = {s for s, _ in machine}
    for number, label in labels:
        if label.system not in systems:
            raise UserError(f"{path}:{number}: system: '{label.system}' is not a scored system folder of the run root "
                            f"({', '.join(sorted(systems))})")
        report = machine.get(label.report)
        if report is None:
            raise UserError(f"{path}:{number}: task: '{label.task}' has no evaluated report in {label.system}")
        if label.atom is not None and label.atom not in report.atoms:
            raise UserError(f"{path}:{number}: atom: '{label.atom}' is not an atom of task '{label.task}'")


def import_labels(path: Path, root: Path) -> tuple[list[HumanLabel], Path]:
    """Check a labels file against the run root and merge it into RUN_ROOT/labels/labels.jsonl."""
    numbered = read_labels(path)
    check_against_run(path, numbered, machine_reports(root))
    target = Path(root) / LABELS_DIR / LABELS_FILE
    old = [label for _, label in read_labels(target)] if target.is_file() else []
    new = [label for _, label in numbered]
    write_labels(target, merge_labels(old, new))
    return new, target


def stored_labels(root: Path) -> list[HumanLabel]:
    target = Path(root) / LABELS_DIR / LABELS_FILE
    if not target.is_file():
        raise UserError(f"{root}: no human labels yet; import a labels file with `omnidr labels import FILE {root}`")
    return [label for _, label in read_labels(target)]


def log_reliability(root: Path, name: str, metrics: dict[str, float | None], files: list[Path]) -> str | None:
    """Log a reliability result into the run root's MLflow store (the experiment `omnidr eval` made);
    returns the tracking URI, or None when the root has no evaluated system to name the experiment."""
    from omnidr.pipeline import read_eval_config
    from omnidr.tracking import ARTIFACTS_DIR, Tracker, default_tracking_uri

    ids = [c.snapshot_id for p in sorted(Path(root).iterdir()) if p.is_dir() and (c := read_eval_config(p)) is not None]
    if not ids:
        return None
    uri = default_tracking_uri(Path(root))
    Tracker(uri, f"omnidr/{ids[0]}", Path(root) / ARTIFACTS_DIR).reliability_run(name, metrics, files)
    return uri
