"""Re-aggregation of saved decisions under other lambda, tau, kappa (App. F.2, Table 15)."""

import pytest
from scoring_trees import atom, many, passes, tree

from omnidr.benchmark import Hyperparameters
from omnidr.scoring import (
    Decisions,
    ScoringInputError,
    SystemDecisions,
    SystemKey,
    build_leaderboard,
    default_variants,
    score_systems,
    sensitivity_analysis,
    settings_from,
    variant,
)

# One task: C-FC 10 atoms and C-LC 10 atoms (content only, so S = 100 * D_C).
TREE = tree("t1", many("fc", "C-FC", 10) + many("lc", "C-LC", 10))
FC = [f"fc{i:02d}" for i in range(10)]
LC = [f"lc{i:02d}" for i in range(10)]


def sd(model: str, fc_pass: int, lc_pass: int) -> SystemDecisions:
    d = Decisions(task_id="t1", decisions=passes(FC, fc_pass) | passes(LC, lc_pass))
    return SystemDecisions(system=SystemKey(model=model), decisions=[d])


def test_saturation_change_swaps_two_systems():
    # A: FC 2/10 (0.2 >= tau -> credited 1), LC 5/10.  D_C = (10 * 1 + 10 * 0.5) / 20 = 0.75 -> 75.0
    # B: FC 1/10 (credited 0.1/0.18 = 5/9), LC 9/10.   D_C = (10 * 5/9 + 10 * 0.9) / 20 = 0.72778 -> 72.78
    # tau = 1 (no saturation): A = (2 + 5) / 20 = 35.0, B = (1 + 9) / 20 = 50.0 -> order flips.
    # tau = 0.24: A FC 0.2/0.24 = 0.8333 -> 66.67; B FC 0.1/0.24 = 0.41667 -> 65.83 (order kept).
    table = sensitivity_analysis([sd("A", 2, 5), sd("B", 1, 9)], {"t1": TREE})
    rows = {r.variant.name: r for r in table.rows}
    released = rows["released"]
    assert table.systems == ["A", "B"]
    assert released.scores == {"A": pytest.approx(75.0), "B": pytest.approx(100 * (10 * 5 / 9 + 9) / 20)}
    assert released.max_rank_change == 0 and released.same_top3
    flat = rows["tau = 1 (no saturation)"]
    assert flat.scores == {"A": pytest.approx(35.0), "B": pytest.approx(50.0)}
    assert flat.ranks == {"A": 2, "B": 1} and flat.max_rank_change == 1 and not flat.same_top3
    tau24 = rows["tau = 0.24"]
    assert tau24.scores == {"A": pytest.approx(100 * (0.2 / 0.24 + 0.5) / 2), "B": pytest.approx(100 * (0.1 / 0.24 + 0.9) / 2)}
    assert tau24.max_rank_change == 0
    # single dimension: lambda changes nothing
    for r in table.rows:
        if r.variant.group == "lambda":
            assert r.scores == pytest.approx(released.scores)


def test_kappa_change():
    # C-FC 40 atoms with 4 pass (credited 5/9) and C-LC 10 atoms all pass.
    # kappa 15: (15 * 5/9 + 10) / 25;  kappa 10: (10 * 5/9 + 10) / 20;  no cap: (40 * 5/9 + 10) / 50
    t = tree("t1", many("fc", "C-FC", 40) + many("lc", "C-LC", 10))
    d = Decisions(task_id="t1", decisions=passes([f"fc{i:02d}" for i in range(40)], 4) | passes(LC, 10))
    table = sensitivity_analysis([SystemDecisions(system=SystemKey(model="m"), decisions=[d])], {"t1": t})
    rows = {r.variant.name: r.scores["m"] for r in table.rows}
    assert rows["released"] == pytest.approx(100 * (15 * 5 / 9 + 10) / 25)
    assert rows["kappa = 10"] == pytest.approx(100 * (10 * 5 / 9 + 10) / 20)
    assert rows["kappa = none (no cap)"] == pytest.approx(100 * (40 * 5 / 9 + 10) / 50)


