"""The Omni-ART score of one report (paper Sec. 3.3 Eq. 2-3, App. A.4 Eq. 4-5).

Scoring runs in three steps so that re-aggregation under other parameters is cheap:

1. `compile_tree` indexes a rubric tree once (directions, fact links); it checks the tree.
2. `prepare` joins the tree with one report's decisions: outcomes, counts per direction and the
   N/A candidates. Nothing here depends on lambda, tau or kappa.
3. `evaluate` runs the guard and the aggregation for one parameter set.

`score_report` does all three and returns the pydantic `ReportScore`.
"""

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from pydantic import ValidationError

from omnidr.benchmark import (
    Difficulty,
    Dimension,
    Direction,
    DirectionInventory,
    GateLogic,
    Hyperparameters,
    Polarity,
    RubricTree,
    direction_inventory,
)

from ._decisions import AtomDecision, Decisions
from ._errors import ScoringInputError
from ._rationale import FAILURE_KINDS, failure_kind
from ._report_models import ReportScore, ScoringSettings

DIMENSIONS = (Dimension.C, Dimension.R, Dimension.P)
_DIFFICULTIES = tuple(Difficulty)


def _names(items: list[str], limit: int = 5) -> str:
    shown = ", ".join(f"'{i}'" for i in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def settings_from(hyperparameters: Hyperparameters | None = None, na_guard: bool = True) -> ScoringSettings:
    """The scoring parameters of a hyperparameter set (released values when None)."""
    hp = hyperparameters or Hyperparameters()
    w = hp.dimension_weights
    if w.C + w.R + w.P <= 0:
        raise ScoringInputError("dimension weights lambda C, R, P are all zero; give at least one positive weight")
    return ScoringSettings(lambda_C=w.C, lambda_R=w.R, lambda_P=w.P, tau=hp.tau, kappa=hp.kappa, na_guard=na_guard)


# ----------------------------------------------------------------------------------------------
# 1. the tree


@dataclass(frozen=True)
class CompiledTree:
    """A rubric tree indexed for scoring. Build it with `compile_tree`."""

    task_id: str
    atom_ids: tuple[str, ...]
    index: Mapping[str, int]
    directions: tuple[Direction, ...]  # directions used by the tree, inventory order
    atom_direction: tuple[int, ...]  # atom -> position in `directions`
    atom_level: tuple[int, ...]  # atom -> position of its difficulty in L0-L3
    coverage_links: Mapping[str, tuple[int, ...]]  # fact id -> positive-polarity atoms of coverage directions
    coverage_atoms: tuple[tuple[int, str], ...]  # the same links as (atom, fact) pairs
    citation_fact_atoms: tuple[tuple[int, str], ...]  # citation atoms whose fact has coverage links
    # App. F.3's coverage criteria, whose failures its rationale breakdown reads: the positive atoms of the three
    # high-volume ("coverage-direction") directions, and every coverage check of App. A.4
    coverage_criteria: frozenset[int] = frozenset()


def compile_tree(tree: RubricTree, inventory: DirectionInventory | None = None) -> CompiledTree:
    """Index `tree` for scoring; unknown directions and duplicate atom ids are errors naming them."""
    by_id = (inventory or direction_inventory()).by_id()
    unknown = sorted({a.direction for a in tree.atoms if a.direction not in by_id})
    if unknown:
        atoms = [a.id for a in tree.atoms if a.direction in unknown]
        raise ScoringInputError(
            f"task {tree.task_id}: unknown direction {_names(unknown)} (atoms {_names(atoms)}); "
            "use a direction id of the Omni-ART inventory"
        )
    dups = sorted(atom_id for atom_id, n in Counter(a.id for a in tree.atoms).items() if n > 1)
    if dups:
        raise ScoringInputError(f"task {tree.task_id}: duplicate atom id {_names(dups)}; atom ids must be unique")
    used = {a.direction for a in tree.atoms}
    order = [d for d in (inventory or direction_inventory()).directions if d.id in used]
    pos = {d.id: i for i, d in enumerate(order)}
    links: dict[str, list[int]] = defaultdict(list)
    for i, a in enumerate(tree.atoms):
        # App. A.4: only coverage checks link a fact: the atoms of a direction flagged `coverage` (fact coverage),
        # and an atom of another content direction that says it is one (`Atom.coverage`)
        coverage = by_id[a.direction].coverage if a.coverage is None else a.coverage
        if coverage and by_id[a.direction].dimension is not Dimension.C:
            raise ScoringInputError(f"task {tree.task_id}: atom '{a.id}' is marked a coverage check, but "
                                    f"{a.direction} is not a content direction; only content atoms state facts")
        if a.fact_id is not None and a.polarity is Polarity.yes and coverage:
            links[a.fact_id].append(i)
    citation = tuple(
        (i, a.fact_id)
        for i, a in enumerate(tree.atoms)
        if a.fact_id in links and by_id[a.direction].dimension is Dimension.R
    )
    return CompiledTree(
        task_id=tree.task_id,
        atom_ids=tuple(a.id for a in tree.atoms),
        index={a.id: i for i, a in enumerate(tree.atoms)},
        directions=tuple(order),
        atom_direction=tuple(pos[a.direction] for a in tree.atoms),
        atom_level=tuple(_DIFFICULTIES.index(a.difficulty) for a in tree.atoms),
        coverage_links={f: tuple(v) for f, v in links.items()},
        coverage_atoms=tuple(sorted((i, f) for f, v in links.items() for i in v)),
        citation_fact_atoms=citation,
        coverage_criteria=frozenset(i for i, a in enumerate(tree.atoms) if a.polarity is Polarity.yes and
                                    by_id[a.direction].high_volume).union(*links.values()),
    )


# ----------------------------------------------------------------------------------------------
# 2. the tree joined with one report's decisions


@dataclass
class PreparedReport:
    """One report's decisions on a compiled tree; independent of lambda, tau and kappa."""

    tree: CompiledTree
    outcomes: list[str]  # per atom: pass / fail / na / skipped
    missing: list[str]  # atom ids without a decision (scored as skipped)
    passed: list[int]  # per direction
    failed: list[int]
    judged_na: list[int]
    skipped: list[int]
    level_passed: list[int]  # per difficulty level (L0-L3), before the guard
    level_failed: list[int]
    candidates: list[int]  # atom positions of N/A candidates, sorted by atom id
    candidate_fact: dict[int, str]
    fact_directions: dict[str, frozenset[int]]  # candidate fact -> content directions of its scored coverage atoms
    failure: str | None = None
    judge: str | None = None
    failed_coverage: dict[str, int] = field(default_factory=dict)  # failed coverage criteria by `failure_kind`


_OUTCOMES = frozenset(("pass", "fail", "na", "skipped"))


def prepare(tree: CompiledTree, decisions: Decisions | Mapping[str, AtomDecision | str]) -> PreparedReport:
    """Join the tree and the decisions. Decisions for atoms the tree lacks are an error naming them;
    atoms without a decision are skipped and listed in `missing`."""
    failure = judge = None
    if isinstance(decisions, Decisions):
        judge = decisions.judge
        if decisions.task_id != tree.task_id:
            raise ScoringInputError(
                f"decisions are for task '{decisions.task_id}' but the rubric tree is for task '{tree.task_id}'"
            )
        failure = decisions.failure
        given: Mapping[str, AtomDecision | str] = decisions.decisions
    else:
        given = decisions
    extra = sorted(k for k in given if k not in tree.index)
    if extra:
        raise ScoringInputError(
            f"task {tree.task_id}: decisions name {len(extra)} atom(s) the rubric tree lacks: {_names(extra)}"
        )
    n_dir = len(tree.directions)
    per_direction = {o: [0] * n_dir for o in _OUTCOMES}
    per_level = {"pass": [0] * len(_DIFFICULTIES), "fail": [0] * len(_DIFFICULTIES)}
    outcomes: list[str] = []
    missing: list[str] = []
    failed_coverage: dict[str, int] = dict.fromkeys(FAILURE_KINDS, 0)
    for i, (atom_id, d, level) in enumerate(zip(tree.atom_ids, tree.atom_direction, tree.atom_level, strict=True)):
        dec = given.get(atom_id)
        rationale = dec.rationale if isinstance(dec, AtomDecision) else None
        if dec is None:
            missing.append(atom_id)
            outcome = "skipped"
        elif isinstance(dec, str):
            if dec not in _OUTCOMES:
                raise ScoringInputError(
                    f"task {tree.task_id}: atom '{atom_id}': unknown decision '{dec}'; use pass, fail, na or skipped"
                )
            outcome = dec
        elif isinstance(dec, AtomDecision):
            outcome = dec.decided
        else:  # a plain mapping such as {"votes": [...]}
            try:
                parsed = AtomDecision.model_validate(dec)
                outcome, rationale = parsed.decided, parsed.rationale
            except ValidationError as exc:
                why = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors(include_url=False))
                raise ScoringInputError(f"task {tree.task_id}: atom '{atom_id}': bad decision: {why}") from None
        outcomes.append(outcome)
        if outcome == "fail" and i in tree.coverage_criteria:
            failed_coverage[failure_kind(rationale)] += 1
        per_direction[outcome][d] += 1
        if outcome == "pass" or outcome == "fail":
            per_level[outcome][level] += 1

    # N/A candidates (App. A.4): failed citation atoms whose fact has linked coverage atoms with
    # at least one scored decision, all of them fail.
    failed_in: dict[str, set[int]] = {}
    stated: set[str] = set()
    for i, fact in tree.coverage_atoms:
        o = outcomes[i]
        if o == "fail":
            failed_in.setdefault(fact, set()).add(tree.atom_direction[i])
        elif o == "pass":
            stated.add(fact)
    candidate_fact = {
        i: fact for i, fact in tree.citation_fact_atoms
        if outcomes[i] == "fail" and fact in failed_in and fact not in stated
    }
    candidates = sorted(candidate_fact, key=tree.atom_ids.__getitem__)
    fact_directions = {f: frozenset(failed_in[f]) for f in set(candidate_fact.values())}
    return PreparedReport(
        tree, outcomes, missing, per_direction["pass"], per_direction["fail"], per_direction["na"],
        per_direction["skipped"], per_level["pass"], per_level["fail"], candidates, candidate_fact, fact_directions,
        failure, judge, failed_coverage,
    )


