"""Click commands over saved decisions: `aggregate`, `leaderboard`, `na-order`, and the paired
`compare` of decisions folders (reached through `omnidr compare --snapshot`).

They call the scoring stage's pure functions on inputs read by `_inputs`: hand-made decisions and
system folders, and what `omnidr score` and `omnidr eval` write. The main `omnidr` group loads them
on demand (STAGE_COMMANDS in omnidr/cli.py). Bad input raises `UserError`, which `omnidr.cli.main`
turns into one line and exit code 2.
"""

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import click
from rich.console import Console

from omnidr._console import make_console
from omnidr._options import format_option, output_format
from omnidr.benchmark import Hyperparameters
from omnidr.errors import UserError
from omnidr.scoring import (
    DEFAULT_SEED,
    Grid,
    ScoringInputError,
    analysis_grids,
    build_leaderboard,
    by_folder,
    check_na_order,
    compare_systems,
    comparisons_grid,
    leaderboard_grids,
    na_order_grid,
    read_hyperparameters,
    read_rubric,
    report_grids,
    report_notes,
    score_report,
    score_systems,
    sensitivity_analysis,
    snapshot_trees,
)

from ._inputs import read_any_decisions, read_any_score, read_any_systems, recorded_snapshot

_rubric = click.option("--rubric", "rubric_path", required=True, type=click.Path(path_type=Path),
                       help="Omni-ART tree of the task (rubric.json).")
_decisions = click.option("--decisions", "decisions_path", required=True, type=click.Path(path_type=Path),
                          help="Decisions JSON (task_id, decisions: atom id -> pass/fail/na/skipped or "
                               "{outcome, votes, rationale}, optional failure), or an evaluation.json of "
                               "`omnidr score` / `omnidr eval`.")
_hyper = click.option("--hyperparameters", "hyper_path", type=click.Path(path_type=Path), default=None,
                      help="Hyperparameters JSON (lambda, tau, kappa); default: the snapshot's, else the released values.")
_hyper_released = click.option("--hyperparameters", "hyper_path", type=click.Path(path_type=Path), default=None,
                               help="Hyperparameters JSON (lambda, tau, kappa); default: the released values.")
_no_guard = click.option("--no-na-guard", is_flag=True, help="Keep every failed citation atom (no guarded N/A).")
_snapshot = click.option("--snapshot", "snapshot_path", type=click.Path(path_type=Path), default=None,
                         help="Snapshot folder whose rubric trees the decisions were made on (default: the one the "
                              "systems' run.json names; required for hand-made decisions folders).")
_tasks = click.option("--task", "tasks", multiple=True, help="Restrict the task set to this task id (repeatable).")
_replicates = click.option("--replicates", type=click.IntRange(min=1), default=None,
                           help="Task-bootstrap replicates (default: the hyperparameters' value, 20000).")
_seed = click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True, help="Seed of the bootstrap.")
_format = format_option("the results")


def _ranking_options(command):
    """The options `leaderboard` and `compare` share: snapshot, tasks, hyperparameters, guard, bootstrap."""
    for option in reversed((_snapshot, _tasks, _hyper, _no_guard, _replicates, _seed)):
        command = option(command)
    return command


@dataclass(frozen=True)
class Ranking:
    """The ranking options `leaderboard` and `compare` share (`_ranking_options`), passed whole."""

    snapshot_path: Path | None = None  # None: the snapshot the systems' run.json names
    tasks: tuple[str, ...] = ()  # the tasks ranked on; (): those the systems were evaluated on
    hyper_path: Path | None = None  # hyperparameters other than the snapshot's
    no_na_guard: bool = False
    replicates: int | None = None  # bootstrap replicates; None: the hyperparameters'
    seed: int = DEFAULT_SEED

    @classmethod
    def of(cls, options: dict) -> "Ranking":
        """The ranking options by their Click names."""
        return cls(**{name: options[name] for name in cls.__dataclass_fields__})


def _console() -> Console:
    return make_console()


def _emit(grids: list[Grid], fmt: str, notes: Sequence[str] = (), folders: dict[str, Path] | None = None) -> None:
    """Print grids; in the terminal each system is named by its folder (`folders`: label -> folder), with a legend."""
    if fmt == "terminal" and folders:
        grids, legend = by_folder(grids, {label: Path(f).name for label, f in folders.items()})
        notes = [*legend, *notes]
    if fmt == "markdown":
        click.echo("\n\n".join(g.markdown() for g in grids))
        for n in notes:
            click.echo(f"\n{n}")
        return
    out = _console()
    for g in grids:
        out.print(g.rich())
    for n in notes:
        out.print(n, soft_wrap=True, markup=False)


