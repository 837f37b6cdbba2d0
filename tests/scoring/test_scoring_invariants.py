"""Randomized invariants of the report score (fixed seeds, so failures reproduce)."""

import random

import pytest
from scoring_trees import atom, tree

from omnidr.benchmark import Dimension, Hyperparameters, RubricTree, direction_inventory
from omnidr.scoring import check_na_order, score_report

DIRECTIONS = direction_inventory().directions
CASES = 300


def random_case(rng: random.Random, with_facts: bool = True) -> tuple[RubricTree, dict[str, str]]:
    """A random tree over the real inventory and random decisions (some N/A, skipped, missing)."""
    facts = [f"F{i}" for i in range(rng.randint(1, 8))]
    atoms = []
    for i in range(rng.randint(1, 70)):
        d = rng.choice(DIRECTIONS)
        fact = rng.choice(facts) if with_facts and d.dimension.value in "CR" and rng.random() < 0.7 else None
        atoms.append(atom(f"a{i:03d}", d.id, fact, "yes" if rng.random() < 0.9 else "no", f"L{rng.randint(0, 3)}"))
    p = rng.random()
    decisions = {}
    for a in atoms:
        u = rng.random()
        if u < 0.04:
            continue  # no decision: skipped
        decisions[a.id] = rng.choices(["pass", "fail", "na", "skipped"], [p, 1 - p, 0.05, 0.05])[0]
    return tree("t", atoms), decisions


def random_hyperparameters(rng: random.Random) -> Hyperparameters:
    w = [rng.random() for _ in range(3)]
    return Hyperparameters(dimension_weights=dict(zip("CRP", w, strict=True)), tau=rng.uniform(0.05, 1.0), kappa=rng.randint(1, 30))


@pytest.mark.parametrize("seed", range(3))
def test_scores_stay_in_0_100(seed):
    rng = random.Random(seed)
    for _ in range(CASES):
        t, d = random_case(rng)
        hp = random_hyperparameters(rng) if rng.random() < 0.5 else None
        for guard in (True, False):
            s = score_report(t, d, hp, na_guard=guard)
            assert 0.0 <= s.total <= 100.0
            for dim in s.dimensions.values():
                assert 0.0 <= dim.score <= 100.0 + 1e-9
            for x in s.directions:
                if x.rate is not None:
                    assert 0.0 <= x.rate <= 1.0 and 0.0 <= x.credited <= 1.0


def flips(d: dict[str, str]):
    for atom_id, outcome in d.items():
        if outcome == "fail":
            yield atom_id, d | {atom_id: "pass"}


@pytest.mark.parametrize("seed", range(3))
def test_flipping_one_atom_from_fail_to_pass_never_lowers_the_score_outside_the_guard(seed):
    rng = random.Random(100 + seed)
    for _ in range(CASES // 3):
        t, d = random_case(rng)
        hp = random_hyperparameters(rng) if rng.random() < 0.5 else None
        base = score_report(t, d, hp, na_guard=False).total
        for atom_id, flipped in flips(d):
            assert score_report(t, flipped, hp, na_guard=False).total >= base - 1e-9, atom_id


def test_without_fact_links_the_guard_never_acts_and_monotonicity_holds_with_it_on():
    rng = random.Random(7)
    for _ in range(CASES // 3):
        t, d = random_case(rng, with_facts=False)
        s = score_report(t, d)
        assert s.na_guard.candidates == 0
        for atom_id, flipped in flips(d):
            assert score_report(t, flipped).total >= s.total - 1e-9, atom_id


@pytest.mark.parametrize("seed", range(3))
def test_guard_record_is_consistent_and_every_applied_set_passes_eq5(seed):
    rng = random.Random(200 + seed)
    applied_seen = 0
    for _ in range(CASES):
        t, d = random_case(rng)
        hp = random_hyperparameters(rng) if rng.random() < 0.3 else None
        s = score_report(t, d, hp)
        g = s.na_guard
        assert g.applied + g.retracted == g.candidates
        assert set(g.applied_atoms) | set(g.retracted_atoms) == set(g.candidate_atoms)
        assert not set(g.applied_atoms) & set(g.retracted_atoms)
        assert len(g.steps) == g.retracted + (1 if g.applied else 0)
        if g.applied:
            applied_seen += 1
            assert g.delta_c > g.delta_r
            assert g.steps[-1].retracted is None
        for step in g.steps[:-1] if g.applied else g.steps:
            assert step.delta_c <= step.delta_r and step.retracted is not None
        check = check_na_order(t, d, s)
        guard_problems = [p for p in check.problems if not p.startswith("fact ")]
        assert guard_problems == []  # recorded set = re-run set, eligible, Delta_C > Delta_R, total re-aggregates
    assert applied_seen > 20  # the cases do exercise the guard


def test_guard_never_lowers_a_report_compared_with_no_guard():
    # Applied N/A only ever removes failed citation atoms, so the citation rates can only rise.
    rng = random.Random(11)
    for _ in range(CASES):
        t, d = random_case(rng)
        on, off = score_report(t, d), score_report(t, d, na_guard=False)
        for a, b in zip(on.directions, off.directions, strict=True):
            if a.dimension is Dimension.R and a.rate is not None and b.rate is not None:
                assert a.rate >= b.rate - 1e-12


def test_atom_order_in_the_tree_does_not_matter():
    rng = random.Random(5)
    for _ in range(CASES // 3):
        t, d = random_case(rng)
        atoms = list(t.atoms)
        rng.shuffle(atoms)
        shuffled = RubricTree(task_id=t.task_id, atoms=atoms)
        a, b = score_report(t, d), score_report(shuffled, d)
        assert a.total == pytest.approx(b.total, abs=1e-9)
        assert a.na_guard.applied_atoms == b.na_guard.applied_atoms
        assert a.na_guard.retracted_atoms == b.na_guard.retracted_atoms
