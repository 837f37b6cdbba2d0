"""Guarded citation N/A (App. A.4, Eq. 5) and the offline na-order check, worked out by hand."""

import pytest
from scoring_trees import atom, many, passes, tree

from omnidr.benchmark import Hyperparameters
from omnidr.scoring import check_na_order, score_report

TAU = 0.18


def ids(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i:02d}" for i in range(n)]


# -- a candidate that is kept -----------------------------------------------------------------------


def kept_case():
    """C-FC 20 atoms (2 pass); fc19 covers fact F1 and fails. R-CS 10 atoms (5 pass); cs09 cites F1, fails.
    P-LY 2 atoms, both pass."""
    atoms = many("fc", "C-FC", 19) + [atom("fc19", "C-FC", "F1")]
    atoms += many("cs", "R-CS", 9) + [atom("cs09", "R-CS", "F1")] + many("ly", "P-LY", 2)
    d = passes(ids("fc", 20), 2) | passes(ids("cs", 10), 5) | passes(ids("ly", 2), 2)
    return tree("t", atoms), d


def test_candidate_is_kept_when_content_gain_exceeds_citation_gain():
    t, d = kept_case()
    s = score_report(t, d)
    g = s.na_guard
    # Content: only C-FC, n = 20, r = 0.1 < tau, w = 15, normalized weight 1, gamma = 1/0.18:
    #   Delta_C = 0.5 * 1 * (1/0.18) / 20 = 0.13889
    # Citation: only R-CS, n = 10, r = 0.5, normalized weight 1, k = 1:
    #   Delta_R = 0.3 * 1 * 0.5 * 1 / 9 = 0.016667
    assert g.delta_c == pytest.approx(0.5 / TAU / 20)
    assert g.delta_r == pytest.approx(0.3 * 0.5 / 9)
    assert (g.candidates, g.applied, g.retracted) == (1, 1, 0)
    assert g.applied_atoms == ["cs09"] and g.candidate_atoms == ["cs09"]
    cs = s.direction("R-CS")
    assert (cs.applicable, cs.guard_na, cs.failed) == (9, 1, 4)
    # S = 100 * (0.5 * 5/9 + 0.3 * 5/9 + 0.2 * 1) = 64.444
    assert s.total == pytest.approx(100 * (0.8 * 5 / 9 + 0.2))


def test_without_the_guard_the_candidate_stays_failed():
    t, d = kept_case()
    s = score_report(t, d, na_guard=False)
    g = s.na_guard
    assert not g.enabled and (g.candidates, g.applied) == (1, 0)
    # S = 100 * (0.5 * 5/9 + 0.3 * 0.5 + 0.2) = 62.778
    assert s.total == pytest.approx(100 * (0.5 * 5 / 9 + 0.15 + 0.2))


def test_na_order_check_passes_on_a_kept_candidate():
    t, d = kept_case()
    saved = score_report(t, d)
    check = check_na_order(t, d, saved)
    assert check.ok, check.problems
    assert check.applied_atoms == ["cs09"]
    [fact] = check.facts
    # stated but uncited: fc19 passes (C-FC r = 0.15 -> c = 0.8333), cs09 stays fail (R-CS 0.5):
    # S = 100 * (0.5 * 0.15/0.18 + 0.3 * 0.5 + 0.2) = 76.667 > 64.444 (omitted)
    assert fact.fact_id == "F1"
    assert fact.stated_total == pytest.approx(100 * (0.5 * 0.15 / TAU + 0.15 + 0.2))
    assert fact.omitted_total == pytest.approx(saved.total)


# -- candidates rolled back ----------------------------------------------------------------------


