"""A run root's results: the systems scored in it, the leaderboard, and the files users open.

A run root (`runs/<snapshot id>/` by default) holds one folder per system (`eval.json`, the
attempts, `evaluation/`). Its leaderboard covers every system there that was scored by the same
judge on the same tasks; the others are listed as left out, never mixed in.
"""

import html
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol, TypeVar

from pydantic import ConfigDict, Field

from omnidr._files import save_figure, write_atomic
from omnidr._records import DiskRecord
from omnidr.attempts import changed_settings
from omnidr.errors import UserError
from omnidr.paths import EVAL_FILE, RESULT_FILES, EvalPaths, RunPaths
from omnidr.scoring import Leaderboard, SystemDecisions, SystemKey
from sandbox.models import Budget, ProviderToolsPolicy, SearchDoor

from ._costs import COST_FIGURE, SystemCost, cost_grid, plot_cost, system_cost
from ._specs import Endpoint, SystemSpec

TABLES_DIR = "tables"


class EvalConfig(DiskRecord):
    """`eval.json` of a system folder: what it was evaluated with. A rerun with other settings is refused."""

    SCHEMA = "omnidr.eval/1"

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    system: SystemSpec = Field(description="Harness, capability and model.")
    judge: Endpoint = Field(description="Judge of the J atoms (no key; only the variable that holds it).")
    budget_label: str = Field(description="How the budget was given (BUDGET=...).")
    budget: Budget = Field(description="Per-attempt budget.")
    tasks: list[str] = Field(description="Task ids evaluated.")
    snapshot_id: str = Field(description="Snapshot id (manifest id when frozen).")
    provider_tools: ProviderToolsPolicy = Field(
        default_factory=lambda: ProviderToolsPolicy.every("deny"),
        description="Provider-side tools policy of its attempts (the web itself is the snapshot's replayed corpus); "
        "an eval.json written before the field existed ran with deny, replay's default.")
    web: Literal["replay", "live", "record"] = Field(
        "replay", description="The web of its attempts: replay (the snapshot's corpus), live (the web through the "
        "logging proxy, denylist applied) or record (live, answers saved as a corpus).")
    search_door: SearchDoor | None = Field(
        None, description="The search provider the research skills queried; None: the snapshot's offline index.")

    @property
    def web_policy(self) -> str:
        """The web the system's agents had, in one phrase (leaderboard notes, compare warnings)."""
        web = {"replay": "replayed corpus", "live": "live web", "record": "live web (recorded)"}[self.web]
        search = f"search door {self.search_door.agent_value()}" if self.search_door else "offline search index"
        return f"{web}, {search}, provider-side tools {self.provider_tools}"


def web_policy_note(policies: dict[str, str]) -> str | None:
    """A warning when systems ran under different web policies (label -> `EvalConfig.web_policy`), else None."""
    if len(set(policies.values())) < 2:
        return None
    return ("the systems ran under different web policies, so their scores are not like for like: "
            + "; ".join(f"{label}: {policy}" for label, policy in policies.items()))


def check_system_folder(folder: Path, config: EvalConfig) -> bool:
    """True when `folder` already holds this configuration, False when it is new; a folder made with
    other settings is refused."""
    path = RunPaths(folder).eval_config
    if not path.is_file():
        return False
    existing = EvalConfig.model_validate_json(path.read_text("utf-8"))
    if existing != config:
        changed, what = changed_settings(existing, config)
        hint = ("re-score it into a new folder with `omnidr archive` + `omnidr rescore`" if changed == ["judge"]
                else "rerun with the original settings to resume")
        raise UserError(f"{folder} was evaluated with other settings ({what}); use another --runs-root, "
                        f"or {hint}")
    return True


def open_system_folder(folder: Path, config: EvalConfig) -> None:
    if not check_system_folder(folder, config):
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(RunPaths(folder).eval_config, config.model_dump_json(indent=2))


