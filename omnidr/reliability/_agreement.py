"""Agreement of human raters with each other and with the machine evaluator (paper App. A.5-A.6).

The paper reports, on 30 generated reports labelled by three raters: unanimity on 93.0% of atoms,
machine agreement with the human majority on 91.0%, and Spearman 0.64 between the total score and a
1-5 holistic usefulness rating. The same quantities here, for any run root and labels file:

- unanimity: over atoms labelled by two raters or more, the share where every rater gave the same
  verdict (with three raters, the paper's three-rater unanimity);
- machine agreement: over atoms with a strict human majority and a machine decision (a skipped atom
  has none), the share where the machine's outcome equals the majority verdict;
- Cohen's kappa of the machine against the human majority (scikit-learn) and Fleiss' kappa among the
  raters, over the atoms labelled by the most common number of raters (numpy, the textbook formula);
- Spearman between a report's total score and its mean holistic rating (scipy);
- 95% percentile intervals from a bootstrap over reports (the labelled atoms of a report stay
  together), with the leaderboard's resampling (`bootstrap_counts`);
- the same rates per dimension and per direction.
"""

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, Field

from omnidr.benchmark import direction_inventory
from omnidr.errors import UserError
from omnidr.scoring import bootstrap_counts

from ._labels import HumanLabel

CONFIDENCE = 0.95


@dataclass(frozen=True)
class MachineReport:
    """What the evaluator decided on one report: atom id -> (direction, outcome), and its total."""

    atoms: Mapping[str, tuple[str, str]]
    total: float | None


class Estimate(BaseModel):
    value: float | None = Field(description="The estimate (fraction, or a correlation); None when undefined.")
    low: float | None = Field(None, description="Lower end of the bootstrap percentile interval.")
    high: float | None = Field(None, description="Upper end of the interval.")
    n: int = Field(description="How many atoms (or reports, for Spearman) it is computed over.")


class GroupAgreement(BaseModel):
    group: str = Field(description="Dimension (C, R, P) or direction id.")
    atoms: int = Field(description="Labelled atoms of the group.")
    unanimity: float | None = Field(description="Share of atoms with two or more labels where the raters agree.")
    machine_agreement: float | None = Field(description="Share of majority-decided atoms where the machine agrees.")


class Agreement(BaseModel):
    """`reliability/agreement.json` of a run root."""

    reports: int = Field(description="Reports with at least one label.")
    raters: list[str] = Field(description="Every rater of the labels.")
    atoms: int = Field(description="Labelled atoms (report x atom).")
    unanimity: Estimate = Field(description="Human unanimity over atoms with two or more labels.")
    machine_agreement: Estimate = Field(description="Machine agreement with the human majority.")
    cohen_kappa: float | None = Field(description="Cohen's kappa, machine against the human majority.")
    fleiss_kappa: float | None = Field(description="Fleiss' kappa among the raters.")
    fleiss_raters: int = Field(description="Raters per atom over which Fleiss' kappa is taken (0: not computed).")
    spearman: Estimate = Field(description="Spearman between total score and mean holistic rating, over rated reports.")
    by_dimension: list[GroupAgreement] = Field(description="The rates per dimension.")
    by_direction: list[GroupAgreement] = Field(description="The rates per direction.")
    replicates: int = Field(description="Bootstrap replicates.")
    seed: int = Field(description="Bootstrap seed.")


def _majority(verdicts: list[str]) -> str | None:
    top, count = Counter(verdicts).most_common(1)[0]
    return top if 2 * count > len(verdicts) else None


def fleiss_kappa(table: np.ndarray) -> float | None:
    """Fleiss' kappa of an (items, categories) table of rater counts, every row summing to the same n >= 2."""
    n = int(table[0].sum())
    p_items = ((table * table).sum(axis=1) - n) / (n * (n - 1))
    p_cats = table.sum(axis=0) / table.sum()
    expected = float((p_cats * p_cats).sum())
    if expected >= 1.0:
        return None  # every label in one category: agreement by chance alone is certain
    return (float(p_items.mean()) - expected) / (1.0 - expected)


def _interval(samples: Iterable[float | None]) -> tuple[float | None, float | None]:
    values = np.array([x for x in samples if x is not None and not np.isnan(x)], dtype=float)
    if not len(values):
        return None, None
    alpha = 100 * (1 - CONFIDENCE) / 2
    low, high = np.percentile(values, [alpha, 100 - alpha])
    return float(low), float(high)


def _spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    from scipy.stats import spearmanr

    if len(x) < 3 or np.all(x == x[0]) or np.all(y == y[0]):
        return None
    value = float(spearmanr(x, y).statistic)
    return None if np.isnan(value) else value


def _ratio(num: float, den: float) -> float | None:
    return float(num / den) if den else None


def _group_rows(groups: dict[str, list[int]], dimensions: bool) -> list[GroupAgreement]:
    """The agreement per dimension (`dimensions`) or per direction; `groups` holds both, dimensions as `dim:<id>`."""
    return [GroupAgreement(group=g.removeprefix("dim:"), atoms=c[0], unanimity=_ratio(c[1], c[2]),
                           machine_agreement=_ratio(c[3], c[4]))
            for g, c in sorted(groups.items()) if g.startswith("dim:") == dimensions]