def test_saturated_coverage_rolls_the_candidate_back():
    # C-FC 10 atoms, 2 pass: r = 0.2 >= tau -> gamma = 0 -> Delta_C = 0 <= Delta_R: restored to fail.
    atoms = many("fc", "C-FC", 9) + [atom("fc09", "C-FC", "F1")] + many("cs", "R-CS", 3) + [atom("cs03", "R-CS", "F1")]
    t = tree("t", atoms)
    d = passes(ids("fc", 10), 2) | passes(ids("cs", 4), 1)
    s = score_report(t, d)
    g = s.na_guard
    assert (g.candidates, g.applied, g.retracted) == (1, 0, 1)
    assert g.retracted_atoms == ["cs03"] and g.applied_atoms == []
    assert (g.delta_c, g.delta_r) == (None, None)
    step = g.steps[0]
    assert step.delta_c == 0.0 and step.delta_r == pytest.approx(0.3 * (1 / 4) * 1 / 3)
    assert step.retracted == "cs03"
    assert s.total == pytest.approx(score_report(t, d, na_guard=False).total)


def test_zero_citation_gain_and_zero_content_gain_still_roll_back():
    # Both readings 0 (saturated content, citation rate 0): Delta_C <= Delta_R holds with equality -> restore.
    atoms = many("fc", "C-FC", 4) + [atom("fc04", "C-FC", "F1")] + many("cs", "R-CS", 1) + [atom("cs01", "R-CS", "F1")]
    t = tree("t", atoms)
    s = score_report(t, passes(ids("fc", 5), 1) | {"cs00": "fail", "cs01": "fail"})  # FC r = 0.2
    assert s.na_guard.steps[0].delta_c == 0.0 and s.na_guard.steps[0].delta_r == 0.0
    assert s.na_guard.applied == 0 and s.na_guard.retracted == 1


def rollback_case():
    """Two content directions, three candidates over two facts; the guard restores two of them.

    C-FC: 20 atoms, fc00-fc01 pass; fc18 covers F9 and fc19 covers F2 (both fail).
    C-LC: 45 atoms, lc00-lc01 pass; no fact (a logical-consistency atom is no coverage check).
    R-CS: 10 atoms, cs00-cs05 pass; cs06 cites F2, cs07 and cs09 cite F9, cs08 has no fact.
    P-LY: 2 atoms pass.
    """
    atoms = many("fc", "C-FC", 18) + [atom("fc18", "C-FC", "F9"), atom("fc19", "C-FC", "F2")]
    atoms += many("lc", "C-LC", 45)
    atoms += many("cs", "R-CS", 6) + [atom("cs06", "R-CS", "F2"), atom("cs07", "R-CS", "F9"),
                                      atom("cs08", "R-CS"), atom("cs09", "R-CS", "F9")]
    atoms += many("ly", "P-LY", 2)
    d = passes(ids("fc", 20), 2) | passes(ids("lc", 45), 2) | passes(ids("cs", 10), 6) | passes(ids("ly", 2), 2)
    return tree("t", atoms), d


# Pre-removal weights: C-FC n = 20, w = 15; C-LC n = 45, w = 45 -> C-FC normalized 0.25.
# C-FC marginal = 0.5 * 0.25 * (1/0.18) / 20 = 0.034722 (r = 0.1 < tau): both facts read it.
ROLLBACK_DC = 0.5 * 0.25 / TAU / 20


def test_rollback_order_most_proposals_first_then_smallest_fact_id_then_smallest_atom_id():
    t, d = rollback_case()
    g = score_report(t, d).na_guard
    # R-CS: n = 10, r = 0.6, normalized weight 1.
    # 1) proposed {cs06, cs07, cs09}: Delta_C = 0.034722, Delta_R = 0.3 * 0.6 * 3/7 = 0.077143 -> restore:
    #    F9 has most proposals (2) -> its smallest atom id, cs07.
    # 2) proposed {cs06, cs09}: Delta_C = 0.034722, Delta_R = 0.3 * 0.6 * 2/8 = 0.045 -> restore:
    #    F2 and F9 tie with one each -> smallest fact id F2 -> cs06.
    # 3) proposed {cs09}: Delta_C = 0.034722 > Delta_R = 0.3 * 0.6 * 1/9 = 0.02 -> holds.
    assert g.candidate_atoms == ["cs06", "cs07", "cs09"]
    assert g.retracted_atoms == ["cs07", "cs06"]
    assert g.applied_atoms == ["cs09"]
    assert (g.candidates, g.applied, g.retracted) == (3, 1, 2)
    expected = [(3, ROLLBACK_DC, 0.3 * 0.6 * 3 / 7, "cs07"), (2, ROLLBACK_DC, 0.3 * 0.6 * 2 / 8, "cs06"),
                (1, ROLLBACK_DC, 0.02, None)]
    got = [(s.proposed, s.delta_c, s.delta_r, s.retracted) for s in g.steps]
    assert got == [(p, pytest.approx(c), pytest.approx(r), a) for p, c, r, a in expected]
    assert (g.delta_c, g.delta_r) == (pytest.approx(ROLLBACK_DC), pytest.approx(0.02))
    assert ROLLBACK_DC == pytest.approx(0.034722, abs=1e-6)  # for the record


