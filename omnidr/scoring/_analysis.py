"""The paper's analysis tables from a leaderboard and its systems' report scores (App. F).

- Paired comparisons (Tables 5, 21, 22): for each pair of the leaderboard (A minus B with A the
  higher-ranked system, App. F.2), the Avg difference with its paired task-bootstrap interval,
  wins/ties/losses, the differences in success and in the C/R/P dimension means, and each
  system's process medians: steps, wall time and tokens. A system's process median is taken over
  its tasks, one trace per task (its last attempt, the one whose report is scored); with one trace
  per task this is the paper's median of per-task medians (App. F.6-F.7). The pipeline supplies
  the medians, because they come from the trajectories, not from the scores.
- Breakdowns (Tables 4, 18-20, App. F.4): by family (Tables 4 and 19) and subcategory (Table 20),
  successful-report means ("missing or unreadable reports are excluded from this diagnostic view");
  by query form (Table 18), all-task means with failures 0. Each system has a column, and a last
  column pools all systems (Table 4 prints one figure per family): the mean over every successful
  report of every system in the group (all reports, failures 0, for the query form). Whether Table 4
  pools reports or averages system means is not stated; pooling reports is this project's reading.
  Groups with one to five tasks are descriptive only, as the paper says of its subcategories.
- Pass rates (Table 16, App. F.3): every direction's pass rate and the L0-L3 rates of each system, each
  the mean over successful reports of the report's rate ("for each report and direction, the pass rate
  is the number of passed atoms divided by the number of applicable atoms"), a row with the unweighted
  mean over systems (the table's "unweighted arithmetic mean of the configuration-level rates"), and
  a row with the dashboard's pooled-atom rate, "whose denominator weights configurations according to
  their numbers of scored atoms" (Sec. 4.2 quotes both).
- Sensitivity (Table 15): the leaderboard's re-aggregation under other lambda, tau and kappa.
"""

from collections.abc import Mapping, Sequence
from statistics import median

from pydantic import Field

from omnidr.benchmark import Difficulty, direction_inventory

from ._base import ScoringModel
from ._rationale import FAILURE_KINDS
from ._render import Grid, pct_number, pts, sensitivity_grid
from ._tables import Leaderboard, SystemResult, SystemScores

BREAKDOWNS = ("family", "subcategory", "query_form")
TABLE_NAMES = ("paired", "harnesses", *(f"by_{b}" for b in BREAKDOWNS), "directions", "difficulty", "coverage_failures",
               "sensitivity")


class ProcessMedians(ScoringModel):
    """A system's process medians over its tasks (one trace per task)."""

    traces: int = Field(description="Tasks with a trace.")
    steps: float | None = Field(None, description="Median logged entries of the main trajectory (App. F.7).")
    tool_calls: float | None = Field(None, description="Median tool invocations of the main trajectory.")
    tool_errors: float | None = Field(None, description="Median failed tool invocations of the main trajectory.")
    wall_time_s: float | None = Field(None, description="Median wall time of an attempt, seconds.")
    total_tokens: float | None = Field(None, description="Median tokens over the attempt's model requests (the "
                                       "gateway's count when it logged them).")
    runner_tokens: float | None = Field(None, description="Median tokens the harness itself reported: the paper's "
                                        "runner-reported tokens (App. F.6-F.7).")


def _name(row) -> str:
    """A system's label, marked when its row is provisional (some task's score is not final)."""
    return row.label + (" (provisional)" if row.provisional else "")


def _delta(a: float | None, b: float | None, scale: float = 1.0) -> str:
    return "-" if a is None or b is None else f"{scale * (a - b):+.1f}"


def _number(x: float | None, digits: int = 0) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def paired_grid(board: Leaderboard, process: Mapping[str, ProcessMedians] | None = None) -> Grid | None:
    """Tables 5, 21, 22: one row per pair of the leaderboard; None when it has no pair."""
    if not board.comparisons:
        return None
    rows = {r.label: r for r in board.rows}
    process = process or {}
    level = int(round(100 * board.confidence))
    out = []
    for c in board.comparisons:
        a, b = rows[c.a], rows[c.b]
        pa, pb = process.get(c.a), process.get(c.b)
        out.append([
            _name(a), _name(b), f"{c.mean_difference:+.1f}", f"[{c.ci_low:.1f}, {c.ci_high:.1f}]",
            _delta(a.success_rate, b.success_rate, 100), _delta(a.content, b.content),
            _delta(a.citation, b.citation), _delta(a.presentation, b.presentation), f"{c.wins}/{c.ties}/{c.losses}",
            *[f"{_number(getattr(pa, k, None), d)} / {_number(getattr(pb, k, None), d)}"
              for k, d in (("steps", 1), ("wall_time_s", 0), ("total_tokens", 0))],
        ])
    return Grid(
        f"Paired comparisons, A - B, A the higher-ranked ({len(board.task_ids)} tasks; {level}% paired task-bootstrap interval; "
        "C/R/P: means over successful reports; process: medians over tasks, A / B)",
        ["A", "B", "Avg A - B", f"{level}% CI", "Success (pp)", "Content", "Citation", "Presentation", "W/T/L",
         "steps A / B", "time (s) A / B", "tokens A / B"],
        out, frozenset(range(2, 12)))