# ----------------------------------------------------------------------------------------------
# 3. guard and aggregation for one parameter set


def _weight(direction: Direction, n: int, kappa: int) -> int:
    return min(n, kappa) if direction.high_volume else n


def exact(value: float) -> Fraction:
    """A parameter as the decimal it was written as (0.18 -> 9/50), not as its nearest binary float."""
    return Fraction(repr(float(value)))


class GuardReadings:
    """The fixed, pre-removal quantities of Eq. 5 for one report and one parameter set; `read`
    gives (Delta_C, Delta_R) for any set of still-proposed candidates.

    Eq. 5 keeps the N/A set "only while Delta_C > Delta_R", so an exact tie must restore a candidate.
    In floats a tie is decided by the last bit (0.1 > 0.09999999999999999), so the readings are
    exact fractions of the decimal lambda and tau and of the atom counts; they are compared exactly
    and reported as floats."""

    def __init__(self, prep: PreparedReport, settings: ScoringSettings):
        dirs = prep.tree.directions
        n = [p + f for p, f in zip(prep.passed, prep.failed, strict=True)]
        w = [_weight(d, n_d, settings.kappa) for d, n_d in zip(dirs, n, strict=True)]
        content = [i for i, d in enumerate(dirs) if d.dimension is Dimension.C and n[i] > 0]
        citation = [i for i, d in enumerate(dirs) if d.dimension is Dimension.R and n[i] > 0]
        w_c = sum(w[i] for i in content)
        w_r = sum(w[i] for i in citation)
        tau, lambda_c = exact(settings.tau), exact(settings.lambda_C)
        marginal: dict[int, Fraction] = {}
        for i in content:
            r = Fraction(prep.passed[i], n[i])
            if dirs[i].high_volume:
                gamma = 1 / tau if r < tau else Fraction(0)
            else:
                gamma = Fraction(1)
            marginal[i] = lambda_c * Fraction(w[i], w_c) * gamma / n[i]
        # Delta_C over a set of facts is the smallest per-direction marginal among their directions.
        self.fact_marginal = {f: min(marginal[i] for i in ds) for f, ds in prep.fact_directions.items()}
        self.citation = {j: (n[j], Fraction(prep.passed[j], n[j]), Fraction(w[j], w_r)) for j in citation}
        self.lambda_R = exact(settings.lambda_R)
        self.atom_direction = prep.tree.atom_direction
        self.candidate_fact = prep.candidate_fact

    def read(self, proposed: list[int]) -> tuple[Fraction, Fraction]:
        """(Delta_C, Delta_R) with `proposed` (atom positions) still proposed for N/A; needs one at least."""
        k: dict[int, int] = defaultdict(int)
        for i in proposed:
            k[self.atom_direction[i]] += 1
        return self.read_counts({self.candidate_fact[i] for i in proposed}, k)

    def read_counts(self, facts, k: Mapping[int, int]) -> tuple[Fraction, Fraction]:
        """(Delta_C, Delta_R) for the facts that still have proposals and k_j per citation direction."""
        delta_c = min(self.fact_marginal[f] for f in facts)
        delta_r = Fraction(0)
        for j, k_j in k.items():
            n_j, r_j, w_j = self.citation[j]
            if n_j > k_j:
                delta_r += w_j * r_j * k_j / (n_j - k_j)
        return delta_c, self.lambda_R * delta_r