def test_rollback_case_score():
    t, d = rollback_case()
    s = score_report(t, d)
    # D_C = (15 * 0.1/0.18 + 45 * 2/45) / 60 = 0.172222; R-CS 6 / 9 after cs09 leaves; D_P = 1
    # S = 100 * (0.5 * 0.172222 + 0.3 * 2/3 + 0.2) = 48.6111
    assert s.total == pytest.approx(100 * (0.5 * (15 * 0.1 / TAU + 2) / 60 + 0.3 * 2 / 3 + 0.2))


def test_na_order_check_on_the_rollback_case():
    t, d = rollback_case()
    check = check_na_order(t, d, score_report(t, d))
    assert check.ok, check.problems
    [fact] = check.facts
    # F9 stated (fc18 passes: C-FC 0.15 -> D_C = (15 * 0.15/0.18 + 2) / 60 = 0.241667); the re-run guard
    # applies cs06 (Delta_C 0.034722 > Delta_R 0.02): R-CS 6/9.  S = 100 * (0.5 * 0.241667 + 0.2 + 0.2) = 52.083
    assert fact.fact_id == "F9"
    assert fact.stated_total == pytest.approx(100 * (0.5 * (15 * 0.15 / TAU + 2) / 60 + 0.2 + 0.2))
    assert fact.stated_total > fact.omitted_total


def test_na_order_check_flags_an_applied_set_the_guard_would_not_keep():
    t, d = rollback_case()
    saved = score_report(t, d)
    tampered = saved.model_copy(update={"na_guard": saved.na_guard.model_copy(
        update={"applied_atoms": ["cs06", "cs07", "cs09"], "applied": 3})})
    check = check_na_order(t, d, tampered)
    assert not check.ok
    assert any("fails the guard" in p for p in check.problems)
    assert any("differs from the re-run guard" in p for p in check.problems)


def test_na_order_check_flags_a_non_candidate_set_na():
    t, d = rollback_case()
    saved = score_report(t, d)
    tampered = saved.model_copy(update={"na_guard": saved.na_guard.model_copy(update={"applied_atoms": ["cs08"]})})
    check = check_na_order(t, d, tampered)
    assert any("'cs08' is set N/A but is not an eligible candidate" in p for p in check.problems)


def test_na_order_check_flags_a_total_that_does_not_re_aggregate():
    t, d = kept_case()
    saved = score_report(t, d)
    check = check_na_order(t, d, saved.model_copy(update={"total": 99.0}))
    assert any("saved total" in p for p in check.problems)


# -- who is a candidate ----------------------------------------------------------------------------


def candidates(atoms, d) -> list[str]:
    return score_report(tree("t", atoms), d).na_guard.candidate_atoms


def test_a_passing_coverage_atom_means_the_fact_was_stated():
    atoms = [atom("c1", "C-FC", "F"), atom("c2", "C-FC", "F"), atom("r1", "R-CS", "F")]
    assert candidates(atoms, {"c1": "fail", "c2": "pass", "r1": "fail"}) == []
    assert candidates(atoms, {"c1": "fail", "c2": "fail", "r1": "fail"}) == ["r1"]


