"""Across reports: the leaderboard with task-bootstrap intervals and paired comparisons (App. F.2).

The bootstrap resamples task identities with replacement. One index matrix of shape
(replicates, tasks) is drawn from `np.random.default_rng(seed)` and shared by every system, so
systems stay paired within each replicate. It is turned into a count matrix (how often each task
is drawn in each replicate); the replicate means of all systems are then one matrix product,
with no Python loop per replicate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import TYPE_CHECKING

from omnidr.benchmark import Difficulty, Dimension

from ._errors import ScoringInputError
from ._rationale import FAILURE_KINDS
from ._report_models import DifficultyCount, ReportScore, ScoringSettings
from ._tables import Leaderboard, PairedComparison, SystemResult, SystemScores

if TYPE_CHECKING:  # numpy is imported where it computes: most commands (and the evaluator's probe step) never do
    import numpy as np

DEFAULT_REPLICATES = 20_000
DEFAULT_SEED = 0
CONFIDENCE = 0.95
TIE = 1e-9  # points; per-task scores closer than this are a tie


def bootstrap_counts(n_tasks: int, replicates: int = DEFAULT_REPLICATES, seed: int = DEFAULT_SEED) -> np.ndarray:
    """How often each task is drawn in each replicate: an int array (replicates, n_tasks).

    Row b comes from the index row b of `default_rng(seed).integers(0, n_tasks, (replicates, n_tasks))`.
    """
    import numpy as np

    if n_tasks < 1:
        raise ScoringInputError("the task set is empty; give at least one task")
    if replicates < 1:
        raise ScoringInputError(f"replicates must be at least 1, got {replicates}")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_tasks, size=(replicates, n_tasks))
    flat = idx + (np.arange(replicates) * n_tasks)[:, None]
    return np.bincount(flat.ravel(), minlength=replicates * n_tasks).reshape(replicates, n_tasks)


def bootstrap_means(scores: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Replicate means (replicates, systems) of `scores` (systems, tasks) under `counts`."""
    return counts @ scores.T / counts.shape[1]