@dataclass
class GuardResult:
    applied: list[int] = field(default_factory=list)
    retracted: list[int] = field(default_factory=list)
    steps: list[tuple[int, float, float, int | None]] = field(default_factory=list)
    delta_c: float | None = None
    delta_r: float | None = None


def run_guard(prep: PreparedReport, settings: ScoringSettings) -> GuardResult:
    """The guarded citation N/A procedure (App. A.4, Eq. 5).

    All candidates start proposed. While some remain and Delta_C <= Delta_R (compared exactly, see
    `GuardReadings`), one is restored to
    fail: from the fact with the most proposals (ties: smallest fact id), the candidate with the
    smallest atom id (plain string order); then the readings are taken again. What remains is N/A.
    """
    result = GuardResult()
    if not prep.candidates or not settings.na_guard:
        return result
    readings = GuardReadings(prep, settings)
    ids = prep.tree.atom_ids
    by_fact: dict[str, list[int]] = defaultdict(list)  # fact -> its proposed candidates, by atom id
    k: dict[int, int] = defaultdict(int)  # citation direction -> proposed candidates in it
    for i in prep.candidates:  # already sorted by atom id
        by_fact[prep.candidate_fact[i]].append(i)
        k[prep.tree.atom_direction[i]] += 1
    proposed = len(prep.candidates)
    while proposed:
        exact_c, exact_r = readings.read_counts(by_fact, k)
        delta_c, delta_r = float(exact_c), float(exact_r)
        if exact_c > exact_r:  # a tie restores (Eq. 5)
            result.steps.append((proposed, delta_c, delta_r, None))
            result.delta_c, result.delta_r = delta_c, delta_r
            break
        # Restore one candidate: from the fact with most proposals (ties: smallest fact id),
        # its candidate with the smallest atom id.
        fact = min(by_fact, key=lambda f: (-len(by_fact[f]), f))
        atom = by_fact[fact].pop(0)
        if not by_fact[fact]:
            del by_fact[fact]
        k[prep.tree.atom_direction[atom]] -= 1
        result.retracted.append(atom)
        result.steps.append((proposed, delta_c, delta_r, atom))
        proposed -= 1
    result.applied = sorted((i for atoms in by_fact.values() for i in atoms), key=ids.__getitem__)
    return result


