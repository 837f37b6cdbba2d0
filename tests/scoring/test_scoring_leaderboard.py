"""Across reports: task bootstrap, leaderboard rows, paired comparisons (App. F.2)."""

import numpy as np
import pytest
from scoring_trees import atom, many, tree

from omnidr.scoring import (
    Leaderboard,
    ReportScore,
    ScoringInputError,
    SystemKey,
    SystemScores,
    bootstrap_counts,
    build_leaderboard,
    compare_systems,
    paired_comparisons,
    score_report,
)

LC = tree("lc", many("a", "C-LC", 20))


def lc_report(task: str, passed: int) -> ReportScore:
    """A content-only report scoring 5 * passed points (20 C-LC atoms)."""
    return score_report(LC, {f"a{i:02d}": "pass" if i < passed else "fail" for i in range(20)}).model_copy(
        update={"task_id": task})


def system(model: str, points: list[float | None]) -> SystemScores:
    """One report per task t00, t01, ...; None is a failed report. Points must be multiples of 5."""
    reports = [ReportScore.failure(f"t{i:02d}", "missing") if p is None else lc_report(f"t{i:02d}", int(p // 5))
               for i, p in enumerate(points)]
    return SystemScores(system=SystemKey(model=model), reports=reports)


def naive_replicate_means(scores: np.ndarray, replicates: int, seed: int) -> np.ndarray:
    """The definition, one replicate at a time: resample task indices, average."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, scores.shape[-1], size=(replicates, scores.shape[-1]))
    return np.array([[s[row].mean() for s in np.atleast_2d(scores)] for row in idx])


def test_bootstrap_counts_resample_tasks_with_replacement():
    counts = bootstrap_counts(7, replicates=1000, seed=3)
    assert counts.shape == (1000, 7)
    assert (counts.sum(axis=1) == 7).all()
    assert (counts == bootstrap_counts(7, replicates=1000, seed=3)).all()
    assert not (counts == bootstrap_counts(7, replicates=1000, seed=4)).all()
    # same draws as the index matrix of default_rng(seed)
    idx = np.random.default_rng(3).integers(0, 7, size=(1000, 7))
    assert (counts == np.stack([np.bincount(r, minlength=7) for r in idx])).all()


def test_leaderboard_interval_matches_the_per_replicate_definition():
    s = system("a", [0, 5, 50, 100, None, 35, 80, 20])
    board = build_leaderboard([s], replicates=3000, seed=9)
    scores = np.array([[0, 5, 50, 100, 0, 35, 80, 20]], dtype=float)
    means = naive_replicate_means(scores, 3000, 9)[:, 0]
    low, high = np.percentile(means, [2.5, 97.5])
    r = board.rows[0]
    assert r.avg == pytest.approx(scores.mean())
    assert (r.avg_ci_low, r.avg_ci_high) == (pytest.approx(low), pytest.approx(high))


def test_constant_scores_have_a_zero_width_interval():
    r = build_leaderboard([system("a", [40] * 10)], replicates=500).rows[0]
    assert r.avg_ci_low == pytest.approx(40) and r.avg_ci_high == pytest.approx(40)


def test_seed_makes_intervals_reproducible():
    s = system("a", [0, 10, 90, 30, 55, 100])
    a = build_leaderboard([s], replicates=800, seed=5).rows[0]
    b = build_leaderboard([s], replicates=800, seed=5).rows[0]
    c = build_leaderboard([s], replicates=800, seed=6).rows[0]
    assert (a.avg_ci_low, a.avg_ci_high) == (b.avg_ci_low, b.avg_ci_high)
    assert (a.avg_ci_low, a.avg_ci_high) != (c.avg_ci_low, c.avg_ci_high)


def test_row_fields_success_and_means_over_successful_reports():
    r = build_leaderboard([system("a", [50, None, 100, None])], replicates=200).rows[0]
    assert (r.tasks, r.successes, r.success_rate) == (4, 2, 0.5)
    assert r.avg == pytest.approx(37.5)  # (50 + 0 + 100 + 0) / 4
    assert r.avg_succ == pytest.approx(75.0)
    assert r.content == pytest.approx(75.0) and r.citation is None and r.presentation is None


def test_a_task_without_a_report_is_a_failure():
    a = system("a", [50, 50, 50])
    b = system("b", [50, 50])  # no report for t02
    board = build_leaderboard([a, b], replicates=200)
    rb = next(r for r in board.rows if r.system.model == "b")
    assert board.task_ids == ["t00", "t01", "t02"]
    assert (rb.successes, rb.avg) == (2, pytest.approx(100 / 3))


def test_explicit_task_set_ignores_other_reports():
    board = build_leaderboard([system("a", [0, 100, 100])], task_ids=["t01", "t02"], replicates=200)
    assert board.rows[0].avg == pytest.approx(100.0)


def test_direction_and_difficulty_pass_rates_average_per_report_rates_over_successes():
    t = tree("t", [atom("c1", "C-LC", difficulty="L0"), atom("c2", "C-LC", difficulty="L1"),
                   atom("r1", "R-CS", difficulty="L1")])
    r1 = score_report(t, {"c1": "pass", "c2": "fail", "r1": "pass"}).model_copy(update={"task_id": "t1"})  # LC 0.5
    r2 = score_report(t, {"c1": "pass", "c2": "pass", "r1": "na"}).model_copy(update={"task_id": "t2"})  # LC 1.0
    fail = ReportScore.failure("t3", "missing")
    row = build_leaderboard([SystemScores(system=SystemKey(model="m"), reports=[r1, r2, fail])], replicates=100).rows[0]
    assert row.direction_pass_rates == {"C-LC": pytest.approx(0.75), "R-CS": pytest.approx(1.0)}
    # L0: 1/1 and 1/1 -> 1.0; L1: report 1 has c2 fail + r1 pass (1/2), report 2 c2 pass (1/1) -> 0.75
    assert {k.value: v for k, v in row.difficulty_pass_rates.items()} == {"L0": 1.0, "L1": pytest.approx(0.75)}


def test_paired_comparison_resamples_tasks_jointly_and_reads_higher_minus_lower():
    a_pts = [60, 70, 20, 100, None, 40, 55, 90]  # mean 54.375
    b_pts = [50, 70, 40, 80, 30, 40, 45, 85]  # mean 55: B ranks higher
    a, b = system("a", a_pts), system("b", b_pts)
    c = compare_systems(a, b, replicates=4000, seed=2)
    a_arr = np.array([0 if x is None else x for x in a_pts], dtype=float)
    b_arr = np.array(b_pts, dtype=float)
    diff_means = naive_replicate_means(b_arr - a_arr, 4000, 2)[:, 0]
    # App. F.2: the pair reads A minus B with A the higher-ranked system, whatever order it was asked in
    assert (c.a, c.b, c.tasks) == ("b", "a", 8)
    assert c.mean_difference == pytest.approx((b_arr - a_arr).mean()) == pytest.approx(0.625)
    assert (c.ci_low, c.ci_high) == (pytest.approx(np.percentile(diff_means, 2.5)),
                                     pytest.approx(np.percentile(diff_means, 97.5)))
    # per task, for b: wins t02, t04 (30 > the failure's 0); ties t01, t05; loses t00, t03, t06, t07
    assert (c.wins, c.ties, c.losses) == (2, 2, 4)


def test_a_tie_keeps_the_order_asked():
    c = compare_systems(system("a", [10, 30]), system("b", [30, 10]), replicates=200)
    assert (c.a, c.b, c.mean_difference) == ("a", "b", 0.0)


def test_pairing_narrows_the_interval_when_systems_move_together():
    # B = A - 5 on every task: the paired difference is exactly 5 in every replicate.
    a_pts = [0, 95, 35, 70, 15, 90, 50, 60]
    c = compare_systems(system("a", [p + 5 for p in a_pts]), system("b", a_pts), replicates=1000)
    assert (c.mean_difference, c.ci_low, c.ci_high) == (pytest.approx(5), pytest.approx(5), pytest.approx(5))
    assert (c.wins, c.ties, c.losses) == (8, 0, 0)


def test_all_pairs_are_vectorized_and_agree_with_single_comparisons():
    systems = [system(m, pts) for m, pts in (("a", [10, 20, 30, 40]), ("b", [40, 30, 20, 10]), ("c", [25, 25, 25, 25]))]
    pairs = paired_comparisons(systems, replicates=700, seed=4)
    assert [(p.a, p.b) for p in pairs] == [("a", "b"), ("a", "c"), ("b", "c")]
    single = compare_systems(systems[0], systems[2], replicates=700, seed=4)
    assert pairs[1] == single


def test_leaderboard_pairs_read_the_higher_ranked_minus_the_lower():
    """App. F.2: "A minus B" with A the higher-ranked system (Opus 5 minus GLM-5.3 = +1.3)."""
    systems = [system("low", [10, 20]), system("mid", [40, 50]), system("high", [80, 90])]
    board = build_leaderboard(systems, replicates=300, with_comparisons=True)
    assert [(c.a, c.b) for c in board.comparisons] == [("high", "mid"), ("high", "low"), ("mid", "low")]
    assert [c.mean_difference for c in board.comparisons] == [pytest.approx(40), pytest.approx(70), pytest.approx(30)]
    assert all(c.wins == 2 and c.losses == 0 for c in board.comparisons)


def test_leaderboard_round_trips_through_json():
    board = build_leaderboard([system("a", [10, 20, None]), system("b", [50, 45, 5])], replicates=100,
                              with_comparisons=True)
    assert Leaderboard.model_validate_json(board.model_dump_json()) == board


def test_duplicate_systems_and_duplicate_reports_are_errors():
    a = system("a", [10])
    with pytest.raises(ScoringInputError, match="appears more than once"):
        build_leaderboard([a, a], replicates=100)
    twice = SystemScores(system=SystemKey(model="x"), reports=[lc_report("t", 1), lc_report("t", 2)])
    with pytest.raises(ScoringInputError, match="two reports for task 't'"):
        build_leaderboard([twice], replicates=100)
    with pytest.raises(ScoringInputError, match="no system"):
        build_leaderboard([], replicates=100)


def test_reports_scored_with_different_parameters_cannot_share_a_leaderboard():
    from omnidr.benchmark import Hyperparameters

    other = score_report(LC, {"a00": "pass"}, Hyperparameters(tau=0.3)).model_copy(update={"task_id": "t01"})
    mixed = SystemScores(system=SystemKey(model="m"), reports=[lc_report("t00", 3), other])
    with pytest.raises(ScoringInputError, match="2 different parameter sets"):
        build_leaderboard([mixed], replicates=100)
    board = build_leaderboard([system("a", [10, None])], replicates=100)
    assert board.settings.tau == 0.18 and board.settings.na_guard


def test_leaderboard_refuses_reports_of_different_judges():
    from omnidr.benchmark import Atom, RubricTree
    from omnidr.scoring import Decisions, ScoringInputError, SystemKey, SystemScores, build_leaderboard, score_report

    tree = RubricTree(task_id="t", atoms=[Atom(id="a1", direction="C-FC", criterion="Does the report state X?",
                                               evaluator="J", fact_id="F1", difficulty="L0", evidence_note="n")])

    def system(model: str, judge: str) -> SystemScores:
        score = score_report(tree, Decisions(task_id="t", judge=judge, decisions={"a1": "pass"}))
        return SystemScores(system=SystemKey(model=model, harness="h"), reports=[score])

    same = build_leaderboard([system("m1", "offline-baseline:x:1"), system("m2", "offline-baseline:x:1")], replicates=200)
    assert len(same.rows) == 2
    with pytest.raises(ScoringInputError, match="2 different judges"):
        build_leaderboard([system("m1", "offline-baseline:x:1"), system("m2", "openai-compatible:gpt:1")], replicates=200)


def test_tied_systems_share_a_rank_and_the_next_rank_skips():
    board = build_leaderboard([system("b", [50, 50]), system("a", [50, 50]), system("c", [100, 100]),
                               system("d", [0, 5])], replicates=200)
    assert [(r.label, r.rank) for r in board.rows] == [("c", 1), ("a", 2), ("b", 2), ("d", 4)]


def test_a_system_with_unfinished_tasks_is_provisional_unranked_and_listed_last():
    from omnidr.scoring._render import leaderboard_grids

    board = build_leaderboard([system("judged", [50, 50]), system("judge-down", [100, 100])], replicates=200,
                              incomplete={"judge-down": ["t01"]})
    first, last = board.rows
    assert (first.label, first.rank, first.provisional) == ("judged", 1, False)
    assert (last.label, last.rank, last.incomplete, last.provisional) == ("judge-down", None, ["t01"], True)
    md = leaderboard_grids(board)[0].markdown()
    assert "| 1 | judged | 50.0 |" in md
    assert "| - | judge-down (provisional) | 100.0* |" in md
    assert "provisional, not ranked: judge-down (1 task(s) not final: t01)" in md