@pytest.mark.parametrize("direction", ["C-CA", "C-CMP", "C-LC", "C-AV", "C-XV", "C-UC", "C-QR", "C-AP", "C-VF"])
def test_only_coverage_checks_make_candidates(direction):
    """App. A.4: "Failure to explain a mechanism or solve a reasoning problem alone is not evidence of
    omission": a failed atom of any other content direction linked to the fact neither makes its
    citation atom a candidate nor, passing, keeps one from being a candidate."""
    alone = [atom("c2", direction, "F"), atom("r1", "R-CS", "F"), atom("x", "C-FC")]
    assert candidates(alone, {"c2": "fail", "r1": "fail", "x": "pass"}) == []
    beside = [atom("c1", "C-FC", "F"), atom("c2", direction, "F"), atom("r1", "R-CS", "F")]
    assert candidates(beside, {"c1": "fail", "c2": "pass", "r1": "fail"}) == ["r1"]


def test_a_failed_causal_analysis_atom_does_not_raise_the_score():
    """The issue's case: one failed causal-analysis atom linked to a fact, its citation atom failed.
    The citation atom stays a failure (no N/A), so the score is what the plain rates give."""
    atoms = many("fc", "C-FC", 10) + [atom("ca", "C-CA", "F"), atom("cs", "R-CS", "F")] + many("sc", "R-SC", 3)
    d = passes(ids("fc", 10), 10) | {"ca": "fail", "cs": "fail"} | passes(ids("sc", 3), 3)
    s = score_report(tree("t", atoms), d)
    assert s.na_guard.candidates == 0 and s.direction("R-CS").failed == 1
    # C: FC 10/10 -> 1 (w 10), CA 0/1 -> 0 (w 1): 10/11.  R: CS 0/1 (w 1), SC 3/3 (w 3): 3/4.
    assert s.total == pytest.approx(100 * (0.5 * 10 / 11 + 0.3 * 3 / 4) / 0.8)


def test_unscored_coverage_is_no_evidence_of_omission():
    atoms = [atom("c1", "C-FC", "F"), atom("c2", "C-FC", "F"), atom("r1", "R-CS", "F"), atom("x", "C-LC")]
    assert candidates(atoms, {"c1": "skipped", "c2": "na", "r1": "fail", "x": "pass"}) == []
    # one scored failure among unscored ones is enough
    assert candidates(atoms, {"c1": "skipped", "c2": "fail", "r1": "fail", "x": "pass"}) == ["r1"]


def test_negative_polarity_content_atoms_are_not_coverage_links():
    atoms = [atom("c1", "C-FC", "F", polarity="no"), atom("r1", "R-CS", "F"), atom("x", "C-LC")]
    assert candidates(atoms, {"c1": "fail", "r1": "fail", "x": "pass"}) == []
    atoms2 = [atom("c1", "C-FC", "F"), atom("c2", "C-LC", "F", polarity="no"), atom("r1", "R-CS", "F")]
    assert candidates(atoms2, {"c1": "fail", "c2": "pass", "r1": "fail"}) == ["r1"]


def test_presentation_atoms_are_not_coverage_and_passing_citations_are_never_candidates():
    atoms = [atom("p1", "P-IT", "F"), atom("r1", "R-CS", "F"), atom("c1", "C-FC", "G"), atom("r2", "R-SA", "G")]
    assert candidates(atoms, {"p1": "fail", "r1": "fail", "c1": "fail", "r2": "pass"}) == []


def test_guard_depends_on_lambda():
    # The kept case with lambda_C = 0.05: Delta_C = 0.05 / 0.18 / 20 = 0.01389 <= Delta_R = 0.3 * 0.5 / 9 = 0.01667
    t, d = kept_case()
    hp = Hyperparameters(dimension_weights={"C": 0.05, "R": 0.3, "P": 0.2})
    g = score_report(t, d, hp).na_guard
    assert (g.applied, g.retracted) == (0, 1)


