"""`omnidr compare --system ...`: the systems of one request, each against the first, under one budget."""

from rich.console import Console
from rich.table import Table

from omnidr.errors import UserError

from ._eval import EvalOutcome, EvalRequest, judge_key
from ._results import collect_systems, comparison_files


def run_comparison(outcome: EvalOutcome, request: EvalRequest, console: Console):
    """Paired differences (every system minus the first) with task-bootstrap intervals, wins per task,
    and the per-task scores; written to <run root>/comparisons/<labels>.json and .md."""
    from omnidr.scoring import paired_comparisons, score_systems, snapshot_trees
    from omnidr.scoring._render import comparisons_grid

    root = outcome.run_root
    task_ids = list(request.tasks or outcome.systems[0].records)
    found, _ = collect_systems(root, judge_key(request.judge), task_ids)
    by_folder = {f[1].name: f for f in found}
    missing = [s.spec.label for s in outcome.systems if s.spec.label not in by_folder]
    if missing:
        raise UserError(f"system(s) {', '.join(missing)} have no complete evaluation to compare; rerun the command")
    chosen = [by_folder[s.spec.label] for s in outcome.systems]
    trees, hp = snapshot_trees(request.snapshot)
    scored = score_systems([f[3] for f in chosen], trees, hp, task_ids=task_ids)
    extra = {"replicates": hp.bootstrap_replicates} if hp else {}
    comparisons = paired_comparisons(scored, task_ids, [(j, 0) for j in range(1, len(scored))], **extra)
    per_task = {t: {s.system.label: next((r.total for r in s.reports if r.task_id == t), 0.0) for s in scored}
                for t in task_ids}
    name = "-vs-".join(s.spec.label for s in outcome.systems)
    files = comparison_files(root, name, comparisons, per_task, request.budget, request.budget_label,
                             judge_key(request.judge))
    console.print(comparisons_grid(comparisons).rich())
    table = Table(title=f"scores per task (same budget: {request.budget_label})")
    table.add_column("task")
    for s in scored:
        table.add_column(s.system.label, justify="right")
    for t, row in per_task.items():
        table.add_row(t, *(f"{v:.1f}" for v in row.values()))
    console.print(table)
    for path in files:
        console.print(f"wrote {path}", soft_wrap=True)
    return comparisons, files
