"""One report's Omni-ART score (Sec. 3.3 Eq. 2-3), worked out by hand for small trees."""

import pytest
from scoring_trees import many, passes, tree

from omnidr.benchmark import Dimension, Hyperparameters
from omnidr.scoring import AtomDecision, Decisions, ReportScore, ScoringInputError, score_report

TAU = 0.18


def ids(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i:02d}" for i in range(n)]


def test_worked_example_with_saturation_cap_gates_and_evaluator_errors():
    t = tree("t", many("fc", "C-FC", 40) + many("vf", "C-VF", 3) + many("lc", "C-LC", 4)
             + many("cs", "R-CS", 10) + many("sc", "R-SC", 2) + many("ly", "P-LY", 5) + many("tn", "P-TN", 2))
    d: dict = {}
    d |= passes(ids("fc", 40), 4)  # r = 0.10 < tau: credited 0.10 / 0.18 = 5/9; weight capped 40 -> 15
    d |= {  # gate 'all' decided by majority of three votes: 2 pass, 1 fail -> gate fails
        "vf00": {"votes": ["pass", "pass", "fail"]},
        "vf01": {"votes": ["fail", "pass", "pass"]},
        "vf02": {"votes": ["fail", "fail", "pass"]},
    }
    d |= passes(ids("lc", 4), 3)  # r = 0.75, weight 4
    d |= passes(ids("cs", 8), 6) | {"cs08": "na", "cs09": "skipped"}  # 6 / 8 applicable; na and skipped leave
    d |= passes(ids("sc", 2), 2)  # r = 1
    d |= passes(ids("ly", 5), 4)  # r = 0.8
    d |= passes(ids("tn", 2), 0)  # gate 'any' with no pass -> fails
    s = score_report(t, Decisions.model_validate({"task_id": "t", "decisions": d}))

    # D_C = (15 * 5/9 + 3 * 0 * 2/3 + 4 * 0.75) / (15 + 3 + 4) = (25/3 + 3) / 22 = 17/33
    # D_R = (8 * 0.75 + 2 * 1) / (8 + 2) = 0.8
    # D_P = (5 * 0.8 + 2 * 0 * 0) / (5 + 2) = 4/7
    # S = 100 * (0.5 * 17/33 + 0.3 * 0.8 + 0.2 * 4/7) = 61.186...
    assert s.dimensions[Dimension.C].score == pytest.approx(100 * 17 / 33)
    assert s.dimensions[Dimension.R].score == pytest.approx(80.0)
    assert s.dimensions[Dimension.P].score == pytest.approx(100 * 4 / 7)
    assert s.total == pytest.approx(100 * (0.5 * 17 / 33 + 0.3 * 0.8 + 0.2 * 4 / 7))
    assert round(s.total, 2) == 61.19

    fc = s.direction("C-FC")
    assert (fc.rate, fc.weight, fc.applicable) == (pytest.approx(0.1), 15, 40)
    assert fc.credited == pytest.approx(0.1 / TAU)
    vf = s.direction("C-VF")
    assert (vf.passed, vf.failed, vf.gate_passed, vf.effective) == (2, 1, False, 0.0)
    assert vf.rate == pytest.approx(2 / 3) and vf.credited == pytest.approx(2 / 3)
    cs = s.direction("R-CS")
    assert (cs.applicable, cs.judged_na, cs.skipped, cs.weight) == (8, 1, 1, 8)
    assert s.direction("P-TN").gate_passed is False
    assert s.direction("C-LC").gate_passed is None  # core direction: diagnostic only
    assert s.skipped == 1 and s.missing_decisions == []
    assert not s.failed


def test_saturation_above_tau_gives_full_credit_and_weight_below_cap_is_the_count():
    # C-FC: 10 atoms, 3 pass -> r = 0.3 >= 0.18 -> credited 1.0, weight 10 (below kappa 15)
    # C-LC: 10 atoms, 5 pass -> 0.5, weight 10.  D_C = (10 * 1 + 10 * 0.5) / 20 = 0.75; only content -> S = 75
    t = tree("t", many("fc", "C-FC", 10) + many("lc", "C-LC", 10))
    s = score_report(t, passes(ids("fc", 10), 3) | passes(ids("lc", 10), 5))
    assert s.direction("C-FC").credited == 1.0
    assert s.direction("C-FC").weight == 10
    assert s.total == pytest.approx(75.0)
    assert list(s.dimensions) == [Dimension.C]


def test_exactly_at_tau_is_saturated():
    # 50 atoms, 9 pass: r = 0.18 = tau -> credited 1.0
    t = tree("t", many("fc", "C-FC", 50))
    s = score_report(t, passes(ids("fc", 50), 9))
    assert s.direction("C-FC").credited == 1.0 and s.total == pytest.approx(100.0)


