"""Tables of the short-answer leaderboard, by name (Markdown, CSV or rich through `Grid`; JSON is the model dump).

- leaderboard: accuracy with its interval, correct/total, answered, tokens and time per task, budget exhaustion,
  failed-call latency (paper 002, Sec. 3.2-3.6);
- by_domain, by_modality, by_format, by_access_type, by_duration: accuracy per label (App. D.1-D.3);
- terminations: how research ended (App. C.2.3);
- tool_use: calls per category and failures (Sec. 3.4-3.5); transitions: category-to-category shares (Sec. 3.4);
- paired: paired accuracy differences, when the board has them.

A multiple-choice board (paper 004) has its own set (`MCQ_TABLE_NAMES`): leaderboard (accuracy with the chance
level, unparseable answers), subsets (per subset, ours with its interval and the official VideoOdyssey scorer's,
with its invalid count), official_breakdowns (that scorer's per-label accuracy), by_subset, by_task_type, by_dimension, by_domain, by_audio_type, by_duration, by_ccl_bin
(Fig. 4),
lovo (leave-one-video-out accuracy, App. C.1, Table 11) and paired.
"""

from ._answer_models import (
    BREAKDOWNS,
    MCQ_BREAKDOWNS,
    TOOL_CATEGORY_ORDER,
    UNRECORDED,
    AnswerLeaderboard,
    AnswerSystemResult,
)
from ._render import Grid, comparisons_grid, pct, pts

ANSWER_TABLE_NAMES = ("leaderboard", *(f"by_{b}" for b in BREAKDOWNS), "terminations", "tool_use", "transitions",
                      "paired")

MCQ_TABLE_NAMES = ("leaderboard", "subsets", "official_breakdowns", *(f"by_{b}" for b in MCQ_BREAKDOWNS), "lovo",
                   "paired")

_BREAKDOWN_TITLES = {"domain": "domain", "modality": "evidence modality", "format": "format category (a task counts "
                     "in every category it has)", "access_type": "access type", "duration": "anchor-video duration",
                     "difficulty": "human-calibrated difficulty (paper 002, Sec. 3.2)"}

_MCQ_TITLES = {"subset": "subset (V visual, AV audio-visual)", "task_type": "task type", "dimension": "dimension",
               "domain": "the video's domain", "audio_type": "audio type (AV questions only)",
               "duration": "the video's duration (minutes; the VideoOdyssey scorer's bins)",
               "ccl_bin": "continuous certificate length (minutes)"}
_TITLES = {"short_answer": _BREAKDOWN_TITLES, "mcq": _MCQ_TITLES}
"""The breakdown titles of each answer board."""


def _name(row: AnswerSystemResult) -> str:
    return row.label + (" (provisional)" if row.provisional else "")


def _number(x: float | None, digits: int = 0) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def _provisional_note(board: AnswerLeaderboard) -> str:
    """The title's note naming the provisional rows and their tasks that are not final, or ""."""
    provisional = [r for r in board.rows if r.provisional]
    return "; * provisional, not ranked: " + "; ".join(
        f"{r.label} ({len(r.incomplete)} task(s) not final: {', '.join(r.incomplete)})" for r in provisional) \
        if provisional else ""


def leaderboard_grid(board: AnswerLeaderboard) -> Grid:
    level = int(round(100 * board.confidence))
    title = (f"Accuracy: {len(board.task_ids)} tasks, judge {board.judge or '-'}, {board.replicates} bootstrap "
             f"replicates (seed {board.seed})")
    title += _provisional_note(board)
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
    titles = _TITLES[board.task_kind]
    chance = f"; chance {board.chance_accuracy:g}%" if board.chance_accuracy is not None else ""
    return Grid(f"Accuracy (%) by {titles[name]}{chance}", [label, "tasks", *map(_name, board.rows)], rows,
                frozenset(range(1, 2 + len(board.rows))))


def _labelled(board: AnswerLeaderboard, name: str) -> bool:
    return any(g.tasks for r in board.rows for g in r.breakdowns.get(name, []))


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


def mcq_leaderboard_grid(board: AnswerLeaderboard) -> Grid:
    """Accuracy per system with its interval, the chance level, unparseable answers, tokens and time."""
    level = int(round(100 * board.confidence))
    title = (f"Accuracy: {len(board.task_ids)} questions, chance {board.chance_accuracy:g}%, checked by "
             f"{board.judge or '-'}, {board.replicates} bootstrap replicates (seed {board.seed})")
    title += _provisional_note(board)
    rows = []
    for r in board.rows:
        p = r.process
        rows.append([str(r.rank) if r.rank is not None else "-", _name(r),
                     pts(r.accuracy) + ("*" if r.provisional else ""),
                     f"[{r.accuracy_ci_low:.1f}, {r.accuracy_ci_high:.1f}]", f"{r.correct}/{r.tasks}", str(r.answered),
                     str(r.unparseable or 0), _number(p.mean_tokens), _number(p.mean_elapsed_s, 1)])
    return Grid(title, ["#", "system", "Accuracy (%)", f"{level}% CI", "correct", "answered", "unparseable",
                        "tokens (mean)", "time s (mean)"], rows, frozenset({0, *range(2, 9)}))