def percentile_interval(samples: np.ndarray, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval along axis 0."""
    import numpy as np

    alpha = 100 * (1 - confidence) / 2
    low, high = np.percentile(samples, [alpha, 100 - alpha], axis=0)
    return low, high


def task_set(systems: Sequence[SystemScores], task_ids: Sequence[str] | None = None) -> list[str]:
    """The given task ids, or the sorted union of the tasks the systems reported on."""
    if task_ids is not None:
        ids = list(task_ids)
        if len(set(ids)) != len(ids):
            raise ScoringInputError("the task set names a task twice")
        return ids
    return sorted({r.task_id for s in systems for r in s.reports})


def _check_labels(systems: Sequence[SystemScores]) -> list[str]:
    return distinct_labels([s.system.label for s in systems])


def distinct_labels(labels: list[str]) -> list[str]:
    """The labels, when no two systems share one (else a ScoringInputError naming it)."""
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise ScoringInputError(f"system {', '.join(repr(d) for d in dup)} appears more than once; each system needs a distinct key")
    return labels


def report_table(systems: Sequence[SystemScores], task_ids: Sequence[str]) -> list[list[ReportScore]]:
    """reports[s][t]: system s on task t; a task without a report is a failure scoring 0.
    Reports on tasks outside the task set are ignored."""
    table = []
    for s in systems:
        by_task: dict[str, ReportScore] = {}
        for r in s.reports:
            if r.task_id in by_task:
                raise ScoringInputError(f"system '{s.system.label}' has two reports for task '{r.task_id}'")
            by_task[r.task_id] = r
        table.append([by_task.get(t) or ReportScore.failure(t, "no report") for t in task_ids])
    return table


def common_settings(table: list[list[ReportScore]]) -> ScoringSettings | None:
    """The parameters every scored report shares; mixing parameter sets is an error."""
    found = {r.settings for row in table for r in row if r.settings is not None}
    if len(found) > 1:
        raise ScoringInputError(
            f"reports were scored with {len(found)} different parameter sets (lambda, tau, kappa, guard); "
            "re-score them with one set before comparing"
        )
    return next(iter(found), None)


def score_matrix(table: list[list[ReportScore]]) -> np.ndarray:
    """Totals (systems, tasks), failures as 0."""
    import numpy as np

    return np.array([[r.total for r in row] for row in table], dtype=float).reshape(len(table), -1)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _system_result(scores: SystemScores, reports: list[ReportScore], ci: tuple[float, float], rank: int | None,
                   incomplete: list[str]) -> SystemResult:
    ok = [r for r in reports if not r.failed]
    dims = {k: _mean([r.dimensions[k].score for r in ok if k in r.dimensions]) for k in Dimension}
    rates: dict[str, list[float]] = {}
    for r in ok:
        for d in r.directions:
            if d.rate is not None:
                rates.setdefault(d.direction, []).append(d.rate)
    levels: dict[Difficulty, list[float]] = {}
    for r in ok:
        for lv, c in r.difficulties.items():
            if c.applicable:
                levels.setdefault(lv, []).append(c.passed / c.applicable)
    directions: dict[str, DifficultyCount] = {}
    for r in ok:
        for d in r.directions:
            if d.applicable:
                c = directions.get(d.direction, DifficultyCount(applicable=0, passed=0))
                directions[d.direction] = DifficultyCount(applicable=c.applicable + d.applicable,
                                                          passed=c.passed + d.passed)
    pooled_levels = {lv: DifficultyCount(applicable=sum(r.difficulties[lv].applicable for r in ok if lv in r.difficulties),
                                         passed=sum(r.difficulties[lv].passed for r in ok if lv in r.difficulties))
                     for lv in levels}
    n = len(reports)
    return SystemResult(
        rank=rank,
        system=scores.system,
        label=scores.system.label,
        tasks=n,
        successes=len(ok),
        success_rate=len(ok) / n,
        avg=sum(r.total for r in reports) / n,
        avg_ci_low=ci[0],
        avg_ci_high=ci[1],
        avg_succ=_mean([r.total for r in ok]),
        content=dims[Dimension.C],
        citation=dims[Dimension.R],
        presentation=dims[Dimension.P],
        direction_pass_rates={k: sum(v) / len(v) for k, v in rates.items()},
        difficulty_pass_rates={lv: sum(levels[lv]) / len(levels[lv]) for lv in Difficulty if lv in levels},
        direction_atoms=directions,
        difficulty_atoms=pooled_levels,
        failed_coverage={k: sum(r.failed_coverage.get(k, 0) for r in ok) for k in FAILURE_KINDS},
        incomplete=incomplete,
    )


def rank_order(labels: Sequence[str], avgs: Sequence[float]) -> list[int]:
    """Indices of systems from best to worst Avg; ties listed by label."""
    return sorted(range(len(labels)), key=lambda i: (-avgs[i], labels[i]))


def competition_ranks(avgs: Sequence[float]) -> list[int]:
    """Rank of each Avg: 1 + how many are higher by more than TIE, so ties share a rank (1, 2, 2, 4)."""
    return [1 + sum(1 for other in avgs if other > a + TIE) for a in avgs]


def build_leaderboard(
    systems: Sequence[SystemScores],
    task_ids: Sequence[str] | None = None,
    *,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
    with_comparisons: bool = False,
    incomplete: Mapping[str, Sequence[str]] | None = None,
) -> Leaderboard:
    """Rank systems by Avg over the task set, with task-bootstrap percentile intervals.

    `task_ids` defaults to every task any system reported on; a system without a report for a
    task scores 0 there and the task counts as a failure. With `with_comparisons`, every pair of
    systems is compared as well (`paired_comparisons`), each as the higher-ranked system minus the
    lower-ranked one (App. F.2), as everywhere a pair is printed. `incomplete` maps a system label to its
    tasks whose score is not final: such a row is provisional, listed after the ranked rows and not
    ranked (an unanswered judge or an outage is not a score).
    """
    if not systems:
        raise ScoringInputError("no system to rank; give at least one system")
    labels = _check_labels(systems)
    judges = sorted({r.judge for s in systems for r in s.reports if r.judge})
    if len(judges) > 1:
        raise ScoringInputError(
            f"the reports were judged by {len(judges)} different judges ({', '.join(judges)}); "
            "re-score every system with one judge before ranking them"
        )
    tasks = task_set(systems, task_ids)
    table = report_table(systems, tasks)
    settings = common_settings(table)
    scores = score_matrix(table)
    counts = bootstrap_counts(len(tasks), replicates, seed)
    low, high = percentile_interval(bootstrap_means(scores, counts), confidence)
    avgs = scores.mean(axis=1)
    pending = {label: sorted(t for t in tasks_ if t in tasks) for label, tasks_ in (incomplete or {}).items()}
    order = rank_order(labels, list(avgs))
    order = [i for i in order if not pending.get(labels[i])] + [i for i in order if pending.get(labels[i])]
    ranked = [i for i in order if not pending.get(labels[i])]
    ranks = dict(zip(ranked, competition_ranks([float(avgs[i]) for i in ranked]), strict=True))
    rows = [_system_result(systems[i], table[i], (float(low[i]), float(high[i])), ranks.get(i), pending.get(labels[i], []))
            for i in order]
    comparisons = (_pairs(labels, scores, counts, list(combinations(order, 2)), seed, confidence)
                   if with_comparisons else [])
    return Leaderboard(task_ids=tasks, replicates=replicates, seed=seed, confidence=confidence, settings=settings,
                       rows=rows, comparisons=comparisons)


def _pairs(labels, scores, counts, pairs, seed, confidence) -> list[PairedComparison]:
    import numpy as np

    pairs = list(pairs)
    if not pairs:
        return []
    means = scores.mean(axis=1)
    # App. F.2: a paired difference reads "A minus B" with A the higher-ranked system of the pair (Opus 5 minus
    # GLM-5.3 = +1.3), whatever order the pair was asked in; a tie keeps the order asked
    pairs = [(j, i) if means[j] > means[i] + TIE else (i, j) for i, j in pairs]
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    diff = scores[a] - scores[b]  # (pairs, tasks)
    boot = bootstrap_means(diff, counts)  # (replicates, pairs): A and B resampled with the same tasks
    low, high = percentile_interval(boot, confidence)
    wins = (diff > TIE).sum(axis=1)
    losses = (diff < -TIE).sum(axis=1)
    n = scores.shape[1]
    return [
        PairedComparison(
            a=labels[i], b=labels[j], tasks=n, mean_a=float(means[i]), mean_b=float(means[j]),
            mean_difference=float(means[i] - means[j]), ci_low=float(low[p]), ci_high=float(high[p]),
            wins=int(wins[p]), ties=int(n - wins[p] - losses[p]), losses=int(losses[p]),
            replicates=counts.shape[0], seed=seed, confidence=confidence,
        )
        for p, (i, j) in enumerate(pairs)
    ]


def paired_comparisons(
    systems: Sequence[SystemScores],
    task_ids: Sequence[str] | None = None,
    pairs: Sequence[tuple[int, int]] | None = None,
    *,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
) -> list[PairedComparison]:
    """Paired comparisons for `pairs` of system indices (default: every pair i < j), each read as A minus B with A
    the pair's higher-ranked system (App. F.2), all from one bootstrap index matrix, vectorized over pairs and
    replicates."""
    labels = _check_labels(systems)
    tasks = task_set(systems, task_ids)
    table = report_table(systems, tasks)
    common_settings(table)
    scores = score_matrix(table)
    counts = bootstrap_counts(len(tasks), replicates, seed)
    chosen = list(pairs) if pairs is not None else list(combinations(range(len(systems)), 2))
    return _pairs(labels, scores, counts, chosen, seed, confidence)


def compare_systems(
    a: SystemScores,
    b: SystemScores,
    task_ids: Sequence[str] | None = None,
    *,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
) -> PairedComparison:
    """The pair of A and B as the higher-ranked minus the other (App. F.2): paired mean difference, its bootstrap
    percentile interval, wins/ties/losses per task."""
    return paired_comparisons([a, b], task_ids, [(0, 1)], replicates=replicates, seed=seed, confidence=confidence)[0]