def _rating_agreement(ratings: dict[tuple[str, str], list[int]], machine: Mapping[tuple[str, str], MachineReport],
                      replicates: int, seed: int) -> Estimate:
    """Spearman's rho between the machine's report totals and the raters' mean ratings, with its bootstrap interval."""
    rated = [(machine[r].total, float(np.mean(v))) for r, v in sorted(ratings.items())
             if r in machine and machine[r].total is not None]
    spearman = Estimate(value=None, n=len(rated))
    if rated:
        x, y = np.array([a for a, _ in rated]), np.array([b for _, b in rated])
        spearman.value = _spearman(x, y)
        if spearman.value is not None:
            rng = np.random.default_rng(seed)
            picks = rng.integers(0, len(rated), size=(replicates, len(rated)))
            spearman.low, spearman.high = _interval(_spearman(x[p], y[p]) for p in picks)
    return spearman


def _fleiss(by_n: dict[int, list[Counter]]) -> tuple[float | None, int]:
    """Fleiss' kappa over the atoms with the most common number of raters (and that number; 0: none)."""
    if not by_n:
        return None, 0
    fleiss_n = max(by_n, key=lambda n: (len(by_n[n]), n))
    cats = ("pass", "fail", "na")
    return fleiss_kappa(np.array([[c[k] for k in cats] for c in by_n[fleiss_n]], dtype=float)), fleiss_n


def agreement(labels: list[HumanLabel], machine: Mapping[tuple[str, str], MachineReport],
              replicates: int = 2000, seed: int = 0) -> Agreement:
    """Every agreement figure of `labels` against the machine's decisions (`machine`: (system, task) ->
    its report's decisions); the labels' reports must all be in `machine` (`omnidr labels import` checks it)."""
    from sklearn.metrics import cohen_kappa_score

    dimension = {d.id: d.dimension.value for d in direction_inventory().directions}
    verdicts: dict[tuple[str, str, str], list[str]] = {}
    ratings: dict[tuple[str, str], list[int]] = {}
    for label in labels:
        if label.atom is not None and label.verdict is not None:  # HumanLabel: an atom label has a verdict,
            verdicts.setdefault((label.system, label.task, label.atom), []).append(label.verdict)
        elif label.rating is not None:  # and a line without an atom a rating
            ratings.setdefault(label.report, []).append(label.rating)
    reports = sorted({k[:2] for k in verdicts} | set(ratings))
    index = {r: i for i, r in enumerate(reports)}
    # per report: unanimity and agreement numerators and denominators, for the cluster bootstrap
    counts = np.zeros((4, len(reports)))
    groups: dict[str, list[int]] = {}
    pairs_machine, pairs_human = [], []
    by_n: dict[int, list[Counter]] = {}
    for (system, task, atom), given in verdicts.items():
        i = index[(system, task)]
        report = machine.get((system, task))
        if report is None or atom not in report.atoms:
            raise UserError(f"the labels name {system}/{task} atom {atom}, which the run root's evaluations no longer "
                            "hold (was it scored again?); import labels for the current evaluations")
        direction, outcome = report.atoms[atom]
        cells = [groups.setdefault(g, [0, 0, 0, 0, 0]) for g in (f"dim:{dimension.get(direction, '?')}", direction)]
        for cell in cells:
            cell[0] += 1
        if len(given) >= 2:
            unanimous = len(set(given)) == 1
            counts[0, i] += unanimous
            counts[1, i] += 1
            by_n.setdefault(len(given), []).append(Counter(given))
            for cell in cells:
                cell[1] += unanimous
                cell[2] += 1
        majority = _majority(given)
        if majority is not None and outcome != "skipped":
            counts[2, i] += outcome == majority
            counts[3, i] += 1
            pairs_machine.append(outcome)
            pairs_human.append(majority)
            for cell in cells:
                cell[3] += outcome == majority
                cell[4] += 1

    draws = bootstrap_counts(len(reports), replicates, seed)  # (replicates, reports)
    sums = draws @ counts.T  # (replicates, 4)
    unanimity = Estimate(value=_ratio(counts[0].sum(), counts[1].sum()), n=int(counts[1].sum()))
    machine_agree = Estimate(value=_ratio(counts[2].sum(), counts[3].sum()), n=int(counts[3].sum()))
    if unanimity.value is not None:
        unanimity.low, unanimity.high = _interval(_ratio(s[0], s[1]) for s in sums)
    if machine_agree.value is not None:
        machine_agree.low, machine_agree.high = _interval(_ratio(s[2], s[3]) for s in sums)

    spearman = _rating_agreement(ratings, machine, replicates, seed)
    fleiss, fleiss_n = _fleiss(by_n)
    cohen = None
    if pairs_machine and len(set(pairs_machine) | set(pairs_human)) > 1:
        cohen = float(cohen_kappa_score(pairs_machine, pairs_human))

    return Agreement(
        reports=len(reports), raters=sorted({label.rater for label in labels}), atoms=len(verdicts),
        unanimity=unanimity, machine_agreement=machine_agree, cohen_kappa=cohen, fleiss_kappa=fleiss,
        fleiss_raters=fleiss_n, spearman=spearman, by_dimension=_group_rows(groups, True), by_direction=_group_rows(groups, False),
        replicates=replicates, seed=seed)
