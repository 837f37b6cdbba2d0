"""`omnidr compare`: systems of one request (or evaluated folders), each against the first."""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from omnidr.errors import UserError
from omnidr.paths import EvalPaths, RunPaths
from sandbox.models import Budget

from ._eval import EvalOutcome, EvalRequest
from ._results import comparison_files, refresh_index, web_policy_note
from .kinds import folder_kind, folders_kind, snapshot_kind


def run_comparison(outcome: EvalOutcome, request: EvalRequest, console: Console, fmt: str = "terminal"):
    """Paired differences of every system with the first (A minus B, A the higher-ranked of the pair, paper App.
    F.2) with task-bootstrap intervals, wins per task, and the per-task scores; written to <run root>/comparisons/<labels>.json and .md."""
    root = outcome.run_root
    if root is None:
        raise UserError("the evaluation made no run root, so there is nothing to compare")
    task_ids = list(request.tasks or outcome.systems[0].records)
    kind = snapshot_kind(request.snapshot)
    key = kind.judge_key(request.judge)
    found = kind.collect_systems(root, key, task_ids)
    chosen = pick_systems(found, [s.spec.label for s in outcome.systems])
    under = ComparedUnder(root, request.budget, request.budget_label, key)
    return kind.compare_systems(chosen, request.snapshot, task_ids, under, console, fmt)


def pick_systems(found: Sequence[Any], labels: list[str]) -> list[Any]:
    """The evaluated system folders named `labels` (`found`'s by folder name), in that order; a label without a
    complete evaluation is a user error."""
    by_folder = {f.folder.name: f for f in found}
    missing = [label for label in labels if label not in by_folder]
    if missing:
        raise UserError(f"system(s) {', '.join(missing)} have no complete evaluation to compare; rerun the command")
    return [by_folder[label] for label in labels]


def expand_run_roots(folders) -> list[Path]:
    """Each folder as given, except an eval run root (no eval.json, system folders inside), which
    stands for its system folders."""
    out: list[Path] = []
    for f in map(Path, folders):
        inside = [s.root for s in EvalPaths(f).systems()] if not RunPaths(f).eval_config.is_file() else []
        out.extend(inside or [f])
    return out


def evaluated_folders(folders) -> bool:
    return all(RunPaths(Path(f)).eval_config.is_file() for f in folders)


def compare_folders(folders, snapshot: Path, console: Console, fmt: str = "terminal"):
    """`omnidr compare A B ...` on system folders written by `omnidr eval`: nothing runs. The folders' kind reads
    them; they need one judge, one task set and one task kind, and each is compared with the first."""
    folders = [Path(f) for f in folders]
    kind = folders_kind(folders)
    got = []
    for f in folders:
        system = kind.read_system(f)
        if isinstance(system, str):
            raise UserError(f"{f}: {system}; run `omnidr eval` for it first{kind.compare_unreadable_hint}")
        got.append(system)
    judges = {g.judge or "" for g in got}
    if len(judges) > 1:
        raise UserError(kind.compare_judges_differ.format(judges=", ".join(sorted(judges))))
    if len({tuple(sorted(g.tasks or [])) for g in got}) > 1:
        raise UserError("the folders were evaluated on different tasks; compare systems run on the same tasks")
    if len({folder_kind(f).name for f in folders}) > 1:
        raise UserError(f"the folders hold {kind.deliveries} of different task kinds; compare folders of one task kind")
    configs = [g.config for g in got if g.config is not None]
    budgets = {c.budget for c in configs}
    if len(budgets) > 1:
        console.print("[yellow]warning: the systems ran under different budgets; the comparison is not "
                      "budget-matched[/yellow]")
    if note := web_policy_note({g.label: g.config.web_policy for g in got if g.config is not None}):
        console.print(f"warning: {note}", style="yellow", soft_wrap=True, markup=False)
    first = got[0].config
    assert first is not None  # a kind's reader gives every system folder of `omnidr eval` its eval.json
    under = ComparedUnder(folders[0].resolve().parent, first.budget,
                          first.budget_label if len(budgets) == 1 else "mixed", judges.pop())
    return kind.compare_systems(got, snapshot, list(first.tasks), under, console, fmt)