def _avg(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def harness_grid(board: Leaderboard, process: Mapping[str, ProcessMedians] | None = None) -> Grid | None:
    """Table 22 (App. F.6): harnesses compared on the models they share. Within one setting (capability and
    budget), only the models every harness of the setting was run with count; "quality and success average over
    the matched model runs", and "process columns take the median of the model-level medians". None when no
    setting has two harnesses with a model in common.

    Where the paper is silent (it ran one system per harness and model): a harness with several rows on one model
    in a setting (the gateway translating for one, not for another) counts its native row, else its first."""
    process = process or {}
    settings: dict[tuple[str, str], dict[str, dict[str, SystemResult]]] = {}
    for r in board.rows:
        if r.system.harness:
            by_model = settings.setdefault((r.system.capability, r.system.budget), {}).setdefault(r.system.harness, {})
            kept = by_model.get(r.system.model)
            if kept is None or (kept.system.translation and not r.system.translation):
                by_model[r.system.model] = r
    out = []
    for (capability, budget), harnesses in sorted(settings.items()):
        if len(harnesses) < 2:
            continue
        shared = sorted(set.intersection(*(set(m) for m in harnesses.values())))
        if not shared:
            continue
        for harness in sorted(harnesses):
            runs = [harnesses[harness][m] for m in shared]

            def mid(key: str, runs: list[SystemResult] = runs) -> float | None:
                known = [v for v in (getattr(process.get(r.label), key, None) for r in runs) if v is not None]
                return median(known) if known else None

            success = _avg([r.success_rate for r in runs])
            out.append([" / ".join(p for p in (capability, budget) if p) or "-", harness, str(len(shared)),
                        pts(_avg([r.avg for r in runs])), "-" if success is None else f"{100 * success:.1f}",
                        *[pts(_avg([getattr(r, k) for r in runs])) for k in ("avg_succ", "content", "citation",
                                                                             "presentation")],
                        *[_number(mid(k), d) for k, d in (("steps", 1), ("tool_calls", 1), ("tool_errors", 1),
                                                          ("wall_time_s", 0), ("runner_tokens", 0),
                                                          ("total_tokens", 0))]])
    if not out:
        return None
    return Grid("Harnesses on their shared models (paper Table 22, App. F.6): quality and success are means over the "
                "matched model runs; process columns are the median of the model-level medians, over main "
                "trajectories; runner tokens as each harness reports them, gateway tokens as the gateway counted",
                ["setting", "harness", "models", "Avg", "Success (%)", "Avg succ.", "Content", "Citation",
                 "Presentation", "steps", "tool calls", "tool errors", "time (s)", "runner tokens", "gateway tokens"],
                out, frozenset(range(2, 15)))


SUCCESSFUL_ONLY = {"family": True, "subcategory": True, "query_form": False}
"""App. F.4: which breakdown is a successful-report mean (failures left out) and which an all-task mean."""


def breakdown_grids(board: Leaderboard, systems: Sequence[SystemScores],
                    task_labels: Mapping[str, Mapping[str, str]]) -> dict[str, Grid]:
    """Tables 4, 18-20: one table per family, subcategory and query form (`task_labels`: task id ->
    {"family", "subcategory", "query_form"} -> value), systems in leaderboard order, then all systems."""
    reports = {s.system.label: {r.task_id: r for r in s.reports} for s in systems}
    shown = [r for r in board.rows if r.label in reports]
    labels = [r.label for r in shown]
    grids = {}
    for key in BREAKDOWNS:
        successful = SUCCESSFUL_ONLY[key]
        groups: dict[str, list[str]] = {}
        for task in board.task_ids:
            groups.setdefault(task_labels.get(task, {}).get(key, "unlabelled"), []).append(task)

        def totals(label: str, tasks: list[str], successful: bool = successful) -> list[float]:
            got = [reports[label].get(t) for t in tasks]
            if successful:  # App. F.4: a missing or failed report is left out of this view
                return [r.total for r in got if r is not None and not r.failed]
            return [0.0 if r is None or r.failed else r.total for r in got]

        def mean(values: list[float]) -> str:
            return pts(sum(values) / len(values)) if values else "-"

        rows = [[group, str(len(tasks)), *[mean(totals(x, tasks)) for x in labels],
                 mean([v for x in labels for v in totals(x, tasks)])]
                for group, tasks in sorted(groups.items())]
        name = key.replace("_", " ")
        what = ("successful-report means, failures left out" if successful else "all-task means, failures 0")
        grids[f"by_{key}"] = Grid(
            f"Avg by {name} (points, {what}; paper App. F.4; a group of few tasks is descriptive only)",
            [name, "tasks", *map(_name, shown), "all systems"], rows, frozenset(range(1, 3 + len(labels))))
    return grids


def rate_grids(board: Leaderboard) -> dict[str, Grid]:
    """Table 16 (App. F.3): every direction's pass rate and the L0-L3 rates, per system, then two summary rows: the
    unweighted mean of the configuration-level rates (the table's last row) and the dashboard's pooled-atom rate
    (all systems' passed atoms over all their applicable atoms, which weights a system by its number of scored
    atoms; Sec. 4.2 quotes both)."""
    directions = [d.id for d in direction_inventory().directions]
    levels = list(Difficulty)

    def mean(values: list[float]) -> float | None:
        return sum(values) / len(values) if values else None

    def pooled(counts: list) -> float | None:
        applicable = sum(c.applicable for c in counts)
        return sum(c.passed for c in counts) / applicable if applicable else None

    def table(keys, get, atoms, title, first):
        rows = [[_name(r), *[pct_number(get(r).get(k)) for k in keys]] for r in board.rows]
        if len(board.rows) > 1:
            rows.append(["mean over systems", *[pct_number(mean([get(r)[k] for r in board.rows if k in get(r)]))
                                               for k in keys]])
        rows.append(["pooled atoms, all systems", *[pct_number(pooled([atoms(r)[k] for r in board.rows if k in atoms(r)]))
                                                    for k in keys]])
        return Grid(title, [first, *[k.value if isinstance(k, Difficulty) else k for k in keys]], rows,
                    frozenset(range(1, 1 + len(keys))))

    failures = []
    for label, counts in [(_name(r), r.failed_coverage) for r in board.rows] + [
            ("pooled, all systems", {k: sum(r.failed_coverage.get(k, 0) for r in board.rows) for k in FAILURE_KINDS})]:
        n = sum(counts.get(k, 0) for k in FAILURE_KINDS)
        failures.append([label, str(n), *[pct_number(counts.get(k, 0) / n if n else None) for k in FAILURE_KINDS]])
    return {
        "directions": table(directions, lambda r: r.direction_pass_rates, lambda r: r.direction_atoms,
                            "Direction pass rates (%), mean over successful reports of the report's rate; last rows: "
                            "the unweighted mean over systems and the pooled-atom rate (App. F.3)", "system"),
        "difficulty": table(levels, lambda r: r.difficulty_pass_rates, lambda r: r.difficulty_atoms,
                            "L0-L3 pass rates (%), mean over successful reports of the report's rate; last rows: the "
                            "unweighted mean over systems and the pooled-atom rate (App. F.3)", "system"),
        "coverage_failures": Grid(
            "Failed coverage criteria by the judge's rationale (App. F.3): omission of the audited fact, explicit "
            "contradiction, or neither said (unclassified); over successful reports, shares of the failed criteria",
            ["system", "failed criteria", *(f"{k} (%)" for k in FAILURE_KINDS)], failures, frozenset(range(1, 5))),
    }


def analysis_grids(board: Leaderboard, systems: Sequence[SystemScores], task_labels: Mapping[str, Mapping[str, str]],
                   process: Mapping[str, ProcessMedians] | None = None) -> dict[str, Grid]:
    """Every analysis table, by file name: paired, harnesses (when two harnesses share a model), by_family,
    by_subcategory, by_query_form, directions, difficulty and (when the leaderboard has it) sensitivity."""
    out: dict[str, Grid] = {}
    paired = paired_grid(board, process)
    if paired is not None:
        out["paired"] = paired
    harnesses = harness_grid(board, process)
    if harnesses is not None:
        out["harnesses"] = harnesses
    out.update(breakdown_grids(board, systems, task_labels))
    out.update(rate_grids(board))
    if board.sensitivity is not None:
        out["sensitivity"] = sensitivity_grid(board.sensitivity)
    return out
