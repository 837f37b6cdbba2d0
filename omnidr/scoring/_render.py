"""Tables of scoring results for the terminal (rich) and as Markdown. JSON output is the model dump."""

import csv
import io
from dataclasses import dataclass, field

from rich.table import Table

from omnidr._console import Fitted
from omnidr.benchmark import Difficulty, direction_inventory

from ._na_order import NaOrderCheck
from ._report_models import ReportScore
from ._tables import Leaderboard, PairedComparison, Sensitivity

# Pass-rate columns shown in the tables (all directions are in the JSON output).
SHOWN_DIRECTIONS = ("C-FC", "C-CA", "C-CMP", "C-VF", "C-LC", "R-CS")


@dataclass
class Grid:
    """A titled table of strings that renders to rich or to Markdown."""

    title: str
    headers: list[str]
    rows: list[list[str]]
    right: frozenset[int] = frozenset()  # right-aligned column indices
    short: dict[str, str] = field(default_factory=dict)  # header -> its short label, for a narrow terminal (a legend says)

    def rich(self) -> Fitted:
        """The grid for a console: laid out in the width it is printed at, ids and numbers never broken (a block
        per row when the width is too small for the grid)."""
        return Fitted(self.table, short=self.short)

    def table(self) -> Table:
        table = Table(title=self.title)
        for i, h in enumerate(self.headers):
            table.add_column(h, justify="right" if i in self.right else "left", overflow="fold")
        for row in self.rows:
            table.add_row(*row)
        return table

    def csv(self) -> str:
        """The table as CSV: a header row, then the rows (the title is the file's name, not a row)."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(self.headers)
        writer.writerows(self.rows)
        return buffer.getvalue()

    def as_dict(self) -> dict:
        return {"title": self.title, "headers": self.headers, "rows": self.rows, "right": sorted(self.right)}

    @classmethod
    def from_dict(cls, data: dict) -> "Grid":
        return cls(data["title"], list(data["headers"]), [list(r) for r in data["rows"]], frozenset(data["right"]))

    def markdown(self) -> str:
        align = ["---:" if i in self.right else ":---" for i in range(len(self.headers))]
        lines = [f"**{self.title}**", "", "| " + " | ".join(self.headers) + " |", "| " + " | ".join(align) + " |"]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in self.rows]
        return "\n".join(lines)


def by_folder(grids: list[Grid], folders: dict[str, str]) -> tuple[list[Grid], list[str]]:
    """The grids with each system named by its folder (`folders`: label -> folder name), the name a user passes
    to every command, and a legend line per system that says which label (model / harness / capability /
    budget) the folder holds. Unchanged when the folder names are not distinct."""
    folders = {label: name for label, name in folders.items() if name != label}
    if not folders or len(set(folders.values())) < len(folders):
        return grids, []

    def rename(cell: str) -> str:
        for label, name in folders.items():
            if cell == label or cell.startswith(label + " ("):
                return name + cell[len(label):]
        return cell

    def title(text: str) -> str:
        for label, name in folders.items():
            text = text.replace(label, name)
        return text

    renamed = [Grid(title(g.title), [rename(h) for h in g.headers], [[rename(c) for c in row] for row in g.rows], g.right,
                    g.short) for g in grids]
    return renamed, [f"system {name}: {label}" for label, name in folders.items()]


def pts(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def pct_number(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def report_grids(score: ReportScore) -> list[Grid]:
    """Directions, then dimensions and the total of one report."""
    if score.failed:
        return [Grid(f"{score.task_id}: report failed ({score.failure_reason}); score 0.0",
                     ["total"], [["0.0"]], frozenset({0}))]
    rows = []
    for d in score.directions:
        gate = "-" if d.gate_passed is None else ("ok" if d.gate_passed else "FAIL")
        rows.append([d.direction, d.dimension.value, f"{d.passed}/{d.applicable}", pct(d.rate), pct(d.credited),
                     "-" if d.weight is None else str(d.weight), gate,
                     str(d.judged_na + d.guard_na), str(d.skipped)])
    directions = Grid(f"{score.task_id}: directions", ["direction", "dim", "passed", "rate", "credited", "weight",
                      "gate", "N/A", "skip"], rows, frozenset(range(2, 9)))
    dims = [[k.value, pts(v.score), f"{v.weight:g}", str(v.directions), str(v.applicable)]
            for k, v in score.dimensions.items()]
    dims.append(["total", pts(score.total), "", "", ""])
    dimensions = Grid(f"{score.task_id}: score", ["dimension", "points", "lambda", "directions", "atoms"], dims,
                      frozenset(range(1, 5)))
    return [directions, dimensions]


def report_notes(score: ReportScore) -> list[str]:
    """One-line notes under a report's tables: the guard and the skipped atoms."""
    notes = []
    g = score.na_guard
    if g is not None:
        if not g.enabled:
            notes.append(f"N/A guard: off ({g.candidates} candidate(s) kept as fail)")
        elif g.candidates:
            reading = f"; Delta_C {g.delta_c:.4g} > Delta_R {g.delta_r:.4g}" if g.delta_c is not None else ""
            applied = f" [{', '.join(g.applied_atoms)}]" if g.applied_atoms else ""
            notes.append(f"N/A guard: {g.candidates} candidate(s), {g.applied} applied{applied}, "
                         f"{g.retracted} retracted{reading}")
        else:
            notes.append("N/A guard: no candidate")
    if score.skipped:
        line = f"skipped: {score.skipped} atom(s) not scored"
        if score.missing_decisions:
            shown = ", ".join(score.missing_decisions[:10]) + (" ..." if len(score.missing_decisions) > 10 else "")
            line += f", of which {len(score.missing_decisions)} without a decision: {shown}"
        notes.append(line)
    return notes