@dataclass
class Evaluation:
    """Numbers of one report under one parameter set (plain Python, no pydantic)."""

    total: float
    guard: GuardResult
    applicable: list[int]  # per direction, after the guard
    guard_na: list[int]
    rate: list[float | None]
    credited: list[float | None]
    weight: list[int | None]
    gate_passed: list[bool | None]
    dimensions: dict[Dimension, tuple[float, int, int]]  # D_k (0-1), directions, applicable atoms


def evaluate(prep: PreparedReport, settings: ScoringSettings, guard: GuardResult | None = None) -> Evaluation:
    """Guard, then Eq. 2-3: credited rates, gates, capped weights, dimension means, the total.

    `guard` replaces the guard run with a given outcome (the offline na-order check uses it to
    re-aggregate a saved applied set)."""
    if guard is None:
        guard = run_guard(prep, settings)
    dirs = prep.tree.directions
    guard_na = [0] * len(dirs)
    for i in guard.applied:
        guard_na[prep.tree.atom_direction[i]] += 1
    lambdas = settings.lambdas()
    num: dict[Dimension, float] = defaultdict(float)
    den: dict[Dimension, int] = defaultdict(int)
    count: dict[Dimension, int] = defaultdict(int)
    atoms: dict[Dimension, int] = defaultdict(int)
    applicable: list[int] = []
    rate: list[float | None] = []
    credited: list[float | None] = []
    weight: list[int | None] = []
    gate_passed: list[bool | None] = []
    for d, spec in enumerate(dirs):
        p = prep.passed[d]
        n = p + prep.failed[d] - guard_na[d]
        applicable.append(n)
        if n == 0:  # no applicable atom: left out of its dimension
            rate.append(None)
            credited.append(None)
            weight.append(None)
            gate_passed.append(None)
            continue
        r = p / n
        c = min(1.0, r / settings.tau) if spec.high_volume else r
        w = _weight(spec, n, settings.kappa)
        if spec.gate:
            ok = p == n if spec.logic is GateLogic.all else p >= 1
        else:
            ok = None
        g = 0.0 if ok is False else 1.0
        rate.append(r)
        credited.append(c)
        weight.append(w)
        gate_passed.append(ok)
        num[spec.dimension] += w * g * c
        den[spec.dimension] += w
        count[spec.dimension] += 1
        atoms[spec.dimension] += n
    dims = {k: (num[k] / den[k], count[k], atoms[k]) for k in DIMENSIONS if den[k] > 0}
    # Eq. 3 (S = 100 * sum(lambda_k D_k)) is undefined for a dimension without an applicable atom; the paper leaves
    # that open. Our choice (README, scoring's open choices): leave the dimension out and renormalise the others.
    lam = sum(lambdas[k] for k in dims)
    total = 100.0 * sum(lambdas[k] * dims[k][0] for k in dims) / lam if lam > 0 else 0.0
    total = min(100.0, max(0.0, total))
    return Evaluation(total, guard, applicable, guard_na, rate, credited, weight, gate_passed, dims)