def _dump(model) -> None:
    click.echo(model.model_dump_json(indent=2))


def _hyperparameters(hyper_path: Path | None, fallback: Hyperparameters | None = None) -> Hyperparameters:
    if hyper_path is not None:
        return read_hyperparameters(hyper_path)
    return fallback or Hyperparameters()


@click.command("aggregate", short_help="Score one report from saved atom decisions.")
@_rubric
@_decisions
@_hyper_released
@_no_guard
@format_option("the tables", "json is the ReportScore", legacy_json=True)
def aggregate(rubric_path: Path, decisions_path: Path, hyper_path: Path | None, no_na_guard: bool, fmt: str,
              as_json: bool) -> None:
    """Score one report from its rubric tree and its saved atom decisions (no judge is called).

    Atoms of the tree without a decision are counted as skipped and listed.
    """
    tree = read_rubric(rubric_path)
    decisions = read_any_decisions(decisions_path)
    score = score_report(tree, decisions, _hyperparameters(hyper_path), na_guard=not no_na_guard)
    if (fmt := output_format(fmt, as_json)) == "json":
        _dump(score)
        return
    _emit(report_grids(score), fmt, report_notes(score))


@click.command("na-order", short_help="Check the guarded citation N/A of an evaluation.")
@_rubric
@_decisions
@click.option("--score", "score_path", type=click.Path(path_type=Path), default=None,
              help="Saved ReportScore JSON, or an evaluation.json, to audit (its settings and applied N/A set); "
                   "default: re-run the guard.")
@_hyper_released
@format_option("the check", "json is the check with its `ok`", legacy_json=True)
def na_order(rubric_path: Path, decisions_path: Path, score_path: Path | None, hyper_path: Path | None, fmt: str,
             as_json: bool) -> None:
    """Offline na-order check of a saved evaluation: every applied N/A set satisfies Delta_C > Delta_R,
    and no omitted fact scores above the same fact stated but uncited. Exits 1 on a violation."""
    saved = read_any_score(score_path) if score_path is not None else None
    check = check_na_order(read_rubric(rubric_path), read_any_decisions(decisions_path), saved, _hyperparameters(hyper_path))
    if (fmt := output_format(fmt, as_json)) == "json":
        click.echo(json.dumps({**check.model_dump(mode="json"), "ok": check.ok}, indent=2))
    else:
        notes = [f"violation: {p}" for p in check.problems] or ["na-order check passed"]
        if check.delta_c is not None:
            notes.insert(0, f"applied set: Delta_C {check.delta_c:.4g}, Delta_R {check.delta_r:.4g}")
        _emit([na_order_grid(check)], fmt, notes)
    if not check.ok:
        sys.exit(1)


def snapshot_for(paths, snapshot_path: Path | None) -> Path:
    """--snapshot, else the snapshot the systems' records name."""
    if snapshot_path is not None:
        return Path(snapshot_path)
    recorded = recorded_snapshot(paths)
    if recorded is None:
        read_any_systems(paths)  # a folder that holds no system says so first
        raise UserError("no run.json under the folders given names the snapshot they ran on; pass --snapshot PATH")
    return recorded


def _scored(paths, ranking: Ranking):
    snapshot_path = snapshot_for(paths, ranking.snapshot_path)
    trees, snap_hp = snapshot_trees(snapshot_path)
    hp = _hyperparameters(ranking.hyper_path, snap_hp)
    found = read_any_systems(paths, restrict=bool(ranking.tasks))
    task_ids = list(ranking.tasks) or found.task_ids
    scored = score_systems(found.systems, trees, hp, na_guard=not ranking.no_na_guard, task_ids=task_ids)
    return found, trees, hp, task_ids, scored


def _found_notes(found) -> list[str]:
    notes = [f"left out: {folder} ({why})" for folder, why in found.skipped.items()]
    notes += [f"{label}: provisional, not ranked: {', '.join(tasks)} not final (rerun `omnidr eval` to finish them)"
              for label, tasks in found.incomplete.items()]
    from ._results import read_eval_config, web_policy_note

    configs = {label: config for label, folder in found.folders.items() if (config := read_eval_config(folder))}
    if note := web_policy_note({label: c.web_policy for label, c in configs.items()}):
        notes.append(f"warning: {note}")
    return notes


