"""Repeat-scoring stability of a judge (paper Sec. 3.4 S5, App. E.4: "Each R2 report is also scored three
times ... only 0.89% of applicable criteria receive non-unanimous decisions on average").

Every scored report of a run root is scored `repeats` times again by the judge, each time with an
empty judge cache, so every J atom is asked anew (M atoms are deterministic and re-run too). A
criterion is applicable when it was decided in every repeat (never skipped) and not N/A in all of
them; it is non-unanimous when its outcome differs between repeats. The rate is given per report,
per direction and overall: the mean of the per-report rates (the paper's "on average") with a 95%
bootstrap interval over reports, and the pooled rate over all applicable criteria.

The repeats are kept, votes included, in RUN_ROOT/reliability/stability/<system>/<k>/ (evaluation
folders as `omnidr score` writes them); the figures in reliability/stability.json and .md.
"""

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from omnidr.errors import UserError
from omnidr.paths import EvalPaths, RunPaths

from ._agreement import Estimate, _interval

STABILITY_DIR = "stability"


class ReportStability(BaseModel):
    system: str = Field(description="System folder.")
    task: str = Field(description="Task id.")
    applicable: int = Field(description="Criteria decided in every repeat and not N/A in all.")
    non_unanimous: list[str] = Field(description="Atom ids whose outcome differs between repeats.")
    rate: float | None = Field(description="non-unanimous / applicable; None without an applicable criterion.")


class DirectionStability(BaseModel):
    direction: str = Field(description="Direction id.")
    applicable: int = Field(description="Applicable criteria of the direction, over every report.")
    non_unanimous: int = Field(description="Of them, those whose outcome differs between repeats.")
    rate: float | None = Field(description="non_unanimous / applicable; None without an applicable criterion.")


class Stability(BaseModel):
    """`reliability/stability.json`."""

    judge: str = Field(description="Key of the judge that scored the repeats.")
    repeats: int = Field(description="Times each report was scored.")
    reports: list[ReportStability] = Field(description="Per report.")
    by_direction: list[DirectionStability] = Field(description="Per direction, pooled over reports.")
    mean_rate: Estimate = Field(description="Mean of the per-report rates, with a bootstrap interval over reports.")
    pooled_rate: float | None = Field(description="Non-unanimous over applicable criteria of all reports.")
    replicates: int = Field(description="Bootstrap replicates.")
    seed: int = Field(description="Bootstrap seed.")


def stability_of(outcomes: dict[tuple[str, str], list[dict[str, tuple[str, str]]]], judge: str,
                 replicates: int = 2000, seed: int = 0) -> Stability:
    """The figures from each report's repeats: (system, task) -> one {atom: (direction, outcome)} per repeat."""
    from omnidr.scoring import bootstrap_counts

    reports = []
    directions: dict[str, list[int]] = {}
    for (system, task), runs in sorted(outcomes.items()):
        applicable, differ = 0, []
        for atom, (direction, _) in runs[0].items():
            seen = [r[atom][1] for r in runs if atom in r]
            if len(seen) < len(runs) or "skipped" in seen or all(o == "na" for o in seen):
                continue
            applicable += 1
            cell = directions.setdefault(direction, [0, 0])
            cell[0] += 1
            if len(set(seen)) > 1:
                differ.append(atom)
                cell[1] += 1
        reports.append(ReportStability(system=system, task=task, applicable=applicable, non_unanimous=differ,
                                       rate=len(differ) / applicable if applicable else None))
    rates = np.array([r.rate for r in reports if r.rate is not None], dtype=float)
    mean = Estimate(value=float(rates.mean()) if len(rates) else None, n=len(rates))
    if len(rates):
        draws = bootstrap_counts(len(rates), replicates, seed)
        mean.low, mean.high = _interval(draws @ rates / len(rates))
    total = sum(r.applicable for r in reports)
    return Stability(
        judge=judge, repeats=len(next(iter(outcomes.values()))) if outcomes else 0, reports=reports,
        by_direction=[DirectionStability(direction=d, applicable=a, non_unanimous=n, rate=n / a if a else None)
                      for d, (a, n) in sorted(directions.items())],
        mean_rate=mean, pooled_rate=sum(len(r.non_unanimous) for r in reports) / total if total else None,
        replicates=replicates, seed=seed)


def score_repeats(root: Path, repeats: int, judge_settings, snapshot: Path | None = None,
                  progress: Callable[[str], None] = lambda _m: None, evaluator: str = "docker"):
    """Score every scored system folder of `root` `repeats` times with an empty judge cache; returns
    (system, task) -> one {atom: (direction, outcome)} per repeat, and the judge key."""
    from omnidr.evaluation import ScoreRequest, read_scored_run, score_folder

    root = Path(root)
    folders = [s.root for s in EvalPaths(root).scored_systems()]
    if not folders:
        raise UserError(f"{root}: no scored system folder (none has evaluation/summary.json); pass a run root that "
                        "`omnidr eval` scored")
    outcomes: dict[tuple[str, str], list[dict[str, tuple[str, str]]]] = {}
    judges = set()
    for folder in folders:
        summary, _ = read_scored_run(RunPaths(folder).evaluation)
        tasks = [t.task_id for t in summary.tasks if not t.failed]
        if not tasks:
            continue
        mine = root / "reliability" / STABILITY_DIR / folder.name
        shutil.rmtree(mine, ignore_errors=True)  # repeats are fresh scorings; an earlier run's are not kept beside them
        for k in range(1, repeats + 1):
            out = mine / str(k)
            progress(f"{folder.name}: repeat {k} of {repeats} ({len(tasks)} report(s))")
            result = score_folder(ScoreRequest(run_dir=folder, out_dir=out, snapshot=snapshot,
                                               judge_settings=judge_settings, tasks=tuple(tasks), evaluator=evaluator))
            judges.add(result.judge.key)
            _, evaluations = read_scored_run(out)
            for e in evaluations:
                outcomes.setdefault((folder.name, e.task_id), []).append(
                    {a.atom_id: (a.direction, a.outcome) for a in e.atoms})
    if not outcomes:
        raise UserError(f"{root}: no system has a delivered report to score again")
    return outcomes, judges.pop()
