"""Re-aggregation of saved decisions: score many systems, and the sensitivity table (App. F.2, Table 15).

No judge is called: every number comes from the stored decisions and the rubric trees. Each
tree is compiled once and each report prepared once; only the guard and the aggregation run
again per parameter set (the guard depends on lambda, tau and kappa, so it is re-run too).
"""

from collections.abc import Mapping, Sequence

from omnidr.benchmark import Hyperparameters, RubricTree

from ._decisions import Decisions
from ._errors import ScoringInputError
from ._leaderboard import rank_order
from ._report import PreparedReport, compile_tree, evaluate, prepare, result_of, settings_from
from ._report_models import ReportScore, ScoringSettings
from ._tables import Sensitivity, SensitivityRow, SensitivityVariant, SystemDecisions, SystemScores

NO_CAP = 10**9  # kappa that no direction reaches: weights uncapped
NO_REPORT = "no report"


def _prepare_all(
    systems: Sequence[SystemDecisions], trees: Mapping[str, RubricTree], task_ids: Sequence[str] | None
) -> tuple[list[str], list[list[PreparedReport | str]]]:
    """Per system and task: the prepared report, or the failure reason of a missing/unreadable one."""
    tasks = list(task_ids) if task_ids is not None else sorted(trees)
    lacking = [t for t in tasks if t not in trees]
    if lacking:
        raise ScoringInputError(f"no rubric tree for task(s) {', '.join(lacking)}")
    compiled = {t: compile_tree(trees[t]) for t in tasks}
    wanted = set(tasks)
    table = []
    for s in systems:
        given: dict[str, Decisions] = {}
        for d in s.decisions:
            if d.task_id not in trees:
                raise ScoringInputError(f"system '{s.system.label}': decisions for task '{d.task_id}', which has no rubric tree")
            if d.task_id in given:
                raise ScoringInputError(f"system '{s.system.label}': two decision sets for task '{d.task_id}'")
            if d.task_id in wanted:
                given[d.task_id] = d
        row: list[PreparedReport | str] = []
        for t in tasks:
            found = given.get(t)
            if found is None:
                row.append(NO_REPORT)
            elif found.failure is not None:
                row.append(found.failure)
            else:
                row.append(prepare(compiled[t], found))
        table.append(row)
    return tasks, table


def score_systems(
    systems: Sequence[SystemDecisions],
    trees: Mapping[str, RubricTree],
    hyperparameters: Hyperparameters | None = None,
    *,
    na_guard: bool = True,
    task_ids: Sequence[str] | None = None,
) -> list[SystemScores]:
    """Score every saved report of every system. The task set defaults to every tree; a task
    without decisions is a failure (score 0)."""
    settings = settings_from(hyperparameters, na_guard)
    tasks, table = _prepare_all(systems, trees, task_ids)
    out = []
    for s, row in zip(systems, table, strict=True):
        reports = [
            ReportScore.failure(t, p) if isinstance(p, str) else result_of(p, settings) for t, p in zip(tasks, row, strict=True)
        ]
        out.append(SystemScores(system=s.system, reports=reports))
    return out


def default_variants(base: ScoringSettings) -> list[SensitivityVariant]:
    """This project's alternative settings, one parameter group changed at a time:
    three lambda sets, three tau values (1.0 = no saturation), three kappa values (one uncapped)."""

    def v(name: str, group: str, **change) -> SensitivityVariant:
        return SensitivityVariant(name=name, group=group, settings=base.model_copy(update=change))

    third = 1 / 3
    return [
        v("lambda = 1/3, 1/3, 1/3", "lambda", lambda_C=third, lambda_R=third, lambda_P=third),
        v("lambda = 0.60, 0.25, 0.15", "lambda", lambda_C=0.60, lambda_R=0.25, lambda_P=0.15),
        v("lambda = 0.40, 0.35, 0.25", "lambda", lambda_C=0.40, lambda_R=0.35, lambda_P=0.25),
        v("tau = 0.12", "tau", tau=0.12),
        v("tau = 0.24", "tau", tau=0.24),
        v("tau = 1 (no saturation)", "tau", tau=1.0),
        v("kappa = 10", "kappa", kappa=10),
        v("kappa = 20", "kappa", kappa=20),
        v("kappa = none (no cap)", "kappa", kappa=NO_CAP),
    ]


