"""A short-answer run root's results (task kind `short_answer`, OpenDS-World): the accuracy leaderboard of the
systems scored in it, its breakdowns and process tables, and the files users open.

The same rules as a report run root's (`_results`): every system folder scored by the same judge on the same
tasks is ranked; the others are listed as left out, never mixed in. The files have the same names
(leaderboard.json, .md, .png, index.html, tables/), so the run root reads the same way whatever its kind.
"""

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from pydantic import Field

from omnidr._files import write_atomic
from omnidr._records import DiskRecord
from omnidr.paths import EVAL_FILE, RESULT_FILES, SUMMARY_FILE
from omnidr.scoring import AnswerLeaderboard, AnswerSystem

from ._results import (
    PAGE_STYLE,
    TABLES_DIR,
    EvalConfig,
    grids_html,
    read_eval_config,
    web_policy_note,
    write_table_files,
)


class AnswerResults(DiskRecord):
    """`leaderboard.json` of a short-answer run root."""

    SCHEMA = "omnidr.answer-results/1"

    snapshot_id: str
    task_kind: str = Field("short_answer", description="The snapshot's task kind.")
    judge: str = Field(description="Key of the answer judge every included evaluation came from.")
    generated_at: datetime
    systems: dict[str, str] = Field(description="Leaderboard label -> system folder (relative to the run root).")
    left_out: dict[str, str] = Field(default_factory=dict, description="System folder -> why it is not ranked.")
    incomplete: dict[str, list[str]] = Field(
        default_factory=dict, description="System folder -> tasks whose verdict is not final (the judge did not "
        "answer, or the last attempt was ended by an outage); those rows are provisional and unranked.")
    leaderboard: AnswerLeaderboard = Field(description="The scoring stage's accuracy leaderboard.")
    tables: dict[str, dict] = Field(default_factory=dict, description=(
        "Every table by name (leaderboard, by_domain, by_modality, by_format, by_access_type, by_duration, "
        "terminations, tool_use, transitions, paired), each title, headers and rows; also tables/<name>.csv, .md."))
    web_policies: dict[str, str] = Field(default_factory=dict, description="Leaderboard label -> the web its agents "
                                         "had; rows that differ are marked in the notes.")


@dataclass(frozen=True)
class ScoredAnswers:
    """One scored short-answer system folder."""

    label: str
    folder: Path
    system: AnswerSystem
    config: EvalConfig
    judge: str
    incomplete: list[str]


def read_answer_system(folder: Path, evaluation: str = "evaluation") -> ScoredAnswers | str:
    """A scored short-answer system folder of `omnidr eval`, or why it cannot be used."""
    from omnidr.errors import UserError
    from omnidr.evaluation import read_answer_run
    from omnidr.scoring import SystemKey

    config = read_eval_config(folder)
    if config is None:
        return f"no {EVAL_FILE}"
    if not (folder / evaluation / SUMMARY_FILE).is_file():
        return "not scored yet"
    try:
        summary, evaluations = read_answer_run(folder / evaluation)
    except UserError as exc:
        return str(exc).split(": ", 1)[-1]
    key = SystemKey(model=config.system.model.name, harness=config.system.harness, capability=config.system.setting,
                    budget=config.budget_label, translation=config.system.translation or "")
    system = AnswerSystem(system=key, outcomes=[e.outcome() for e in evaluations])
    return ScoredAnswers(key.label, folder, system, config, summary.judge.key,
                         [e.task_id for e in evaluations if e.incomplete])


def collect_answer_systems(root: Path, judge_key: str, task_ids: list[str],
                           evaluation: str = "evaluation") -> tuple[list[ScoredAnswers], dict[str, str]]:
    """Every system in `root` scored by `judge_key` on `task_ids`, plus {folder name: reason} for the rest."""
    from collections import Counter

    found, left_out = [], {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and (p / EVAL_FILE).is_file()):
        got = read_answer_system(folder, evaluation)
        if isinstance(got, str):
            left_out[folder.name] = got
        elif sorted(got.config.tasks) != sorted(task_ids):
            left_out[folder.name] = f"evaluated on other tasks ({len(got.config.tasks)})"
        elif got.judge != judge_key:
            left_out[folder.name] = f"scored by another judge ({got.judge})"
        else:
            found.append(got)
    counts = Counter(f.label for f in found)  # two alike systems are told apart by their folder names
    out = []
    for f in found:
        if counts[f.label] > 1:
            key = f.system.system.model_copy(update={"model": f"{f.system.system.model} ({f.folder.name})"})
            f = replace(f, label=key.label, system=f.system.model_copy(update={"system": key}))
        out.append(f)
    return out, left_out


