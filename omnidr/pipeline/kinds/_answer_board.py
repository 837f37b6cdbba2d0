"""A run root's results for answer tasks: short answers (task kind `short_answer`, OpenDS-World) and multiple-choice
questions (task kind `mcq`, VideoOdyssey): the accuracy leaderboard of the systems scored in it, its breakdowns and
process tables, and the files users open.

A multiple-choice run root also gets the input-setting ablations (paper 004, App. D.2, F.1) over the systems of the
direct harness, whose folders are named `direct-<MODALITY>-<NNN>f-<WINDOW>-<model slug>` (`InputSetting.label` in
the middle): a modality table (video, video+subtitles, video+audio, video+subtitles+audio; Fig. 10) when two or
more modalities were run, and a window table (full, cw-frames, cw-rate, then accuracy by CCL bin per window; Sec.
4.3, Fig. 5) when two or more windows were; and leaderboard.png is the accuracy by CCL bin, one line per system,
with the chance level (Fig. 4).

The same rules as a report run root's (`_results`): every system folder scored by the same judge on the same
tasks is ranked; the others are listed as left out, never mixed in. The files have the same names
(leaderboard.json, .md, .png, index.html, tables/), so the run root reads the same way whatever its kind.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from pydantic import Field

from omnidr._files import save_figure, write_atomic
from omnidr._records import DiskRecord
from omnidr.benchmark import CCL_BINS, InputSetting
from omnidr.paths import RESULT_FILES, RunPaths
from omnidr.scoring import AnswerLeaderboard, AnswerSystem, AnswerSystemResult, Grid, pts
from sandbox.models import MODALITIES, WINDOW_MODES

from .._costs import COST_FIGURE, SystemCost, cost_grid, plot_cost, system_cost
from .._results import (
    PAGE_STYLE,
    TABLES_DIR,
    EvalConfig,
    collect_scored,
    grids_html,
    judge_endpoint,
    scored_config,
    system_key,
    web_policy_note,
    write_table_files,
)


class AnswerResults(DiskRecord):
    """`leaderboard.json` of a run root of answer tasks (short-answer or multiple-choice)."""

    SCHEMA = "omnidr.answer-results/1"

    snapshot_id: str
    task_kind: str = Field("short_answer", description="The snapshot's task kind (`short_answer` or `mcq`).")
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
        "terminations, tool_use, transitions, paired; for mcq: leaderboard, by_subset, by_task_type, by_dimension, "
        "by_domain, by_audio_type, by_duration, by_ccl_bin, subsets, lovo, paired and the ablations ablation_modality, ablation_window, "
        "ablation_window_ccl when they apply), each title, headers and rows; also tables/<name>.csv, .md."))
    web_policies: dict[str, str] = Field(default_factory=dict, description="Leaderboard label -> the web its agents "
                                         "had; rows that differ are marked in the notes.")
    costs: dict[str, SystemCost] = Field(default_factory=dict, description=(
        "Leaderboard label -> what the system cost in US dollars (agent and judge), None where unpriced; its "
        "table is `cost`."))


@dataclass(frozen=True)
class ScoredAnswers:
    """One scored system folder of answer tasks."""

    label: str
    folder: Path
    system: AnswerSystem
    config: EvalConfig
    judge: str
    incomplete: list[str]
    task_kind: str = "short_answer"
    snapshot: str = ""  # the snapshot folder the scoring read (summary.json)

    @property
    def tasks(self) -> list[str]:
        """The tasks it was evaluated on."""
        return list(self.config.tasks)


def read_answer_system(folder: Path) -> ScoredAnswers | str:
    """A scored system folder of answer tasks of `omnidr eval`, or why it cannot be used."""
    from omnidr.errors import UserError
    from omnidr.evaluation import read_answer_run

    config = scored_config(folder)
    if isinstance(config, str):
        return config
    try:
        summary, evaluations = read_answer_run(RunPaths(folder).evaluation)
    except UserError as exc:
        return str(exc).split(": ", 1)[-1]
    key = system_key(config)
    system = AnswerSystem(system=key, outcomes=[e.outcome() for e in evaluations])
    return ScoredAnswers(key.label, folder, system, config, summary.judge.key,
                         [e.task_id for e in evaluations if e.incomplete], summary.task_kind.value, summary.snapshot)


def collect_answer_systems(root: Path, judge_key: str, task_ids: list[str]) -> tuple[list[ScoredAnswers], dict[str, str]]:
    """Every system in `root` scored by `judge_key` on `task_ids`, plus {folder name: reason} for the rest."""
    from collections import Counter

    found, left_out = collect_scored(root, judge_key, task_ids, read_answer_system)
    counts = Counter(f.label for f in found)  # two alike systems are told apart by their folder names
    out = []
    for f in found:
        if counts[f.label] > 1:
            key = f.system.system.model_copy(update={"model": f"{f.system.system.model} ({f.folder.name})"})
            f = replace(f, label=key.label, system=f.system.model_copy(update={"system": key}))
        out.append(f)
    return out, left_out


def build_answer_results(root: Path, snapshot: Path, snapshot_id: str, judge_key: str,
                         task_ids: list[str]) -> tuple[AnswerLeaderboard | None, AnswerResults | None]:
    """The accuracy leaderboard of the run root and its tables, or (None, None) when nothing is scored."""
    from omnidr.scoring import answer_grids

    found, left_out = collect_answer_systems(root, judge_key, task_ids)
    if not found:
        return None, None
    board = answer_board(found, snapshot, task_ids, with_comparisons=len(found) > 1)
    tables = {name: grid.as_dict() for name, grid in answer_grids(board).items()}
    if board.task_kind == "mcq":
        tables.update({name: grid.as_dict() for name, grid in
                       ablation_grids(board, {f.label: f.folder.name for f in found}).items()})
    costs = {f.label: system_cost(f.folder, *judge_endpoint(f.config)) for f in found}
    tables["cost"] = cost_grid(costs, {r.label: r.accuracy for r in board.rows}, "Accuracy (%)").as_dict()
    results = AnswerResults(
        snapshot_id=snapshot_id, task_kind=board.task_kind, judge=judge_key, generated_at=datetime.now(UTC),
        systems={f.label: f.folder.relative_to(root).as_posix() for f in found}, left_out=left_out,
        incomplete={f.folder.name: f.incomplete for f in found if f.incomplete}, leaderboard=board, tables=tables,
        web_policies={f.label: f.config.web_policy for f in found}, costs=costs,
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

    paths = [root / name for name in RESULT_FILES]
    write_atomic(paths[0], results.model_dump_json(indent=2))
    grids = [Grid.from_dict(g) for g in results.tables.values()]
    mcq = board.task_kind == "mcq"
    name = "Multiple-choice" if mcq else "Short-answer"
    if mcq:
        head = (f"Checked by `{results.judge}` (the option read from each answer against the key); "
                f"{len(board.task_ids)} questions; accuracy in % with its {round(100 * board.confidence)}% "
                f"task-bootstrap interval; chance level {board.chance_accuracy:g}%; generated "
                f"{results.generated_at:%Y-%m-%d %H:%M} UTC.")
    else:
        head = (f"Judge `{results.judge}`; {len(board.task_ids)} tasks; accuracy in % with its "
                f"{round(100 * board.confidence)}% task-bootstrap interval; generated "
                f"{results.generated_at:%Y-%m-%d %H:%M} UTC.")
    md = [f"# {name} leaderboard: {results.snapshot_id}", "", head, ""]
    for grid in grids:
        md += [grid.markdown(), ""]
    md += _notes(results)
    write_atomic(paths[1], "\n".join(md).rstrip() + "\n")
    if mcq:
        plot_accuracy_by_ccl(board, paths[2], results.snapshot_id)
        alt = "Accuracy by continuous certificate length, one line per system, with the chance level"
    else:
        plot_accuracy(board, paths[2], f"{results.snapshot_id}, judge {results.judge}")
        alt = "Accuracy per system with its bootstrap interval"
    priced = plot_cost(results.costs, {r.label: r.accuracy for r in board.rows}, "Accuracy (%)", root / COST_FIGURE,
                       results.snapshot_id)
    e = html.escape
    page = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>",
            f"<title>{name} leaderboard: {e(results.snapshot_id)}</title>", PAGE_STYLE, "</head><body>",
            f"<h1>{name} leaderboard: {e(results.snapshot_id)}</h1>", f"<p>{e(head)}</p>",
            f"<img src='leaderboard.png' alt='{alt}'>",
            *([f"<img src='{COST_FIGURE}' alt='Accuracy against cost per task, the Pareto frontier marked'>"]
              if priced else []),
            *grids_html(grids),
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
    save_figure(fig, path)


def answer_board(found: list[ScoredAnswers], snapshot: Path, task_ids: list[str],
                 with_comparisons: bool = False) -> AnswerLeaderboard:
    """The accuracy leaderboard of scored answer systems over `task_ids`, with the snapshot's task labels (and, for
    multiple choice, its videos)."""
    from omnidr.benchmark import TaskFormat, open_snapshot
    from omnidr.scoring import build_answer_leaderboard

    snap = open_snapshot(snapshot)
    systems = [f.system for f in found]
    if snap.kind is TaskFormat.mcq:
        questions = [b.mcq for b in snap.tasks.values() if b.mcq is not None]
        return build_answer_leaderboard(systems, questions, task_ids, videos=snap.videos,
                                        with_comparisons=with_comparisons)
    tasks = [b.question for b in snap.tasks.values() if b.question is not None]
    return build_answer_leaderboard(systems, tasks, task_ids, with_comparisons=with_comparisons)


# ------------------------------------------------------------------------------------------------
# multiple choice: the input-setting ablations and the chart by CCL bin (paper 004)

DIRECT_PREFIX = "direct-"
"""How the folder of a direct-harness system starts: `direct-<InputSetting.label>-<model slug>`."""

_DIRECT = re.compile(
    rf"^{DIRECT_PREFIX}(?P<modality>{'|'.join(map(re.escape, sorted(MODALITIES, key=len, reverse=True)))})"
    rf"-(?P<frames>\d+)f-(?P<window>{'|'.join(map(re.escape, sorted(WINDOW_MODES, key=len, reverse=True)))})"
    rf"-(?P<model>.+)$")


@dataclass(frozen=True)
class DirectSystem:
    """A direct-harness system as its folder names it: its input setting and model."""

    setting: InputSetting
    model: str


def parse_direct_label(name: str) -> DirectSystem | None:
    """`direct-video+subtitles-64f-full-scripted` as its setting and model; None for any other name."""
    m = _DIRECT.match(name)
    if m is None:
        return None
    return DirectSystem(InputSetting(modality=m["modality"], frames=int(m["frames"]), window=m["window"]),
                        m["model"])


def _cell(row: AnswerSystemResult | None, accuracy: float | None = None) -> str:
    if row is None:
        return "-"
    value = row.accuracy if accuracy is None else accuracy
    return pts(value) + ("*" if row.provisional else "")


def ablation_grids(board: AnswerLeaderboard, folders: Mapping[str, str]) -> dict[str, Grid]:
    """The input-setting ablations of a multiple-choice board over its direct-harness systems (`folders`: row label
    -> system folder name; a row is read by its folder name, else its label):

    - ablation_modality (App. D.2, Fig. 10): one row per model, frame budget and window, one column per modality;
      when the systems cover two or more modalities;
    - ablation_window (Sec. 4.3, App. F.1, Fig. 5): one row per model, modality and frame budget, one column per
      window (full, cw-frames, cw-rate), and ablation_window_ccl, accuracy by CCL bin per window; when the systems
      cover two or more windows.

    Accuracy in percent; `*` marks a provisional row. No grid when an axis has a single setting."""
    parsed: list[tuple[DirectSystem, AnswerSystemResult]] = []
    for row in board.rows:
        direct = parse_direct_label(folders.get(row.label, row.label)) or parse_direct_label(row.label)
        if direct is not None:
            parsed.append((direct, row))
    out: dict[str, Grid] = {}
    if len({d.setting.modality for d, _ in parsed}) >= 2:
        cells: dict[tuple[str, int, str], dict[str, AnswerSystemResult]] = {}
        for d, row in parsed:
            cells.setdefault((d.model, d.setting.frames, d.setting.window), {})[d.setting.modality] = row
        rows = [[model, str(frames), window, *(_cell(by.get(m)) for m in MODALITIES)]
                for (model, frames, window), by in sorted(cells.items())]
        out["ablation_modality"] = Grid("Accuracy (%) by input modality (paper 004, App. D.2)",
                                        ["model", "frames", "window", *MODALITIES], rows,
                                        frozenset(range(3, 3 + len(MODALITIES))) | {1})
    if len({d.setting.window for d, _ in parsed}) >= 2:
        by_window: dict[tuple[str, str, int], dict[str, AnswerSystemResult]] = {}
        for d, row in parsed:
            by_window.setdefault((d.model, d.setting.modality, d.setting.frames), {})[d.setting.window] = row
        rows = [[model, modality, str(frames), *(_cell(by.get(w)) for w in WINDOW_MODES)]
                for (model, modality, frames), by in sorted(by_window.items())]
        out["ablation_window"] = Grid("Accuracy (%) by window: the full video or the certificate window with matched "
                                      "frames (cw-frames) or matched rate (cw-rate) (paper 004, Sec. 4.3, App. F.1)",
                                      ["model", "modality", "frames", *WINDOW_MODES], rows,
                                      frozenset(range(3, 3 + len(WINDOW_MODES))) | {2})
        bins = [label for label, _ in CCL_BINS]
        ccl_rows = []
        for (model, modality, frames), by in sorted(by_window.items()):
            for window in WINDOW_MODES:
                if (found := by.get(window)) is not None:
                    groups = {g.group: g.accuracy for g in found.breakdowns.get("ccl_bin", [])}
                    ccl_rows.append([model, modality, str(frames), window,
                                     *(pts(groups.get(b)) + ("*" if found.provisional else "") for b in bins)])
        out["ablation_window_ccl"] = Grid("Accuracy (%) by CCL bin (minutes) and window (paper 004, Fig. 5)",
                                          ["model", "modality", "frames", "window", *bins], ccl_rows,
                                          frozenset(range(4, 4 + len(bins))) | {2})
    return out


def ccl_grid(board: AnswerLeaderboard) -> Grid:
    """Accuracy by CCL bin, one row per system (the chart's numbers; paper 004, Fig. 4)."""
    bins = [label for label, _ in CCL_BINS]
    rows = []
    for r in board.rows:
        groups = {g.group: g for g in r.breakdowns.get("ccl_bin", [])}
        rows.append([r.label + (" (provisional)" if r.provisional else ""), _cell(r),
                     *(pts(groups[b].accuracy) if b in groups else "-" for b in bins)])
    counts = {g.group: g.tasks for g in (board.rows[0].breakdowns.get("ccl_bin", []) if board.rows else [])}
    chance = f"; chance {board.chance_accuracy:g}%" if board.chance_accuracy is not None else ""
    return Grid(f"Accuracy (%) by continuous certificate length{chance}", ["system", "overall",
                *(f"{b} min ({counts.get(b, 0)})" for b in bins)], rows, frozenset(range(1, 2 + len(bins))))


def print_answer_board(board: AnswerLeaderboard, console) -> None:
    """The answer leaderboard on the console, as `omnidr eval` ends: the accuracy table and, for short answers, the
    breakdowns and terminations; for multiple choice, the per-subset accuracy beside the official scorer's, accuracy
    by CCL bin per system, the other breakdowns and the leave-one-video-out table."""
    from omnidr.scoring import answer_grids

    grids = answer_grids(board)
    if board.task_kind == "mcq":
        names = ["leaderboard", "subsets", *(f"by_{b}" for b in board.breakdowns if b != "ccl_bin"), "lovo"]
        for name in names:
            console.print(grids[name].rich())
        console.print(ccl_grid(board).rich())
        return
    for name in ("leaderboard", *(f"by_{b}" for b in board.breakdowns), "terminations"):
        if name in grids:  # a breakdown the tasks carry no labels for (difficulty) has no table
            console.print(grids[name].rich())


def plot_accuracy_by_ccl(board: AnswerLeaderboard, path: Path, subtitle: str) -> None:
    """Accuracy by CCL bin, one line per system, with the chance level as a dashed line (paper 004, Fig. 4). A bin
    with no question leaves a gap in the lines."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    bins = [label for label, _ in CCL_BINS]
    fig, ax = plt.subplots(figsize=(9, 5), dpi=120)
    x = list(range(len(bins)))
    for r in board.rows:
        groups = {g.group: g.accuracy for g in r.breakdowns.get("ccl_bin", [])}
        y = [float(v) if (v := groups.get(b)) is not None else float("nan") for b in bins]
        ax.plot(x, y, marker="o", lw=1.6, ls="--" if r.provisional else "-",
                label=r.label + (" (provisional)" if r.provisional else ""))
    if board.chance_accuracy is not None:
        ax.axhline(board.chance_accuracy, color="grey", ls=":", lw=1.4, label=f"chance ({board.chance_accuracy:g}%)")
    counts = {g.group: g.tasks for g in (board.rows[0].breakdowns.get("ccl_bin", []) if board.rows else [])}
    ax.set_xticks(x, [f"{b}\n({counts.get(b, 0)} q.)" for b in bins], fontsize=9)
    ax.set_xlabel("Continuous certificate length (minutes)")
    ax.set_ylabel("Accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"Accuracy by continuous certificate length\n{subtitle}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    save_figure(fig, path)