def read_eval_config(folder: Path) -> EvalConfig | None:
    path = RunPaths(folder).eval_config
    if not path.is_file():
        return None
    try:
        return EvalConfig.model_validate_json(path.read_text("utf-8"))
    except ValueError:
        return None


class Results(DiskRecord):
    """`leaderboard.json`."""

    SCHEMA = "omnidr.results/1"

    snapshot_id: str
    judge: str = Field(description="Key of the judge every included evaluation came from.")
    generated_at: datetime
    systems: dict[str, str] = Field(description="Leaderboard label -> system folder (relative to the run root).")
    left_out: dict[str, str] = Field(default_factory=dict, description="System folder -> why it is not ranked.")
    incomplete: dict[str, list[str]] = Field(
        default_factory=dict, description="System folder -> tasks whose score is not final (judge atoms skipped, or the "
        "last attempt ended by an outage); those systems' rows are provisional and unranked.")
    leaderboard: Leaderboard = Field(description="The scoring stage's leaderboard.")
    analysis: dict[str, dict] = Field(default_factory=dict, description=(
        "The paper's analysis tables by name (paired, by_family, by_subcategory, by_query_form, directions, "
        "difficulty, sensitivity), each a table of strings (title, headers, rows); also tables/<name>.csv and .md."))
    web_policies: dict[str, str] = Field(default_factory=dict, description=(
        "Leaderboard label -> the web its agents had (replay, provider-side tools policy); rows that differ are "
        "marked in the notes."))
    costs: dict[str, SystemCost] = Field(default_factory=dict, description=(
        "Leaderboard label -> what the system cost in US dollars (agent and judge), None where unpriced."))


@dataclass(frozen=True)
class ScoredSystem:
    """One scored system as the leaderboard, `compare` and `aggregate` take it."""

    label: str
    folder: Path
    decisions: SystemDecisions
    incomplete: list[str] = field(default_factory=list)
    tasks: list[str] | None = None  # the tasks it was evaluated on; None for a bare decisions folder
    config: "EvalConfig | None" = None  # eval.json of an `omnidr eval` system folder
    judge: str | None = None  # key of the judge its evaluations came from


def scored_config(folder: Path) -> "EvalConfig | str":
    """`eval.json` of a system folder of `omnidr eval` whose evaluation summary is written (whatever the kind), or
    a string saying why it cannot be used."""
    config = read_eval_config(folder)
    if config is None:
        return f"no {EVAL_FILE}"
    if not RunPaths(folder).scored:
        return "not scored yet"
    return config


def system_key(config: "EvalConfig") -> SystemKey:
    """The leaderboard's key of the system an `eval.json` describes."""
    return SystemKey(model=config.system.model.name, harness=config.system.harness, capability=config.system.setting,
                     budget=config.budget_label, translation=config.system.translation or "")


def read_system(folder: Path) -> ScoredSystem | str:
    """A scored system folder of `omnidr eval`, or a string saying why it cannot be used."""
    from omnidr.evaluation import read_scored_run

    config = scored_config(folder)
    if isinstance(config, str):
        return config
    summary, evaluations = read_scored_run(RunPaths(folder).evaluation)
    key = system_key(config)
    incomplete = [e.task_id for e in evaluations if e.skipped_atoms or e.incomplete]
    return ScoredSystem(key.label, folder, SystemDecisions(system=key, decisions=[e.decisions() for e in evaluations]),
                        incomplete, list(config.tasks), config, summary.judge.key)


class ScoredFolder(Protocol):
    """A scored system folder as a kind reads it: the tasks it was evaluated on and its judge's key."""

    @property
    def tasks(self) -> list[str] | None: ...

    @property
    def judge(self) -> str | None: ...


Scored = TypeVar("Scored", bound=ScoredFolder)


