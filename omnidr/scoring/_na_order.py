"""The offline na-order check (App. A.4): audit the guarded citation N/A of saved evaluations.

For one saved report it confirms that

* every atom the guard set N/A was an eligible candidate,
* the applied set satisfies Delta_C > Delta_R (Eq. 5, recomputed from the decisions),
* for every fact whose citation atoms were set N/A, the report with that fact omitted does not
  score above the same report with the fact stated but still uncited (its scored coverage atoms
  flipped to pass, the guard re-run). Equal scores are allowed: at saturation they tie.

When a saved `ReportScore` is given, its applied set and total are checked against a fresh
re-aggregation as well. No judge is called.
"""

from collections.abc import Mapping

from pydantic import Field

from omnidr.benchmark import Hyperparameters, RubricTree

from ._base import ScoringModel
from ._decisions import AtomDecision, Decisions
from ._errors import ScoringInputError
from ._report import GuardReadings, GuardResult, compile_tree, evaluate, prepare, run_guard, settings_from
from ._report_models import ReportScore

TOLERANCE = 1e-9


class FactOrder(ScoringModel):
    """Omitted versus stated-but-uncited for one fact whose citation atoms were set N/A."""

    fact_id: str = Field(description="Fact library id.")
    omitted_total: float = Field(description="Report score (0-100) as saved: fact omitted, its citation atoms N/A.")
    stated_total: float = Field(description="Score (0-100) with the fact's scored coverage atoms passed and the guard re-run.")
    ok: bool = Field(description="omitted_total <= stated_total.")


class NaOrderCheck(ScoringModel):
    """Result of the na-order check for one report."""

    task_id: str = Field(description="Task of the report.")
    applied_atoms: list[str] = Field(description="Citation atoms set N/A in the checked evaluation.")
    delta_c: float | None = Field(description="Delta_C recomputed for the applied set; None when nothing is applied.")
    delta_r: float | None = Field(description="Delta_R recomputed for the applied set; None when nothing is applied.")
    facts: list[FactOrder] = Field(description="One comparison per fact with applied N/A atoms.")
    problems: list[str] = Field(description="Every violation found, one sentence each; empty when the check passes.")

    @property
    def ok(self) -> bool:
        return not self.problems


def _saved_applied(compiled, saved: ReportScore, fresh: GuardResult, problems: list[str]) -> list[int]:
    """The atoms a saved score set N/A (by index); a difference from the re-run guard's set, when the guard was
    on, goes to `problems`."""
    if saved.task_id != compiled.task_id:
        raise ScoringInputError(f"saved score is for task '{saved.task_id}', the tree for '{compiled.task_id}'")
    record = saved.na_guard
    applied_ids = list(record.applied_atoms) if record is not None else []
    unknown = [a for a in applied_ids if a not in compiled.index]
    if unknown:
        raise ScoringInputError(f"saved na_guard names atoms the tree lacks: {', '.join(unknown)}")
    fresh_ids = sorted(compiled.atom_ids[i] for i in fresh.applied)
    guard_was_on = record is None or record.enabled
    if guard_was_on and sorted(applied_ids) != fresh_ids:
        problems.append(f"saved applied set {sorted(applied_ids)} differs from the re-run guard's {fresh_ids}")
    return [compiled.index[a] for a in applied_ids]


def check_na_order(
    tree: RubricTree,
    decisions: Decisions | Mapping[str, AtomDecision | str],
    saved: ReportScore | None = None,
    hyperparameters: Hyperparameters | None = None,
) -> NaOrderCheck:
    """Check the guarded N/A of one evaluation. With `saved`, its recorded settings and applied set
    are checked; otherwise the guard is re-run with `hyperparameters` (released values by default)."""
    compiled = compile_tree(tree)
    prep = prepare(compiled, decisions)
    if prep.failure is not None or (saved is not None and saved.failed):
        return NaOrderCheck(task_id=compiled.task_id, applied_atoms=[], delta_c=None, delta_r=None, facts=[], problems=[])
    if saved is not None and saved.settings is not None:
        settings = saved.settings.model_copy(update={"na_guard": True})
    else:
        settings = settings_from(hyperparameters, na_guard=True)
    problems: list[str] = []
    fresh = run_guard(prep, settings)

    applied = list(fresh.applied) if saved is None else _saved_applied(compiled, saved, fresh, problems)

    eligible = set(prep.candidates)
    for i in applied:
        if i not in eligible:
            problems.append(f"atom '{compiled.atom_ids[i]}' is set N/A but is not an eligible candidate")
    applied = [i for i in applied if i in eligible]

    delta_c = delta_r = None
    if applied:
        exact_c, exact_r = GuardReadings(prep, settings).read(applied)
        delta_c, delta_r = float(exact_c), float(exact_r)
        if not exact_c > exact_r:  # exactly, as the guard compares (a tie fails)
            problems.append(f"applied set fails the guard: Delta_C {delta_c:.6g} <= Delta_R {delta_r:.6g}")

    as_applied = evaluate(prep, settings, GuardResult(applied=sorted(applied, key=lambda i: compiled.atom_ids[i])))
    if saved is not None and abs(saved.total - as_applied.total) > 1e-6:
        problems.append(f"saved total {saved.total:.6f} differs from the re-aggregated {as_applied.total:.6f}")

    facts = []
    for fact in sorted({prep.candidate_fact[i] for i in applied}):
        outcomes = dict(zip(compiled.atom_ids, prep.outcomes, strict=True))
        for i in compiled.coverage_links[fact]:
            if outcomes[compiled.atom_ids[i]] == "fail":
                outcomes[compiled.atom_ids[i]] = "pass"
        stated = evaluate(prepare(compiled, outcomes), settings).total
        ok = as_applied.total <= stated + TOLERANCE
        facts.append(FactOrder(fact_id=fact, omitted_total=as_applied.total, stated_total=stated, ok=ok))
        if not ok:
            problems.append(
                f"fact '{fact}': omitted scores {as_applied.total:.4f}, above stated-but-uncited {stated:.4f}"
            )
    return NaOrderCheck(
        task_id=compiled.task_id,
        applied_atoms=sorted(compiled.atom_ids[i] for i in applied),
        delta_c=delta_c,
        delta_r=delta_r,
        facts=facts,
        problems=problems,
    )