def compare_answers(chosen, task_ids, under: "ComparedUnder", console: Console, fmt: str = "terminal"):
    """Answer systems (short or multiple-choice), each paired with the first (A the higher-ranked): accuracy difference (percentage points) with its paired
    task-bootstrap interval and wins/ties/losses, and each task's verdicts; written like a report comparison."""
    from omnidr.scoring import Grid, by_folder, compare_answer_systems, comparisons_grid

    comparisons = [compare_answer_systems(c.system, chosen[0].system, task_ids) for c in chosen[1:]]
    correct = {c.label: {o.task_id: o.correct for o in c.system.outcomes} for c in chosen}
    per_task = {t: {label: 100.0 if got.get(t) else 0.0 for label, got in correct.items()} for t in task_ids}
    name = comparison_name([c.folder.name for c in chosen])
    root, budget_label = under.root, under.budget_label
    files = comparison_files(root, name, comparisons, per_task, under.budget, budget_label, under.judge)
    if refresh_index(root):
        files.append(root / "index.html")
    if _printed_as_files(files, fmt):
        return comparisons, files
    per_task_grid = Grid(f"answers per task (budget: {budget_label})", ["task", *(c.label for c in chosen)],
                         [[t, *("correct" if v else "wrong" for v in row.values())] for t, row in per_task.items()],
                         frozenset(range(1, len(chosen) + 1)))
    grids, legend = by_folder([comparisons_grid(comparisons, "Paired accuracy differences (each system with the "
                                                "first; A the higher-ranked; percentage points; task bootstrap)"),
                               per_task_grid], {c.label: c.folder.name for c in chosen})
    for grid in grids:
        console.print(grid.rich())
    for line in legend:
        console.print(line, soft_wrap=True, markup=False)
    for path in files:
        console.print(f"wrote {path}", soft_wrap=True)
    return comparisons, files


def _printed_as_files(files: list[Path], fmt: str) -> bool:
    """--format json or markdown: the comparison file of that format on stdout, what was written on stderr."""
    if fmt == "terminal":
        return False
    click.echo(files[0 if fmt == "json" else 1].read_text("utf-8").rstrip("\n"))
    for path in files:
        click.echo(f"wrote {path}", err=True)
    return True


MAX_NAME = 200  # bytes of a comparison's file name before `.json`; file systems allow 255 in all


def comparison_name(folders: list[str]) -> str:
    """`A-vs-B-vs-C`, the compared system folders in order; a name too long for a file (a ten-step ladder)
    keeps its first folders and ends with a hash of the whole list, so it stays unique and stable."""
    import hashlib

    name = "-vs-".join(folders)
    if len(name.encode()) <= MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:12]
    kept: list[str] = []
    for folder in folders:
        if len("-vs-".join([*kept, folder, f"and-{len(folders) - len(kept) - 1}-more-{digest}"]).encode()) > MAX_NAME:
            break
        kept.append(folder)
    return "-vs-".join([*kept, f"and-{len(folders) - len(kept)}-more-{digest}"])


@dataclass(frozen=True)
class ComparedUnder:
    """Where a comparison is written (the run root) and what its systems shared: budget and judge."""

    root: Path
    budget: Budget
    budget_label: str  # how the budget was given; `mixed` when the systems ran under different ones
    judge: str  # the judge key of every compared evaluation


def compare_chosen(chosen, snapshot: Path, task_ids, under: ComparedUnder, console: Console, fmt: str = "terminal"):
    from omnidr.scoring import Grid, by_folder, comparisons_grid, paired_comparisons, score_systems, snapshot_trees

    trees, hp = snapshot_trees(snapshot)
    scored = score_systems([f.decisions for f in chosen], trees, hp, task_ids=task_ids)
    extra = {"replicates": hp.bootstrap_replicates} if hp else {}
    comparisons = paired_comparisons(scored, task_ids, [(j, 0) for j in range(1, len(scored))], **extra)
    per_task = {t: {s.system.label: next((r.total for r in s.reports if r.task_id == t), 0.0) for s in scored}
                for t in task_ids}
    name = comparison_name([c.folder.name for c in chosen])
    root, budget_label = under.root, under.budget_label
    files = comparison_files(root, name, comparisons, per_task, under.budget, budget_label, under.judge)
    if refresh_index(root):  # the run root's page lists its comparisons
        files.append(root / "index.html")
    if _printed_as_files(files, fmt):
        return comparisons, files
    folders = {s.system.label: c.folder.name for s, c in zip(scored, chosen, strict=True)}
    per_task_grid = Grid(f"scores per task (budget: {budget_label})", ["task", *(s.system.label for s in scored)],
                         [[t, *(f"{v:.1f}" for v in row.values())] for t, row in per_task.items()],
                         frozenset(range(1, len(scored) + 1)))
    grids, legend = by_folder([comparisons_grid(comparisons), per_task_grid], folders)
    for grid in grids:
        console.print(grid.rich())
    for line in legend:
        console.print(line, soft_wrap=True, markup=False)
    for path in files:
        console.print(f"wrote {path}", soft_wrap=True)
    return comparisons, files