def collect_scored(root: Path, judge_key: str, task_ids: list[str],
                   read: Callable[[Path], "Scored | str"]) -> tuple[list[Scored], dict[str, str]]:
    """The system folders in `root` that `read` reads (a kind's reader), scored by `judge_key` on `task_ids`, plus
    {folder name: reason} for the rest."""
    found: list[Scored] = []
    left_out: dict[str, str] = {}
    for folder in (s.root for s in EvalPaths(root).systems()):
        got = read(folder)
        if isinstance(got, str):
            left_out[folder.name] = got
        elif sorted(got.tasks or []) != sorted(task_ids):
            left_out[folder.name] = f"evaluated on other tasks ({len(got.tasks or [])})"
        elif got.judge != judge_key:
            left_out[folder.name] = f"scored by another judge ({got.judge})"
        else:
            found.append(got)
    return found, left_out


def collect_systems(root: Path, judge_key: str, task_ids: list[str]) -> tuple[list[ScoredSystem], dict[str, str]]:
    """Every system in `root` scored by `judge_key` on `task_ids`, plus {folder name: reason} for the rest."""
    found, left_out = collect_scored(root, judge_key, task_ids, read_system)
    return distinct_labels(found), left_out


def distinct_labels(found: list[ScoredSystem]) -> list[ScoredSystem]:
    """Two systems with the same model name, harness, capability and budget (say, one model served at
    two endpoints) are told apart by their folder names, so that no leaderboard row hides another."""
    from collections import Counter

    counts = Counter(f.label for f in found)
    names = Counter(f.folder.name for f in found)
    out = []
    for f in found:
        if counts[f.label] > 1:  # by folder name, or with its parent's when the names are alike too
            name = f.folder.name if names[f.folder.name] == 1 else f"{f.folder.parent.name}/{f.folder.name}"
            key = f.decisions.system.model_copy(update={"model": f"{f.decisions.system.model} ({name})"})
            f = replace(f, label=key.label, decisions=f.decisions.model_copy(update={"system": key}))
        out.append(f)
    return out


def primary_task_set(root: Path, task_ids: list[str]) -> list[str]:
    """The task set a run root's leaderboard ranks on: the largest one any of its systems was evaluated
    on (ties: the one more systems share, then this run's). A quick run on a subset of tasks is then
    listed under "left out" instead of displacing the systems evaluated on every task."""
    from collections import Counter

    sets = Counter(tuple(sorted(c.tasks)) for p in root.iterdir() if p.is_dir() and (c := read_eval_config(p)) is not None)
    mine = tuple(sorted(task_ids))
    if not sets:
        return list(task_ids)
    best = max(sets, key=lambda t: (len(t), sets[t], t == mine))
    return list(task_ids) if best == mine else list(best)


def build_results(root: Path, snapshot: Path, snapshot_id: str, judge_key: str, task_ids: list[str],
                  traces: Path | None = None):
    """The leaderboard of the run root (see `collect_systems`) and its analysis tables, or None when
    nothing is scored. `traces`: where the system folders' attempts are, when not in `root` (a rescore
    reads them from the archive)."""
    from omnidr.scoring import (
        analysis_grids,
        build_leaderboard,
        score_systems,
        sensitivity_analysis,
        snapshot_trees,
    )

    found, left_out = collect_systems(root, judge_key, task_ids)
    if not found:
        return None, None
    trees, hp = snapshot_trees(snapshot)
    scored = score_systems([f.decisions for f in found], trees, hp, task_ids=task_ids)
    replicates = hp.bootstrap_replicates if hp else None
    board = build_leaderboard(scored, task_ids, with_comparisons=len(found) > 1,
                              incomplete={f.label: f.incomplete for f in found if f.incomplete},
                              **({"replicates": replicates} if replicates else {}))
    # Table 15 is part of every run root's results (App. F.2)
    board = board.model_copy(update={"sensitivity": sensitivity_analysis([f.decisions for f in found], trees, hp,
                                                                         task_ids=task_ids)})
    process = {f.label: process_medians((traces or root) / f.folder.relative_to(root)) for f in found}
    analysis = analysis_grids(board, scored, task_labels(snapshot), process)
    results = Results(
        snapshot_id=snapshot_id, judge=judge_key, generated_at=datetime.now(UTC),
        systems={f.label: f.folder.relative_to(root).as_posix() for f in found}, left_out=left_out,
        incomplete={f.folder.name: f.incomplete for f in found if f.incomplete}, leaderboard=board,
        analysis={name: grid.as_dict() for name, grid in analysis.items()},
        web_policies={f.label: f.config.web_policy for f in found if f.config is not None},
        costs={f.label: system_cost((traces or root) / f.folder.relative_to(root), *judge_endpoint(f.config))
               for f in found},
    )
    return board, results