def variant(name: str, base: Hyperparameters | None = None, *, lambdas: tuple[float, float, float] | None = None,
            tau: float | None = None, kappa: int | None = None) -> SensitivityVariant:
    """A custom variant that changes exactly one group (lambda, tau or kappa) of `base`."""
    changed = [g for g, x in (("lambda", lambdas), ("tau", tau), ("kappa", kappa)) if x is not None]
    if len(changed) != 1:
        raise ScoringInputError(f"variant '{name}': change exactly one parameter group (lambda, tau or kappa)")
    update: dict[str, float | int] = {}
    if lambdas is not None:
        if any(not isinstance(x, (int, float)) or x < 0 for x in lambdas) or sum(lambdas) <= 0:
            raise ScoringInputError(f"variant '{name}': lambda must be three non-negative numbers, not all zero")
        update = dict(zip(("lambda_C", "lambda_R", "lambda_P"), map(float, lambdas), strict=False))
    elif tau is not None:
        if not isinstance(tau, (int, float)) or not 0 < tau <= 1:
            raise ScoringInputError(f"variant '{name}': tau must be a number in (0, 1], got {tau!r}")
        update = {"tau": float(tau)}
    else:
        if not isinstance(kappa, int) or kappa < 1:
            raise ScoringInputError(f"variant '{name}': kappa must be a whole number of atoms >= 1, got {kappa!r}")
        update = {"kappa": kappa}
    settings = settings_from(base).model_copy(update=update)
    return SensitivityVariant(name=name, group=changed[0], settings=settings)


def sensitivity_analysis(
    systems: Sequence[SystemDecisions],
    trees: Mapping[str, RubricTree],
    hyperparameters: Hyperparameters | None = None,
    variants: Sequence[SensitivityVariant] | None = None,
    *,
    na_guard: bool = True,
    task_ids: Sequence[str] | None = None,
) -> Sensitivity:
    """Every system's Avg (all tasks, failures 0) and rank under the released setting and each
    variant, with the largest rank change from the released setting (paper Table 15)."""
    base = settings_from(hyperparameters, na_guard)
    chosen = list(variants) if variants is not None else default_variants(base)
    chosen = [SensitivityVariant(name="released", group="released", settings=base)] + [
        v.model_copy(update={"settings": v.settings.model_copy(update={"na_guard": na_guard})}) for v in chosen
    ]
    labels = [s.system.label for s in systems]
    if len(set(labels)) != len(labels):
        raise ScoringInputError("two systems share a key; each system needs a distinct key")
    tasks, table = _prepare_all(systems, trees, task_ids)
    rows: list[SensitivityRow] = []
    released_rank: dict[str, int] = {}
    released_top: list[str] = []
    for v in chosen:
        avgs = [
            sum(0.0 if isinstance(p, str) else evaluate(p, v.settings).total for p in row) / len(tasks)
            for row in table
        ]
        order = rank_order(labels, avgs)
        ranks = {labels[i]: pos + 1 for pos, i in enumerate(order)}
        top = [labels[i] for i in order[:3]]
        if not rows:
            released_rank, released_top = ranks, top
        rows.append(SensitivityRow(
            variant=v,
            scores=dict(zip(labels, avgs, strict=True)),
            ranks=ranks,
            max_rank_change=max((abs(ranks[x] - released_rank[x]) for x in labels), default=0),
            same_top3=top == released_top,
        ))
    ordered = sorted(labels, key=lambda x: released_rank[x])
    return Sensitivity(systems=ordered, rows=rows)
