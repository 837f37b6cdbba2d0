"""Consistency with the paper's Table 3: Avg succ. and Avg follow from the dimension means and Success.

Each report here has one direction per dimension with 1000 atoms, so a pass count of 599 gives a
dimension score of exactly 59.9. With every successful report holding all three dimensions,
Avg succ. = 0.5 C + 0.3 R + 0.2 P and Avg = Success x Avg succ.
"""

from functools import cache

import pytest
from scoring_trees import many, tree

from omnidr.scoring import ReportScore, SystemKey, SystemScores, build_leaderboard, score_report

N = 1000


@cache
def big_tree():
    return tree("big", many("c", "C-LC", N) + many("r", "R-CS", N) + many("p", "P-LY", N))


def report(task: str, c: int, r: int, p: int) -> ReportScore:
    """A report passing the first c / r / p of the 1000 atoms of each dimension."""
    d = {}
    for prefix, k in (("c", c), ("r", r), ("p", p)):
        d |= {f"{prefix}{i:02d}": "pass" if i < k else "fail" for i in range(N)}
    return score_report(big_tree(), d).model_copy(update={"task_id": task})


@cache
def cached(c: int, r: int, p: int) -> ReportScore:
    return report("x", c, r, p)


def system(name: str, successes: list[tuple[int, int, int]], tasks: int = 50) -> SystemScores:
    reports = [cached(*cpr).model_copy(update={"task_id": f"t{i:02d}"}) for i, cpr in enumerate(successes)]
    reports += [ReportScore.failure(f"t{i:02d}", "no report") for i in range(len(successes), tasks)]
    return SystemScores(system=SystemKey(model=name, harness="claude-code"), reports=reports)


def row(board, name):
    return next(r for r in board.rows if r.system.model == name)


def test_opus5_row_content_599_citation_599_presentation_903_with_96_percent_success():
    # 0.5 * 59.9 + 0.3 * 59.9 + 0.2 * 90.3 = 65.98 -> Avg succ. 66.0;  0.96 * 65.98 = 63.34 -> Avg 63.3
    board = build_leaderboard([system("opus-5", [(599, 599, 903)] * 48)], replicates=2000, seed=1)
    r = row(board, "opus-5")
    assert r.success_rate == 0.96 and r.successes == 48 and r.tasks == 50
    assert (r.content, r.citation, r.presentation) == (pytest.approx(59.9), pytest.approx(59.9), pytest.approx(90.3))
    assert r.avg_succ == pytest.approx(65.98)
    assert f"{r.avg_succ:.1f}" == "66.0"
    assert r.avg == pytest.approx(63.3408)
    assert f"{r.avg:.1f}" == "63.3"
    assert r.avg_ci_low < r.avg < r.avg_ci_high


def test_opus5_row_when_reports_vary_around_the_same_means():
    # Half the successful reports at (49.9, 54.9, 85.3), half at (69.9, 64.9, 95.3): same means as above.
    reports = [(499, 549, 853), (699, 649, 953)] * 24
    r = build_leaderboard([system("opus-5", reports)], replicates=2000).rows[0]
    assert (r.content, r.citation, r.presentation) == (pytest.approx(59.9), pytest.approx(59.9), pytest.approx(90.3))
    assert f"{r.avg_succ:.1f}" == "66.0" and f"{r.avg:.1f}" == "63.3"


@pytest.mark.parametrize(
    ("name", "dims", "successes", "avg_succ", "avg"),
    [
        # 0.5 * 57.4 + 0.3 * 53.5 + 0.2 * 86.0 = 61.95; x 0.98 = 60.71 (paper: 60.7)
        ("opus-4.8", (574, 535, 860), 49, 61.95, "60.7"),
        # 0.5 * 39.9 + 0.3 * 37.4 + 0.2 * 71.1 = 45.39; x 0.62 = 28.14 (paper: 28.1)
        ("qwen3.5-omni-plus", (399, 374, 711), 31, 45.39, "28.1"),
    ],
)
def test_other_table3_rows(name, dims, successes, avg_succ, avg):
    r = build_leaderboard([system(name, [dims] * successes)], replicates=500).rows[0]
    assert r.avg_succ == pytest.approx(avg_succ)
    assert f"{r.avg:.1f}" == avg


def test_rows_rank_by_all_task_average_not_by_successful_average():
    # A: 66.0 on 48 successes -> 63.3; B: 62.0 on every task -> 62.0. C: higher Avg succ. but 88% success.
    a = system("a", [(599, 599, 903)] * 48)
    b = system("b", [(582, 544, 832)] * 50)
    c = system("c", [(640, 640, 900)] * 44)  # 0.5 * 64 + 0.3 * 64 + 0.2 * 90 = 69.2; x 0.88 = 60.9
    board = build_leaderboard([c, b, a], replicates=500)
    assert [r.system.model for r in board.rows] == ["a", "b", "c"]
    assert [r.rank for r in board.rows] == [1, 2, 3]
    assert row(board, "c").avg_succ > row(board, "a").avg_succ