def judge_endpoint(config: "EvalConfig | None") -> tuple[str | None, str | None]:
    """The judge model's name and URL of a system folder's eval.json (None, None: offline or unknown)."""
    if config is None or config.judge.offline:
        return None, None
    return config.judge.name, config.judge.base_url


def task_labels(snapshot: Path) -> dict[str, dict[str, str]]:
    """Task id -> family, subcategory and query form, for the breakdown tables."""
    from omnidr.benchmark import open_snapshot

    return {t: {"family": b.task.family.value, "subcategory": b.task.subcategory, "query_form": b.task.query_form.value}
            for t, b in open_snapshot(snapshot).tasks.items() if b.task is not None}


def process_medians(folder: Path):
    """A system's steps, time and tokens: medians over its tasks, one trace per task (App. F.7)."""
    from omnidr.scoring import ProcessMedians
    from omnidr.trajectory import scored_trace_stats, summarize

    stats = scored_trace_stats(folder)
    if not stats:
        return ProcessMedians(traces=0)
    m = summarize(stats).medians
    return ProcessMedians(traces=len(stats), steps=m["steps"], tool_calls=m["tool_calls"], tool_errors=m["tool_errors"],
                          wall_time_s=m["wall_time_s"], total_tokens=m["total_tokens"],
                          runner_tokens=m["harness_total_tokens"])


def write_results(root: Path, board, results: Results) -> list[Path]:
    """leaderboard.json, leaderboard.md, leaderboard.png and index.html in `root`, and the analysis
    tables in `root/tables/` (returned as the folder)."""
    paths = [root / name for name in RESULT_FILES]
    write_atomic(paths[0], results.model_dump_json(indent=2))
    grids = result_grids(board, results)
    md = [f"# OmniDR leaderboard: {results.snapshot_id}", "",
          f"Judge `{results.judge}`; {len(board.task_ids)} tasks; generated {results.generated_at:%Y-%m-%d %H:%M} UTC.", ""]
    for grid in grids:
        md += [grid.markdown(), ""]
    md += _notes(results)
    paths[1].write_text("\n".join(md).rstrip() + "\n", "utf-8")
    plot_scores(board, paths[2], f"{results.snapshot_id}\njudge {results.judge}")
    plot_cost(results.costs, {r.label: r.avg for r in board.rows}, "Avg score (points)", root / COST_FIGURE,
              results.snapshot_id)
    paths[3].write_text(summary_page(board, results, grids, root), "utf-8")
    return [*paths, write_tables(root / TABLES_DIR, results)]


def result_grids(board, results: Results) -> list:
    """The tables of leaderboard.md and index.html: the leaderboard, then the analysis tables."""
    from omnidr.scoring import Grid, leaderboard_grids

    costs = [cost_grid(results.costs, {r.label: r.avg for r in board.rows}, "Avg")] if results.costs else []
    return [leaderboard_grids(board)[0], *costs, *(Grid.from_dict(g) for g in results.analysis.values())]


def write_tables(folder: Path, results: Results) -> Path:
    """tables/<name>.csv and tables/<name>.md for each analysis table of leaderboard.json."""
    from omnidr.scoring import Grid

    write_table_files(folder, {name: Grid.from_dict(data) for name, data in results.analysis.items()})
    return folder