@click.command("leaderboard", short_help="Rank systems from their saved decisions.")
@click.argument("systems", nargs=-1, required=True, type=click.Path(path_type=Path))
@_ranking_options
@click.option("--pairs", is_flag=True, help="Also compare every pair of systems (paired bootstrap).")
@click.option("--sensitivity", is_flag=True, help="Also re-aggregate under alternative lambda, tau and kappa (Table 15).")
@click.option("--tables", "tables_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Also write the paper's analysis tables (paired, breakdowns, pass rates, sensitivity) as CSV and "
                   "Markdown into this folder, as `omnidr eval` does in a run root's tables/.")
@_format
def leaderboard(systems: tuple[Path, ...], pairs: bool, sensitivity: bool, tables_dir: Path | None, fmt: str,
                **options) -> None:
    """Rank systems over the snapshot's tasks: Avg with task-bootstrap 95% interval, Success,
    Avg succ., Content, Citation, Presentation, pass rates by difficulty and direction.

    SYSTEMS are system folders, or folders of them such as an eval run root (runs/<snapshot id>).
    A system folder is one `omnidr eval` wrote (eval.json, evaluation/), an output folder of
    `omnidr score` (summary.json), or a hand-made folder with system.json ({"model", "harness",
    "capability", "budget"}) and one decisions JSON per task (any other name). A task without
    decisions, or whose decisions set "failure", scores 0 and counts as a failure; a task of an
    eval folder whose score is not final makes that row provisional and unranked.
    """
    ranking = Ranking.of(options)
    snapshot_path = snapshot_for(systems, ranking.snapshot_path)
    found, trees, hp, task_ids, scored = _scored(systems, replace(ranking, snapshot_path=snapshot_path))
    board = build_leaderboard(scored, task_ids or sorted(trees), replicates=ranking.replicates or hp.bootstrap_replicates,
                              seed=ranking.seed, with_comparisons=pairs or tables_dir is not None,
                              incomplete=found.incomplete)
    if sensitivity or tables_dir is not None:
        table = sensitivity_analysis(found.systems, trees, hp, na_guard=not ranking.no_na_guard, task_ids=task_ids)
        board = board.model_copy(update={"sensitivity": table})
    if tables_dir is not None:
        from ._results import process_medians, task_labels, write_table_files

        process = {label: process_medians(folder) for label, folder in found.folders.items()}
        written = write_table_files(tables_dir, analysis_grids(board, scored, task_labels(snapshot_path), process))
        click.echo(f"wrote {len(written) // 2} analysis tables (CSV and Markdown) to {tables_dir}", err=True)
    if fmt == "json":
        _dump(board)
        return
    _emit(leaderboard_grids(board), fmt, _found_notes(found), found.folders)


@click.command("compare", short_help="Compare two systems from their saved decisions.")
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@_ranking_options
@_format
def compare(a: Path, b: Path, fmt: str, **options) -> None:
    """Paired comparison of A and B over the same tasks, read as the higher-ranked minus the other (paper
    App. F.2): mean difference, its task-bootstrap 95% interval (tasks resampled jointly for both) and
    wins/ties/losses per task.

    A and B are system folders (see `omnidr leaderboard --help`).
    """
    compare_two(a, b, Ranking.of(options), fmt)


def compare_two(a: Path, b: Path, ranking: Ranking = Ranking(), fmt: str = "terminal") -> None:
    """The pair of A and B over the same tasks, the higher-ranked minus the other, printed (see `compare`)."""
    found, trees, hp, task_ids, scored = _scored((a, b), ranking)
    if len(scored) != 2:
        raise ScoringInputError(f"A and B must each be one system folder; they hold {len(scored)} systems")
    result = compare_systems(scored[0], scored[1], task_ids or sorted(trees),
                             replicates=ranking.replicates or hp.bootstrap_replicates, seed=ranking.seed)
    if fmt == "json":
        _dump(result)
        return
    _emit([comparisons_grid([result])], fmt, _found_notes(found), found.folders)
CLI_COMMANDS = (aggregate, leaderboard, compare, na_order)
"""The commands, for a test group (the `omnidr` group registers them through STAGE_COMMANDS)."""