def build_answer_results(root: Path, snapshot: Path, snapshot_id: str, judge_key: str, task_ids: list[str],
                         evaluation: str = "evaluation") -> tuple[AnswerLeaderboard | None, AnswerResults | None]:
    """The accuracy leaderboard of the run root and its tables, or (None, None) when nothing is scored."""
    from omnidr.benchmark import open_snapshot
    from omnidr.scoring import answer_grids, build_answer_leaderboard

    found, left_out = collect_answer_systems(root, judge_key, task_ids, evaluation)
    if not found:
        return None, None
    tasks = [b.question for b in open_snapshot(snapshot).tasks.values() if b.question is not None]
    board = build_answer_leaderboard([f.system for f in found], tasks, task_ids, with_comparisons=len(found) > 1)
    results = AnswerResults(
        snapshot_id=snapshot_id, judge=judge_key, generated_at=datetime.now(UTC),
        systems={f.label: f.folder.relative_to(root).as_posix() for f in found}, left_out=left_out,
        incomplete={f.folder.name: f.incomplete for f in found if f.incomplete}, leaderboard=board,
        tables={name: grid.as_dict() for name, grid in answer_grids(board).items()},
        web_policies={f.label: f.config.web_policy for f in found},
    )
    return board, results


def _notes(results: AnswerResults) -> list[str]:
    lines = [f"- {folder}: provisional, not ranked: the verdicts of {', '.join(tasks)} are not final (the judge did "
             "not answer, or the last attempt was ended by an outage); rerun the same command to finish them."
             for folder, tasks in results.incomplete.items()]
    lines += [f"- left out: {folder} ({why})." for folder, why in results.left_out.items()]
    if note := web_policy_note(results.web_policies):
        lines.append(f"- {note}.")
    return lines


def write_answer_results(root: Path, board: AnswerLeaderboard, results: AnswerResults) -> list[Path]:
    """leaderboard.json, leaderboard.md, leaderboard.png and index.html in `root`, and the tables in `root/tables/`
    (returned as the folder)."""
    import html

    from omnidr.scoring import Grid

    paths = [root / name for name in RESULT_FILES]
    write_atomic(paths[0], results.model_dump_json(indent=2))
    grids = [Grid.from_dict(g) for g in results.tables.values()]
    head = (f"Judge `{results.judge}`; {len(board.task_ids)} tasks; accuracy in % with its "
            f"{round(100 * board.confidence)}% task-bootstrap interval; generated {results.generated_at:%Y-%m-%d %H:%M} UTC.")
    md = [f"# Short-answer leaderboard: {results.snapshot_id}", "", head, ""]
    for grid in grids:
        md += [grid.markdown(), ""]
    md += _notes(results)
    write_atomic(paths[1], "\n".join(md).rstrip() + "\n")
    plot_accuracy(board, paths[2], f"{results.snapshot_id}, judge {results.judge}")
    e = html.escape
    page = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>",
            f"<title>Short-answer leaderboard: {e(results.snapshot_id)}</title>", PAGE_STYLE, "</head><body>",
            f"<h1>Short-answer leaderboard: {e(results.snapshot_id)}</h1>", f"<p>{e(head)}</p>",
            "<img src='leaderboard.png' alt='Accuracy per system with its bootstrap interval'>", *grids_html(grids),
            "<h2>Systems</h2><ul>"]
    page += [f"<li>{e(label)}: <a href='{e(folder)}/evaluation/summary.json'>evaluation</a>, <a href='{e(folder)}/"
             "attempts/'>attempts</a> (each attempt has an <code>audit.html</code>)</li>"
             for label, folder in results.systems.items()]
    page.append("</ul>")
    if notes := _notes(results):
        page.append("<h2>Notes</h2><ul>" + "".join(f"<li>{e(n[2:])}</li>" for n in notes) + "</ul>")
    page.append("</body></html>")
    write_atomic(paths[3], "\n".join(page) + "\n")
    write_table_files(root / TABLES_DIR, {name: Grid.from_dict(g) for name, g in results.tables.items()})
    return [*paths, root / TABLES_DIR]


def plot_accuracy(board: AnswerLeaderboard, path: Path, subtitle: str) -> None:
    """Accuracy per system with its task-bootstrap interval, best first."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    rows = board.rows
    fig, ax = plt.subplots(figsize=(9, 1.9 + 0.55 * len(rows)), dpi=120)
    y = list(range(len(rows)))[::-1]
    acc = [r.accuracy for r in rows]
    err = [[r.accuracy - r.accuracy_ci_low for r in rows], [r.accuracy_ci_high - r.accuracy for r in rows]]
    ax.barh(y, acc, color=["#B0B0B0" if r.provisional else "#55A868" for r in rows], alpha=0.85, height=0.6)
    ax.errorbar(acc, y, xerr=err, fmt="none", ecolor="black", capsize=4, lw=1.2)
    for yi, r in zip(y, rows, strict=True):
        ax.text(min(r.accuracy_ci_high + 1.5, 101), yi, f"{r.accuracy:.1f}% ({r.correct}/{r.tasks})", va="center",
                fontsize=9)
    ax.set_yticks(y, [r.label + (" (provisional)" if r.provisional else "") for r in rows], fontsize=9)
    ax.set_xlim(0, 115)
    ax.set_xlabel(f"Accuracy (%), {round(100 * board.confidence)}% task-bootstrap interval, {len(board.task_ids)} tasks")
    ax.set_title(f"Short-answer leaderboard\n{subtitle}", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    tmp = path.with_name(path.name + ".tmp")
    fig.savefig(tmp, format="png")
    plt.close(fig)
    tmp.replace(path)