def write_table_files(folder: Path, grids: dict) -> list[Path]:
    """<name>.csv and <name>.md for each table; an analysis table of an earlier run that is no longer
    made (the paired one, when a system left) is removed. No other file of the folder is touched."""
    from omnidr.scoring import TABLE_NAMES

    folder.mkdir(parents=True, exist_ok=True)
    for name in set(TABLE_NAMES) - set(grids):
        for old in (folder / f"{name}.csv", folder / f"{name}.md"):
            old.unlink(missing_ok=True)
    written = []
    for name, grid in grids.items():
        written += [folder / f"{name}.csv", folder / f"{name}.md"]
        written[-2].write_text(grid.csv(), "utf-8")
        written[-1].write_text(grid.markdown() + "\n", "utf-8")
    return written


def _notes(results: Results) -> list[str]:
    lines = []
    for folder, tasks in results.incomplete.items():
        lines.append(f"- {folder}: provisional, not ranked: the scores of {', '.join(tasks)} are not final (the judge "
                     "did not answer for some atoms, or the last attempt was ended by an outage); rerun the same "
                     "command to finish them.")
    for folder, why in results.left_out.items():
        lines.append(f"- left out: {folder} ({why}).")
    if note := web_policy_note(results.web_policies):
        lines.append(f"- {note}.")
    return lines