def _difficulties(prep: PreparedReport, applied: list[int]) -> dict[Difficulty, dict[str, int]]:
    """Applicable and passed atoms per level; guard N/A atoms (all failed) leave the applicable count."""
    failed = list(prep.level_failed)
    for i in applied:
        failed[prep.tree.atom_level[i]] -= 1
    return {
        lv: {"applicable": prep.level_passed[k] + failed[k], "passed": prep.level_passed[k]}
        for k, lv in enumerate(_DIFFICULTIES)
    }


def result_of(prep: PreparedReport, settings: ScoringSettings) -> ReportScore:
    """Evaluate a prepared report and wrap the numbers in a `ReportScore` (validated in one pass)."""
    if prep.failure is not None:
        return ReportScore.failure(prep.tree.task_id, prep.failure)
    ev = evaluate(prep, settings)
    tree = prep.tree
    lambdas = settings.lambdas()
    directions = []
    for d, spec in enumerate(tree.directions):
        c, g = ev.credited[d], ev.gate_passed[d]
        directions.append({
            "direction": spec.id, "dimension": spec.dimension, "gate": spec.gate, "logic": spec.logic,
            "high_volume": spec.high_volume,
            "atoms": prep.passed[d] + prep.failed[d] + prep.judged_na[d] + prep.skipped[d],
            "passed": prep.passed[d], "failed": prep.failed[d] - ev.guard_na[d], "judged_na": prep.judged_na[d],
            "guard_na": ev.guard_na[d], "skipped": prep.skipped[d], "applicable": ev.applicable[d],
            "rate": ev.rate[d], "credited": c, "weight": ev.weight[d], "gate_passed": g,
            "effective": None if c is None else (0.0 if g is False else c),
        })
    dimensions = {
        k: {"dimension": k, "score": 100.0 * v, "weight": lambdas[k], "directions": nd, "applicable": na}
        for k, (v, nd, na) in ev.dimensions.items()
    }
    ids = tree.atom_ids
    guard = ev.guard
    na_guard = {
        "enabled": settings.na_guard,
        "candidates": len(prep.candidates),
        "applied": len(guard.applied),
        "retracted": len(guard.retracted),
        "delta_c": guard.delta_c,
        "delta_r": guard.delta_r,
        "candidate_atoms": [ids[i] for i in prep.candidates],
        "applied_atoms": [ids[i] for i in guard.applied],
        "retracted_atoms": [ids[i] for i in guard.retracted],
        "steps": [{"proposed": p, "delta_c": dc, "delta_r": dr, "retracted": None if a is None else ids[a]}
                  for p, dc, dr, a in guard.steps],
    }
    return ReportScore.model_validate({
        "task_id": tree.task_id, "failed": False, "judge": prep.judge, "total": ev.total, "dimensions": dimensions,
        "directions": directions, "difficulties": _difficulties(prep, guard.applied), "na_guard": na_guard,
        "skipped": sum(prep.skipped), "missing_decisions": prep.missing, "settings": settings,
        "failed_coverage": prep.failed_coverage,
    })


def score_report(
    tree: RubricTree,
    decisions: Decisions | Mapping[str, AtomDecision | str] | None,
    hyperparameters: Hyperparameters | None = None,
    *,
    na_guard: bool = True,
    inventory: DirectionInventory | None = None,
) -> ReportScore:
    """Score one report: one Omni-ART tree and one decision per atom -> `ReportScore`.

    `decisions` is a `Decisions` record (its `failure` marks a missing or unreadable report) or a
    plain mapping atom id -> decision; None means the report is missing, which scores 0 and
    counts as a failure. `hyperparameters` defaults to the released values. Raises
    `ScoringInputError` (a UserError) for input that does not fit the tree.
    """
    settings = settings_from(hyperparameters, na_guard)
    compiled = compile_tree(tree, inventory)
    if decisions is None:
        return ReportScore.failure(tree.task_id, "no report")
    return result_of(prepare(compiled, decisions), settings)