def test_cap_applies_only_to_high_volume_directions():
    # C-CA: 30 atoms, 3 pass -> r = 0.1 -> c = 5/9, weight min(30, 15) = 15
    # C-AV: 20 atoms (not high volume), 10 pass -> c = 0.5, weight 20 (no cap)
    # D_C = (15 * 5/9 + 20 * 0.5) / 35 = (25/3 + 10) / 35 = 55/105
    t = tree("t", many("ca", "C-CA", 30) + many("av", "C-AV", 20))
    s = score_report(t, passes(ids("ca", 30), 3) | passes(ids("av", 20), 10))
    assert s.direction("C-CA").weight == 15
    assert s.direction("C-AV").weight == 20
    assert s.total == pytest.approx(100 * 55 / 105)


def test_hyperparameters_change_tau_and_kappa():
    # tau 0.5, kappa 5: C-FC 30 atoms 6 pass -> r = 0.2 -> c = 0.4, weight 5; C-LC 5 atoms all pass.
    # D_C = (5 * 0.4 + 5 * 1) / 10 = 0.7
    hp = Hyperparameters(tau=0.5, kappa=5)
    t = tree("t", many("fc", "C-FC", 30) + many("lc", "C-LC", 5))
    s = score_report(t, passes(ids("fc", 30), 6) | passes(ids("lc", 5), 5), hp)
    assert s.total == pytest.approx(70.0)
    assert (s.settings.tau, s.settings.kappa) == (0.5, 5)


def test_hyperparameters_dimension_weights_change_the_total():
    # C-LC 4/4 -> D_C = 1; R-CS 1/4 -> D_R = 0.25; P-LY 0/2 -> D_P = 0
    t = tree("t", many("lc", "C-LC", 4) + many("cs", "R-CS", 4) + many("ly", "P-LY", 2))
    d = passes(ids("lc", 4), 4) | passes(ids("cs", 4), 1) | passes(ids("ly", 2), 0)
    assert score_report(t, d).total == pytest.approx(100 * (0.5 + 0.3 * 0.25))  # released 0.5 / 0.3 / 0.2
    hp = Hyperparameters(dimension_weights={"C": 1, "R": 1, "P": 2})
    assert score_report(t, d, hp).total == pytest.approx(100 * (1 + 0.25) / 4)


def test_gate_any_passes_with_one_pass_and_all_needs_every_atom():
    t = tree("t", many("tn", "P-TN", 3) + many("ri", "P-RI", 2))
    s = score_report(t, passes(ids("tn", 3), 1) | passes(ids("ri", 2), 2))
    # P-TN 'any': 1/3 passes -> gate holds, c = 1/3, w 3; P-RI 'all': 2/2 -> c = 1, w 2
    assert s.direction("P-TN").gate_passed is True
    assert s.direction("P-RI").gate_passed is True
    assert s.total == pytest.approx(100 * (3 * (1 / 3) + 2 * 1) / 5)
    s2 = score_report(t, passes(ids("tn", 3), 1) | passes(ids("ri", 2), 1))
    # P-RI fails its gate: it keeps its weight 2 but contributes 0 -> D_P = (1 + 0) / 5
    assert s2.direction("P-RI").gate_passed is False
    assert s2.total == pytest.approx(20.0)


def test_failed_gate_zeroes_only_its_direction_not_the_dimension():
    t = tree("t", many("vf", "C-VF", 2) + many("lc", "C-LC", 2))
    s = score_report(t, {"vf00": "pass", "vf01": "fail", "lc00": "pass", "lc01": "pass"})
    # D_C = (2 * 0 + 2 * 1) / 4 = 0.5
    assert s.total == pytest.approx(50.0)


def test_gate_majority_of_votes_decides():
    t = tree("t", many("vf", "C-VF", 1) + many("lc", "C-LC", 1))
    passed = score_report(t, {"vf00": AtomDecision(votes=["fail", "pass", "pass"]), "lc00": "pass"})
    failed = score_report(t, {"vf00": AtomDecision(votes=["pass", "fail", "fail"]), "lc00": "pass"})
    assert passed.direction("C-VF").gate_passed is True and passed.total == pytest.approx(100.0)
    assert failed.direction("C-VF").gate_passed is False and failed.total == pytest.approx(50.0)


def test_contradicting_votes_or_even_votes_are_rejected():
    with pytest.raises(ValueError, match="contradicts the majority"):
        AtomDecision(outcome="pass", votes=["fail", "fail", "pass"])
    with pytest.raises(ValueError, match="odd number"):
        AtomDecision(votes=["fail", "pass"])


def test_dimension_without_applicable_atom_is_left_out_and_lambdas_renormalized():
    # Presentation atoms are all N/A or skipped: S = 100 * (0.5 * D_C + 0.3 * D_R) / 0.8
    # D_C = 0.5 (C-LC 1/2), D_R = 1 (R-CS 2/2) -> S = 100 * (0.25 + 0.3) / 0.8 = 68.75
    t = tree("t", many("lc", "C-LC", 2) + many("cs", "R-CS", 2) + many("ly", "P-LY", 2))
    s = score_report(t, passes(ids("lc", 2), 1) | passes(ids("cs", 2), 2) | {"ly00": "na", "ly01": "skipped"})
    assert set(s.dimensions) == {Dimension.C, Dimension.R}
    assert s.direction("P-LY").rate is None and s.direction("P-LY").weight is None
    assert s.total == pytest.approx(68.75)