def plot_scores(board, path: Path, subtitle: str) -> None:
    """Avg per system with its task-bootstrap interval, best first."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    rows = board.rows
    fig, ax = plt.subplots(figsize=(9, 1.9 + 0.55 * len(rows)), dpi=120)
    y = list(range(len(rows)))[::-1]
    avgs = [r.avg for r in rows]
    err = [[r.avg - r.avg_ci_low for r in rows], [r.avg_ci_high - r.avg for r in rows]]
    bars = ax.barh(y, avgs, color=["#B0B0B0" if r.provisional else "#4C72B0" for r in rows], alpha=0.85, height=0.6)
    for bar, r in zip(bars, rows, strict=True):
        if r.provisional:
            bar.set_hatch("//")
    ax.errorbar(avgs, y, xerr=err, fmt="none", ecolor="black", capsize=4, lw=1.2)
    for yi, r in zip(y, rows, strict=True):
        ax.text(min(r.avg_ci_high + 1.5, 101), yi, f"{r.avg:.1f}" + (" provisional" if r.provisional else ""),
                va="center", fontsize=9)
    ax.set_yticks(y, [r.label + (" (provisional)" if r.provisional else "") for r in rows], fontsize=9)
    ax.set_xlim(0, 110)
    ax.set_xlabel(f"Avg score (points), {int(round(100 * board.confidence))}% task-bootstrap interval, "
                  f"{len(board.task_ids)} tasks")
    ax.set_title(f"OmniDR leaderboard\n{subtitle}", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path)


PAGE_STYLE = ("<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse;"
              "margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px}th{background:#f3f3f3}td.r{text-align:right}"
              "img{max-width:100%}code{background:#f6f6f6;padding:1px 4px}</style>")


def grids_html(grids) -> list[str]:
    """Each table as an HTML heading and table (numbers right-aligned)."""
    e = html.escape
    parts = []
    for grid in grids:
        parts.append(f"<h2>{e(grid.title)}</h2><table><tr>" + "".join(f"<th>{e(h)}</th>" for h in grid.headers) + "</tr>")
        for row in grid.rows:
            parts.append("<tr>" + "".join(f"<td{' class=r' if i in grid.right else ''}>{e(c)}</td>"
                                          for i, c in enumerate(row)) + "</tr>")
        parts.append("</table>")
    return parts


def summary_page(board, results: Results, grids, root_dir: Path | None = None) -> str:
    """A static page: the plot, the tables, and links into each system folder."""
    e = html.escape
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>OmniDR leaderboard: {e(results.snapshot_id)}</title>", PAGE_STYLE, "</head><body>",
        f"<h1>OmniDR leaderboard: {e(results.snapshot_id)}</h1>",
        f"<p>Judge <code>{e(results.judge)}</code>; {len(board.task_ids)} tasks; generated "
        f"{results.generated_at:%Y-%m-%d %H:%M} UTC.</p>",
        "<img src='leaderboard.png' alt='Avg score per system with its bootstrap interval'>",
    ]
    if root_dir is not None and (root_dir / COST_FIGURE).is_file():
        parts.append(f"<img src='{COST_FIGURE}' alt='Avg score against cost per task, the Pareto frontier marked'>")
    parts += grids_html(grids)
    if results.analysis:
        parts.append("<p id='tables'>These tables as CSV and Markdown: " + ", ".join(
            f"<a href='{TABLES_DIR}/{e(n)}.csv'>{e(n)}.csv</a> (<a href='{TABLES_DIR}/{e(n)}.md'>md</a>)"
            for n in results.analysis) + ".</p>")
    if root_dir is not None:
        parts += _per_task_table(board, results, root_dir)
    if root_dir is not None:
        parts += _comparisons_section(root_dir)
    parts.append("<h2>Systems</h2><ul>")
    for label, folder in results.systems.items():
        parts.append(f"<li>{e(label)}: <a href='{e(folder)}/evaluation/summary.json'>evaluation</a>, "
                     f"<a href='{e(folder)}/attempts/'>attempts</a> (each attempt has an <code>audit.html</code>)</li>")
    parts.append("</ul>")
    notes = _notes(results)
    if notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{e(n[2:])}</li>" for n in notes) + "</ul>")
    store = root_dir / "mlflow.db" if root_dir is not None else None
    if store is not None and store.is_file():
        parts.append(f"<p>Tracking: <code>{e(str(Path(sys.executable).parent / 'mlflow'))} ui --backend-store-uri "
                     f"sqlite:///{e(str(store))}</code>, then the experiment's runs at http://127.0.0.1:5000.</p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _per_task_table(board, results: Results, root_dir: Path) -> list[str]:
    """Task x system: each report's score with links to the report, its audit page and its evaluation."""
    from omnidr.evaluation import read_scored_run

    e = html.escape
    scored: dict[str, dict] = {}
    for label, folder in results.systems.items():
        try:
            summary, _ = read_scored_run(RunPaths(root_dir / folder).evaluation)
        except UserError:
            continue
        scored[label] = {t.task_id: t for t in summary.tasks}
    labels = [r.label for r in board.rows if r.label in scored]
    if not labels:
        return []
    out = ["<h2>Per task</h2><table id='per-task'><tr><th>task</th>"
           + "".join(f"<th>{e(label)}</th>" for label in labels) + "</tr>"]
    for task_id in board.task_ids:
        cells = []
        for label in labels:
            t, folder = scored[label].get(task_id), results.systems[label]
            if t is None:
                cells.append("<td>-</td>")
                continue
            shown = "not final" if t.incomplete else ("failed" if t.failed else f"{t.total:.1f}")
            links = [f"<a href='{e(folder)}/evaluation/{e(t.evaluation)}'>evaluation</a>"]
            if t.attempt is not None:
                attempt = f"{folder}/attempts/{task_id}/{t.attempt}"
                if not t.failed:
                    links.insert(0, f"<a href='{e(attempt)}/output/report/index.html'>report</a>")
                links.append(f"<a href='{e(attempt)}/audit.html'>audit</a>")
            cells.append(f"<td class=r>{e(shown)}<br><small>{' · '.join(links)}</small></td>")
        out.append(f"<tr><td>{e(task_id)}</td>{''.join(cells)}</tr>")
    out.append("</table>")
    return out