def test_lambda_change_reweights_dimensions():
    t = tree("t1", many("lc", "C-LC", 2) + many("cs", "R-CS", 2) + many("ly", "P-LY", 2))
    d = Decisions(task_id="t1", decisions=passes(["lc00", "lc01"], 2) | passes(["cs00", "cs01"], 1)
                  | passes(["ly00", "ly01"], 0))
    table = sensitivity_analysis([SystemDecisions(system=SystemKey(model="m"), decisions=[d])], {"t1": t})
    rows = {r.variant.name: r.scores["m"] for r in table.rows}
    # D = (1, 0.5, 0): released 0.5 + 0.15 = 65;  equal thirds (1 + 0.5) / 3 = 50;  0.6 + 0.125 = 72.5
    assert rows["released"] == pytest.approx(65.0)
    assert rows["lambda = 1/3, 1/3, 1/3"] == pytest.approx(50.0)
    assert rows["lambda = 0.60, 0.25, 0.15"] == pytest.approx(72.5)


def test_released_row_matches_the_leaderboard_and_failures_count_as_zero():
    systems = [sd("A", 2, 5), SystemDecisions(system=SystemKey(model="B"),
                                              decisions=[Decisions(task_id="t1", failure="unreadable")])]
    trees = {"t1": TREE, "t2": tree("t2", many("lc", "C-LC", 2))}  # nobody has decisions for t2: failures
    table = sensitivity_analysis(systems, trees)
    board = build_leaderboard(score_systems(systems, trees), sorted(trees), replicates=100)
    released = table.rows[0]
    for r in board.rows:
        assert released.scores[r.label] == pytest.approx(r.avg)
        assert released.ranks[r.label] == r.rank
    assert released.scores == {"A": pytest.approx(37.5), "B": 0.0}


def test_guard_is_re_run_for_each_setting():
    # The kept-candidate report of test_scoring_na_guard.py: Delta_C = 0.5/0.18/20 = 0.1389 beats
    # Delta_R = 0.3 * 0.5/9 = 0.01667, so cs09 is N/A under the released lambda. A content-light
    # lambda flips the guard's decision, so the variant's score must come from a fresh guard run.
    atoms = many("fc", "C-FC", 19) + [atom("fc19", "C-FC", "F1")] + many("cs", "R-CS", 9) + [atom("cs09", "R-CS", "F1")]
    t = tree("t1", atoms)
    d = Decisions(task_id="t1", decisions=passes([f"fc{i:02d}" for i in range(20)], 2)
                  | passes([f"cs{i:02d}" for i in range(10)], 5))
    lam = variant("content light", lambdas=(0.05, 0.3, 0.2))
    table = sensitivity_analysis([SystemDecisions(system=SystemKey(model="m"), decisions=[d])], {"t1": t},
                                 variants=[lam])
    released, light = table.rows
    # released: guard applies cs09 -> R-CS 5/9; S = 100 * (0.5 * 5/9 + 0.3 * 5/9) / 0.8 = 55.56
    assert released.scores["m"] == pytest.approx(100 * 5 / 9)
    # lambda_C = 0.05: Delta_C = 0.05/0.18/20 = 0.01389 <= 0.01667 -> restored; R-CS 0.5
    # S = 100 * (0.05 * 5/9 + 0.3 * 0.5) / 0.35
    assert light.scores["m"] == pytest.approx(100 * (0.05 * 5 / 9 + 0.15) / 0.35)


def test_default_variants_change_one_group_at_a_time():
    base = settings_from(Hyperparameters())
    for v in default_variants(base):
        changed = {k for k, x in v.settings.model_dump().items() if x != getattr(base, k)}
        groups = {"lambda_C": "lambda", "lambda_R": "lambda", "lambda_P": "lambda", "tau": "tau", "kappa": "kappa"}
        assert {groups[k] for k in changed} == {v.group}, v.name


def test_custom_variant_rejects_bad_values():
    with pytest.raises(ScoringInputError, match="exactly one parameter group"):
        variant("two", tau=0.2, kappa=10)
    with pytest.raises(ScoringInputError, match="lambda must be three non-negative numbers"):
        variant("bad", lambdas=(0.5, "heavy", 0.2))
    with pytest.raises(ScoringInputError, match="tau must be a number"):
        variant("bad", tau=0)
    with pytest.raises(ScoringInputError, match="kappa must be a whole number"):
        variant("bad", kappa=2.5)


def test_decisions_for_a_task_without_a_tree_are_an_error():
    d = SystemDecisions(system=SystemKey(model="m"), decisions=[Decisions(task_id="nope", decisions={})])
    with pytest.raises(ScoringInputError, match="task 'nope', which has no rubric tree"):
        score_systems([d], {"t1": TREE})