def test_na_order_check_reports_the_inversion_eq5_cannot_see():
    """Eq. 5 leaves out a citation direction whose atoms would all be removed (n_j = k_j). Removing
    them drops the direction, which the guard does not price; the check reports the inversion.

    C-FC 20 atoms, 1 passes; fc19 covers F (fails). R-CS has one atom, cs00, citing F (fails);
    R-SC one passing atom. No presentation atoms.
    Guard: Delta_C = 0.5 * 1 * (1/0.18) / 20 = 0.138889; R-CS has n = k = 1 so Delta_R = 0 -> cs00 is N/A.
    Omitted: D_C = 0.05/0.18 = 0.277778, D_R = 1 (R-SC only)  -> S = 100 * (0.138889 + 0.3) / 0.8 = 54.8611
    Stated:  D_C = 0.10/0.18 = 0.555556, D_R = (0 + 1) / 2     -> S = 100 * (0.277778 + 0.15) / 0.8 = 53.4722
    """
    atoms = many("fc", "C-FC", 19) + [atom("fc19", "C-FC", "F"), atom("cs00", "R-CS", "F"), atom("sc00", "R-SC")]
    t = tree("t", atoms)
    d = passes(ids("fc", 20), 1) | {"cs00": "fail", "sc00": "pass"}
    s = score_report(t, d)
    omitted = 100 * (0.5 * 0.05 / TAU + 0.3) / 0.8
    stated = 100 * (0.5 * 0.10 / TAU + 0.3 * 0.5) / 0.8
    assert s.na_guard.applied_atoms == ["cs00"]
    assert (s.na_guard.delta_c, s.na_guard.delta_r) == (pytest.approx(0.5 / TAU / 20), 0.0)
    assert s.total == pytest.approx(omitted)
    check = check_na_order(t, d, s)
    assert not check.ok
    [fact] = check.facts
    assert (fact.omitted_total, fact.stated_total) == (pytest.approx(omitted), pytest.approx(stated))
    assert check.problems == [f"fact 'F': omitted scores {omitted:.4f}, above stated-but-uncited {stated:.4f}"]


# -- exact ties ------------------------------------------------------------------------------------


def tie_case():
    """Delta_C = Delta_R = 0.2 exactly (tau 0.5, lambda 0.4 / 0.4 / 0.2), which floats read as
    0.20000000000000004 > 0.2.

    C-FC 3 atoms, all fail; fc2 covers F.  C-LC 1 atom, passes.  R-CS: cs0 passes, cs1 cites F and fails.
    P-LY 1 atom, passes.
    Delta_C = 0.4 * (3/4) * (1/0.5) / 3 = 0.2;  Delta_R = 0.4 * 1 * (1/2) * 1/(2 - 1) = 0.2.
    """
    atoms = many("fc", "C-FC", 2) + [atom("fc2", "C-FC", "F"), atom("lc0", "C-LC"), atom("cs0", "R-CS"),
                                     atom("cs1", "R-CS", "F"), atom("ly0", "P-LY")]
    d = {"fc00": "fail", "fc01": "fail", "fc2": "fail", "lc0": "pass", "cs0": "pass", "cs1": "fail", "ly0": "pass"}
    hp = Hyperparameters(dimension_weights={"C": 0.4, "R": 0.4, "P": 0.2}, tau=0.5)
    return tree("t", atoms), d, hp


def test_an_exact_tie_restores_the_candidate():
    """Eq. 5 keeps N/A "only while Delta_C > Delta_R": at a tie the candidate is restored."""
    t, d, hp = tie_case()
    s = score_report(t, d, hp)
    assert s.na_guard.candidate_atoms == ["cs1"] and s.na_guard.retracted_atoms == ["cs1"]
    assert s.na_guard.applied == 0
    [step] = s.na_guard.steps
    assert step.delta_c == step.delta_r == 0.2 and step.retracted == "cs1"
    # C: FC 0/3 (w 3), LC 1/1 (w 1) -> 1/4;  R: CS 1/2;  P: 1.  S = 100 * (0.1 + 0.2 + 0.2) = 50, not 70.
    assert s.total == pytest.approx(50.0)


def test_na_order_refuses_an_applied_set_at_a_tie():
    t, d, hp = tie_case()
    saved = score_report(t, d, hp)
    tampered = saved.model_copy(update={"na_guard": saved.na_guard.model_copy(update={"applied_atoms": ["cs1"]})})
    check = check_na_order(t, d, tampered, hp)
    assert any("fails the guard: Delta_C 0.2 <= Delta_R 0.2" in p for p in check.problems), check.problems


# -- a coverage check outside fact coverage: gamma = 1 --------------------------------------------