def _comparisons_section(root_dir: Path) -> list[str]:
    """Every comparison `omnidr compare` wrote into the run root: its differences and links to its files."""
    e = html.escape
    files = sorted((root_dir / "comparisons").glob("*.json"))
    if not files:
        return []
    out = ["<h2>Comparisons</h2><p>Each row is A minus B with A the higher-ranked system of the pair (paper App. "
           "F.2), as <code>omnidr compare</code> writes it; the paired differences above read the same way.</p>"
           "<table id='comparisons'><tr><th>comparison</th><th>A</th><th>B</th><th>Δ = A − B</th><th>interval</th>"
           "<th>wins / ties / losses</th><th>budget</th></tr>"]
    for path in files:
        try:
            data = json.loads(path.read_text("utf-8"))
            rows = data["comparisons"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        name = path.stem
        links = (f"<a href='comparisons/{e(path.name)}'>{e(name)}</a>"
                 + (f" (<a href='comparisons/{e(name)}.md'>md</a>)" if path.with_suffix(".md").is_file() else ""))
        for c in rows:
            out.append(f"<tr><td>{links}</td><td>{e(c['a'])}</td><td>{e(c['b'])}</td>"
                       f"<td class=r>{c['mean_difference']:+.1f}</td><td class=r>[{c['ci_low']:.1f}, {c['ci_high']:.1f}]</td>"
                       f"<td class=r>{c['wins']} / {c['ties']} / {c['losses']}</td><td>{e(data.get('budget_label', ''))}</td></tr>")
    out.append("</table>")
    return out


def system_folders(root: Path | None) -> dict[str, str]:
    """Leaderboard label -> system folder name, from the run root's leaderboard.json (empty when it has none)."""
    path = (root or Path()) / RESULT_FILES[0]
    if root is None or not path.is_file():
        return {}
    try:
        return {label: Path(folder).name for label, folder in
                Results.model_validate_json(path.read_text("utf-8")).systems.items()}
    except ValueError:
        return {}


def refresh_index(root: Path) -> bool:
    """Render the run root's index.html again from its leaderboard.json (after a comparison was added);
    False when the root has no leaderboard yet."""
    path = root / RESULT_FILES[0]
    if not path.is_file():
        return False
    try:
        results = Results.model_validate_json(path.read_text("utf-8"))
        board = results.leaderboard
    except ValueError:
        return False
    (root / RESULT_FILES[3]).write_text(summary_page(board, results, result_grids(board, results), root), "utf-8")
    return True


def comparison_files(root: Path, name: str, comparisons, per_task: dict[str, dict[str, float]], budget: Budget,
                     budget_label: str, judge_key: str) -> list[Path]:
    """comparisons/<name>.json and .md: paired differences, per-task scores, and the shared budget."""
    from omnidr.scoring import comparisons_grid

    folder = root / "comparisons"
    folder.mkdir(parents=True, exist_ok=True)
    data = {"judge": judge_key, "budget_label": budget_label, "budget": budget.model_dump(mode="json"),
            "comparisons": [c.model_dump(mode="json") for c in comparisons], "per_task": per_task}
    json_path, md_path = folder / f"{name}.json", folder / f"{name}.md"
    write_atomic(json_path, json.dumps(data, indent=2))
    labels = list(next(iter(per_task.values())).keys()) if per_task else []
    lines = [f"# OmniDR comparison: {name}", "", f"Judge `{judge_key}`; every system ran under the same budget "
             f"({budget_label}): {budget.model_dump_json()}", "", comparisons_grid(comparisons).markdown(), "",
             "**Scores per task**", "", "| task | " + " | ".join(labels) + " |", "| :--- |" + " ---: |" * len(labels)]
    lines += [f"| {t} | " + " | ".join(f"{v:.1f}" for v in row.values()) + " |" for t, row in per_task.items()]
    md_path.write_text("\n".join(lines) + "\n", "utf-8")
    return [json_path, md_path]
