"""Tables of the short-answer leaderboard, by name (Markdown, CSV or rich through `Grid`; JSON is the model dump).

- leaderboard: accuracy with its interval, correct/total, answered, tokens and time per task, budget exhaustion,
  failed-call latency (paper 002, Sec. 3.2-3.6);
- by_domain, by_modality, by_format, by_access_type, by_duration: accuracy per label (App. D.1-D.3);
- terminations: how research ended (App. C.2.3);
- tool_use: calls per category and failures (Sec. 3.4-3.5); transitions: category-to-category shares (Sec. 3.4);
- paired: paired accuracy differences, when the board has them.
"""

from ._answer_models import BREAKDOWNS, TOOL_CATEGORY_ORDER, UNRECORDED, AnswerLeaderboard, AnswerSystemResult
from ._render import Grid, comparisons_grid, pct, pts

ANSWER_TABLE_NAMES = ("leaderboard", *(f"by_{b}" for b in BREAKDOWNS), "terminations", "tool_use", "transitions",
                      "paired")

_BREAKDOWN_TITLES = {"domain": "domain", "modality": "evidence modality", "format": "format category (a task counts "
                     "in every category it has)", "access_type": "access type", "duration": "anchor-video duration"}


def _name(row: AnswerSystemResult) -> str:
    return row.label + (" (provisional)" if row.provisional else "")


def _number(x: float | None, digits: int = 0) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def leaderboard_grid(board: AnswerLeaderboard) -> Grid:
    level = int(round(100 * board.confidence))
    title = (f"Accuracy: {len(board.task_ids)} tasks, judge {board.judge or '-'}, {board.replicates} bootstrap "
             f"replicates (seed {board.seed})")
    provisional = [r for r in board.rows if r.provisional]
    if provisional:
        title += "; * provisional, not ranked: " + "; ".join(
            f"{r.label} ({len(r.incomplete)} task(s) not final: {', '.join(r.incomplete)})" for r in provisional)
    rows = []
    for r in board.rows:
        p = r.process
        rows.append([
            str(r.rank) if r.rank is not None else "-", _name(r), pts(r.accuracy) + ("*" if r.provisional else ""),
            f"[{r.accuracy_ci_low:.1f}, {r.accuracy_ci_high:.1f}]", f"{r.correct}/{r.tasks}", str(r.answered),
            _number(p.mean_tokens), _number(p.median_tokens), _number(p.mean_elapsed_s, 1),
            _number(p.median_elapsed_s, 1), pct(p.budget_exhausted_share), pct(p.failed_latency_share),
        ])
    return Grid(title, ["#", "system", "Accuracy (%)", f"{level}% CI", "correct", "answered", "tokens (mean)",
                        "tokens (median)", "time s (mean)", "time s (median)", "budget exhausted",
                        "failed-call latency"], rows, frozenset({0, *range(2, 12)}))


def breakdown_grid(board: AnswerLeaderboard, name: str) -> Grid:
    """Accuracy per label of one breakdown, systems as columns."""
    first = board.rows[0].breakdowns[name] if board.rows else []
    rows = []
    for k, group in enumerate(first):
        rows.append([group.group, str(group.tasks),
                     *[pts(r.breakdowns[name][k].accuracy) for r in board.rows]])
    label = name.replace("_", " ")
    return Grid(f"Accuracy (%) by {_BREAKDOWN_TITLES[name]}", [label, "tasks", *map(_name, board.rows)], rows,
                frozenset(range(1, 2 + len(board.rows))))


def terminations_grid(board: AnswerLeaderboard) -> Grid:
    reasons = sorted({k for r in board.rows for k in r.process.terminations}, key=lambda k: (k == UNRECORDED, k))
    rows = [[_name(r), *[f"{pct(r.process.terminations.get(k, 0) / r.tasks)} ({r.process.terminations.get(k, 0)})"
                         if r.tasks else "-" for k in reasons]] for r in board.rows]
    return Grid("How research ended (% of tasks, count)", ["system", *reasons], rows,
                frozenset(range(1, 1 + len(reasons))))


def tool_use_grid(board: AnswerLeaderboard) -> Grid:
    rows = []
    for r in board.rows:
        p = r.process
        rows.append([_name(r), str(p.traces), str(p.tool_calls),
                     *[pct(p.categories.get(c, 0) / p.tool_calls) if p.tool_calls else "-" for c in TOOL_CATEGORY_ORDER],
                     pct(p.failed_call_share), pct(p.failed_latency_share)])
    return Grid("Tool use (% of calls by category; failed calls and their share of tool latency)",
                ["system", "traces", "calls", *TOOL_CATEGORY_ORDER, "failed calls", "failed-call latency"], rows,
                frozenset(range(1, 5 + len(TOOL_CATEGORY_ORDER))))


def transitions_grid(board: AnswerLeaderboard) -> Grid:
    rows = []
    for r in board.rows:
        shares = r.process.transition_shares
        for a in TOOL_CATEGORY_ORDER:
            if any(p.startswith(f"{a}->") for p in shares):
                rows.append([_name(r), a, *[pct(shares.get(f"{a}->{b}", 0.0)) for b in TOOL_CATEGORY_ORDER]])
    return Grid("Tool-category transitions (% of the calls after a call of the row's category)",
                ["system", "from", *[f"-> {b}" for b in TOOL_CATEGORY_ORDER]], rows,
                frozenset(range(2, 2 + len(TOOL_CATEGORY_ORDER))))


def answer_grids(board: AnswerLeaderboard) -> dict[str, Grid]:
    """Every table of a short-answer leaderboard, by name (`ANSWER_TABLE_NAMES`; `paired` only with comparisons)."""
    out = {"leaderboard": leaderboard_grid(board)}
    out.update({f"by_{name}": breakdown_grid(board, name) for name in BREAKDOWNS})
    out["terminations"] = terminations_grid(board)
    out["tool_use"] = tool_use_grid(board)
    out["transitions"] = transitions_grid(board)
    if board.comparisons:
        out["paired"] = comparisons_grid(board.comparisons, "Paired accuracy differences (A - B, percentage points; "
                                         "each system minus each system ranked above it; task bootstrap)")
    return out


def answer_markdown(board: AnswerLeaderboard) -> str:
    """Every table of the board as Markdown, one after another."""
    return "\n\n".join(g.markdown() for g in answer_grids(board).values()) + "\n"