def ordinary_direction_case(xv_covers: bool):
    """C-FC 20 atoms (2 pass), fc19 states F1 and fails; C-XV 10 atoms (5 pass), xv09 states F1 and fails (a
    coverage check only when marked so); R-CS 10 atoms (9 pass), cs09 cites F1 and fails; P-LY 2, both pass."""
    xv09 = atom("xv09", "C-XV", "F1").model_copy(update={"coverage": True if xv_covers else None})
    atoms = many("fc", "C-FC", 19) + [atom("fc19", "C-FC", "F1")] + many("xv", "C-XV", 9) + [xv09]
    atoms += many("cs", "R-CS", 9) + [atom("cs09", "R-CS", "F1")] + many("ly", "P-LY", 2)
    d = passes(ids("fc", 20), 2) | passes(ids("xv", 10), 5) | passes(ids("cs", 10), 9) | passes(ids("ly", 2), 2)
    return tree("t", atoms), d


def test_an_ordinary_content_direction_enters_the_guard_with_gamma_one():
    """Eq. 5: gamma_d is 1 "for an ordinary direction without saturation". With xv09 a coverage check, B holds
    C-FC and C-XV and the smaller marginal, C-XV's, decides; without it, C-FC alone keeps the candidate."""
    t, d = ordinary_direction_case(xv_covers=True)
    s = score_report(t, d)
    g = s.na_guard
    # weights: C-FC min(20, kappa 15) = 15, C-XV 10 (no cap), content total 25
    # C-FC: gamma = 1/0.18 (r = 0.1 < tau): 0.5 * 15/25 * (1/0.18) / 20 = 0.083333
    # C-XV: gamma = 1:                      0.5 * 10/25 * 1 / 10       = 0.02  <- Delta_C, the minimum
    # R-CS: r = 0.9 before removal, k = 1:  0.3 * 1 * 0.9 * 1 / 9      = 0.03  = Delta_R > Delta_C: retracted
    assert (g.candidates, g.applied, g.retracted) == (1, 0, 1) and g.retracted_atoms == ["cs09"]
    [step] = [st for st in g.steps if st.delta_c is not None][:1]
    assert step.delta_c == pytest.approx(0.5 * 10 / 25 / 10) and step.delta_r == pytest.approx(0.3 * 0.9 / 9)
    # C: (15 * min(1, 0.1/0.18) + 10 * 0.5) / 25 = 0.53333; R-CS 9/10; S = 100 * (0.5 * 0.53333 + 0.3 * 0.9 + 0.2)
    assert s.total == pytest.approx(100 * (0.5 * (15 * 0.1 / TAU + 5) / 25 + 0.3 * 0.9 + 0.2))

    t, d = ordinary_direction_case(xv_covers=False)
    s = score_report(t, d)
    # only C-FC links F1: Delta_C = 0.083333 > Delta_R = 0.03, so cs09 becomes N/A and R-CS reads 9/9
    assert (s.na_guard.applied, s.na_guard.retracted) == (1, 0)
    assert s.na_guard.delta_c == pytest.approx(0.5 * 15 / 25 / TAU / 20)
    assert s.total == pytest.approx(100 * (0.5 * (15 * 0.1 / TAU + 5) / 25 + 0.3 + 0.2))


def test_a_coverage_check_must_state_a_fact_of_a_content_direction():
    from pydantic import ValidationError

    from omnidr.benchmark import Atom
    from omnidr.scoring import ScoringInputError

    for spec in (atom("xv00", "C-XV"), atom("xv00", "C-XV", "F1", polarity="no")):  # no fact; a negative check
        with pytest.raises(ValidationError, match="a coverage check needs a fact_id and polarity yes"):
            Atom.model_validate({**spec.model_dump(), "coverage": True})
    cited = atom("cs00", "R-CS", "F1").model_copy(update={"coverage": True})
    with pytest.raises(ScoringInputError, match="'cs00' is marked a coverage check, but R-CS is not a content"):
        score_report(tree("t", [cited, atom("fc00", "C-FC", "F1")]), {"cs00": "fail", "fc00": "fail"})