def leaderboard_grids(board: Leaderboard) -> list[Grid]:
    level = int(round(100 * board.confidence))
    main = Grid(
        f"Leaderboard: {len(board.task_ids)} tasks, {board.replicates} bootstrap replicates (seed {board.seed})",
        ["#", "system", "Avg", f"{level}% CI", "Success", "Avg succ.", "Content", "Citation", "Presentation"],
        [[str(r.rank) if r.rank is not None else "-", r.label + (" (provisional)" if r.provisional else ""),
          pts(r.avg) + ("*" if r.provisional else ""), f"[{r.avg_ci_low:.1f}, {r.avg_ci_high:.1f}]",
          pct(r.success_rate), pts(r.avg_succ), pts(r.content), pts(r.citation), pts(r.presentation)]
         for r in board.rows],
        frozenset({0, 2, 3, 4, 5, 6, 7, 8}),
        short={"Presentation": "P", "Content": "C", "Citation": "R", "Avg succ.": "AvgS", "Success": "Succ."},
    )
    total = len(direction_inventory().directions)
    rates = Grid(
        f"Pass rates (%) on successful reports, mean of per-report rates ({len(SHOWN_DIRECTIONS)} of {total} "
        "directions shown; all of them in leaderboard.json)",
        ["system", *[lv.value for lv in Difficulty], *SHOWN_DIRECTIONS],
        [[r.label, *[pct_number(r.difficulty_pass_rates.get(lv)) for lv in Difficulty],
          *[pct_number(r.direction_pass_rates.get(d)) for d in SHOWN_DIRECTIONS]] for r in board.rows],
        frozenset(range(1, 5 + len(SHOWN_DIRECTIONS))),
    )
    if any(r.provisional for r in board.rows):
        main.title += ("; * provisional, not ranked: "
                       + "; ".join(f"{r.label} ({len(r.incomplete)} task(s) not final: {', '.join(r.incomplete)})"
                                   for r in board.rows if r.provisional))
    grids = [main, rates]
    if board.comparisons:
        grids.append(comparisons_grid(board.comparisons, "Paired comparisons (A - B, A the higher-ranked of each pair, "
                                                         "paper App. F.2; task bootstrap)"))
    if board.sensitivity is not None:
        grids.append(sensitivity_grid(board.sensitivity))
    return grids


DIFFERENCE = "Δ = A − B"
"""The header of every paired difference: A minus B, A the higher-ranked system of the pair (paper App. F.2)."""


def comparisons_grid(comparisons: list[PairedComparison], title: str = "Paired comparisons (A - B, A the higher-ranked; task bootstrap)") -> Grid:
    level = int(round(100 * comparisons[0].confidence)) if comparisons else 95
    return Grid(
        title,
        ["A", "B", DIFFERENCE, f"{level}% CI", "wins", "ties", "losses"],
        [[c.a, c.b, f"{c.mean_difference:+.1f}", f"[{c.ci_low:.1f}, {c.ci_high:.1f}]", str(c.wins), str(c.ties),
          str(c.losses)] for c in comparisons],
        frozenset({2, 3, 4, 5, 6}),
    )


def sensitivity_grid(s: Sensitivity) -> Grid:
    return Grid(
        "Sensitivity of the all-task ranking (Avg, points; last column: largest rank change)",
        ["setting", *s.systems, "top 3 kept", "max rank change"],
        [[row.variant.name, *[f"{row.scores[x]:.1f} (#{row.ranks[x]})" for x in s.systems],
          "yes" if row.same_top3 else "no", str(row.max_rank_change)] for row in s.rows],
        frozenset(range(1, len(s.systems) + 3)),
    )


def na_order_grid(check: NaOrderCheck) -> Grid:
    rows = [[f.fact_id, pts(f.omitted_total), pts(f.stated_total), "ok" if f.ok else "VIOLATED"] for f in check.facts]
    return Grid(f"{check.task_id}: na-order check ({len(check.applied_atoms)} atom(s) set N/A)",
                ["fact", "omitted", "stated, uncited", "order"], rows, frozenset({1, 2}))