def subsets_grid(board: AnswerLeaderboard) -> Grid:
    """Per system and subset (V and AV are never pooled): our accuracy with its interval, where an answer naming no
    single option is wrong, and the official accuracy of the VideoOdyssey authors' scorer, where a prediction that
    is not exactly A-D is left out of the denominator and counted as invalid."""
    level = int(round(100 * board.confidence))
    rows = []
    for r in board.rows:
        for s in r.subsets or []:
            rows.append([_name(r), s.subset, str(s.questions), pts(s.accuracy),
                         f"[{s.accuracy_ci_low:.1f}, {s.accuracy_ci_high:.1f}]", str(s.unparseable),
                         pts(s.official_accuracy) if s.official_valid is not None else "-",
                         f"{s.official_correct}/{s.official_valid}" if s.official_valid is not None else "-",
                         str(s.official_invalid) if s.official_invalid is not None else "-"])
    return Grid("Accuracy (%) by subset: ours (unparseable = wrong) and the official scorer's (not A-D: skipped, "
                "counted as invalid)", ["system", "subset", "questions", "accuracy", f"{level}% CI", "unparseable",
                                        "official accuracy", "official correct", "invalid"], rows,
                frozenset(range(2, 9)))


def official_breakdowns_grid(board: AnswerLeaderboard) -> Grid:
    """The VideoOdyssey authors' scorer's breakdowns per system and subset, over its valid predictions: video
    category, question type (a question counts in each of its types), audio type, video duration, certificate
    length."""
    rows = []
    for r in board.rows:
        for s in r.subsets or []:
            for dimension, groups in s.official_breakdowns.items():
                rows += [[_name(r), s.subset, dimension.replace("_", " "), g.group, f"{g.correct}/{g.tasks}",
                          pts(g.accuracy)] for g in groups]
    return Grid("Official accuracy (%) by the VideoOdyssey scorer's breakdowns (valid predictions only)",
                ["system", "subset", "breakdown", "label", "correct", "accuracy"], rows, frozenset({4, 5}))


def lovo_grid(board: AnswerLeaderboard) -> Grid:
    """Leave-one-video-out accuracy (paper 004, App. C.1, Table 11): its range over the videos and the largest
    change from the overall accuracy."""
    rows = []
    for r in board.rows:
        lovo = r.lovo
        if lovo is None:
            continue
        rows.append([_name(r), str(len(lovo.holdouts)), pts(r.accuracy),
                     f"{pts(lovo.min_accuracy)} - {pts(lovo.max_accuracy)}", pts(lovo.max_abs_change),
                     lovo.max_change_video or "-"])
    return Grid("Leave-one-video-out accuracy (%) and maximum change (percentage points)",
                ["system", "videos", "overall", "leave-one-out range", "max change (pp)", "video of max change"], rows,
                frozenset({1, 2, 3, 4}))


def answer_grids(board: AnswerLeaderboard) -> dict[str, Grid]:
    """Every table of an answer leaderboard, by name (`ANSWER_TABLE_NAMES`, or `MCQ_TABLE_NAMES` for multiple
    choice; `paired` only with comparisons)."""
    return _BOARD_GRIDS[board.task_kind](board)


def _mcq_grids(board: AnswerLeaderboard) -> dict[str, Grid]:
    grids = {"leaderboard": mcq_leaderboard_grid(board), "subsets": subsets_grid(board),
             "official_breakdowns": official_breakdowns_grid(board)}
    grids.update({f"by_{name}": breakdown_grid(board, name) for name in MCQ_BREAKDOWNS})
    grids["lovo"] = lovo_grid(board)
    if board.comparisons:
        grids["paired"] = comparisons_grid(board.comparisons, "Paired accuracy differences (A - B, percentage "
                                           "points; A the higher-ranked of each pair; task bootstrap)")
    return grids


def _short_answer_grids(board: AnswerLeaderboard) -> dict[str, Grid]:
    out = {"leaderboard": leaderboard_grid(board)}
    out.update({f"by_{name}": breakdown_grid(board, name) for name in BREAKDOWNS
                if name != "difficulty" or _labelled(board, name)})  # difficulty only when the tasks carry it
    out["terminations"] = terminations_grid(board)
    out["tool_use"] = tool_use_grid(board)
    out["transitions"] = transitions_grid(board)
    if board.comparisons:
        out["paired"] = comparisons_grid(board.comparisons, "Paired accuracy differences (A - B, percentage points; "
                                         "A the higher-ranked of each pair; task bootstrap)")
    return out


def answer_markdown(board: AnswerLeaderboard) -> str:
    """Every table of the board as Markdown, one after another."""
    return "\n\n".join(g.markdown() for g in answer_grids(board).values()) + "\n"


_BOARD_GRIDS = {"short_answer": _short_answer_grids, "mcq": _mcq_grids}
"""The tables of each answer board (`AnswerLeaderboard.task_kind`)."""