def test_direction_without_applicable_atom_is_left_out_of_its_dimension():
    # C-AV all skipped: D_C uses C-LC alone = 1/4 -> S = 25 (content only)
    t = tree("t", many("lc", "C-LC", 4) + many("av", "C-AV", 3))
    s = score_report(t, passes(ids("lc", 4), 1) | {a: "skipped" for a in ids("av", 3)})
    assert s.total == pytest.approx(25.0)
    assert s.dimensions[Dimension.C].directions == 1
    assert s.direction("C-AV").skipped == 3


def test_evaluator_errors_leave_the_denominator():
    # 4 atoms: 2 pass, 1 fail, 1 skipped -> 2/3, not 2/4
    t = tree("t", many("lc", "C-LC", 4))
    s = score_report(t, {"lc00": "pass", "lc01": "pass", "lc02": "fail", "lc03": "skipped"})
    assert s.total == pytest.approx(100 * 2 / 3)
    assert s.skipped == 1


def test_atoms_without_a_decision_count_as_skipped_and_are_listed():
    t = tree("t", many("lc", "C-LC", 4))
    s = score_report(t, {"lc00": "pass", "lc01": "fail"})
    assert s.total == pytest.approx(50.0)
    assert s.skipped == 2
    assert s.missing_decisions == ["lc02", "lc03"]


def test_missing_or_unreadable_report_scores_zero_and_fails():
    t = tree("t", many("lc", "C-LC", 2))
    missing = score_report(t, None)
    unreadable = score_report(t, Decisions(task_id="t", failure="index.html does not parse"))
    for s in (missing, unreadable):
        assert s.failed and s.total == 0.0 and s.dimensions == {}
    assert unreadable.failure_reason == "index.html does not parse"


def test_report_with_no_applicable_atom_at_all_scores_zero_but_is_not_a_failure():
    t = tree("t", many("lc", "C-LC", 2))
    s = score_report(t, {"lc00": "skipped", "lc01": "na"})
    assert s.total == 0.0 and not s.failed and s.dimensions == {}


def test_difficulty_counts():
    from scoring_trees import atom

    t = tree("t", [atom("a", "C-LC", difficulty="L0"), atom("b", "C-LC", difficulty="L0"),
                   atom("c", "C-LC", difficulty="L2"), atom("d", "C-LC", difficulty="L3")])
    s = score_report(t, {"a": "pass", "b": "fail", "c": "pass", "d": "skipped"})
    got = {lv.value: (c.applicable, c.passed) for lv, c in s.difficulties.items()}
    assert got == {"L0": (2, 1), "L1": (0, 0), "L2": (1, 1), "L3": (0, 0)}


def test_result_round_trips_through_json():
    t = tree("t", many("fc", "C-FC", 20) + many("cs", "R-CS", 3))
    s = score_report(t, passes(ids("fc", 20), 2) | passes(ids("cs", 3), 1))
    assert ReportScore.model_validate_json(s.model_dump_json()) == s


# -- bad input ------------------------------------------------------------------------------------


def test_decision_for_an_atom_the_tree_lacks_is_named():
    t = tree("t", many("lc", "C-LC", 2))
    with pytest.raises(ScoringInputError, match=r"lacks: 'zz9'"):
        score_report(t, {"lc00": "pass", "lc01": "pass", "zz9": "pass"})


def test_unknown_direction_is_named_with_its_atoms():
    t = tree("t", many("lc", "C-LC", 1) + many("xx", "C-NOPE", 2))
    with pytest.raises(ScoringInputError, match=r"unknown direction 'C-NOPE' \(atoms 'xx00', 'xx01'\)"):
        score_report(t, {})


def test_duplicate_atom_ids_are_named():
    t = tree("t", many("lc", "C-LC", 2) + many("lc", "C-AV", 1))
    with pytest.raises(ScoringInputError, match="duplicate atom id 'lc00'"):
        score_report(t, {})


def test_decisions_for_another_task_are_rejected():
    t = tree("t", many("lc", "C-LC", 1))
    with pytest.raises(ScoringInputError, match="for task 'other'"):
        score_report(t, Decisions(task_id="other", decisions={"lc00": "pass"}))


def test_unknown_decision_word_is_rejected():
    t = tree("t", many("lc", "C-LC", 1))
    with pytest.raises(ScoringInputError, match="unknown decision 'yes'"):
        score_report(t, {"lc00": "yes"})


def test_all_zero_dimension_weights_are_rejected():
    t = tree("t", many("lc", "C-LC", 1))
    hp = Hyperparameters(dimension_weights={"C": 0, "R": 0, "P": 0})
    with pytest.raises(ScoringInputError, match="all zero"):
        score_report(t, {"lc00": "pass"}, hp)


def test_plain_mapping_decisions_accept_vote_objects_and_name_bad_ones():
    t = tree("t", many("vf", "C-VF", 1))
    assert score_report(t, {"vf00": {"votes": ["pass", "fail", "pass"]}}).total == pytest.approx(100.0)
    with pytest.raises(ScoringInputError, match="atom 'vf00': bad decision: 2 votes cannot give a majority"):
        score_report(t, {"vf00": {"votes": ["pass", "fail"]}})
