"""What each system of a run root cost, and score against cost: the leaderboard's cost table and figure.

A task's cost is what all its attempts cost (a failed attempt is paid for too), as the gateway priced each
exchange at the run's price (`run.json`'s `pricing`). A system's cost per task is the median over its tasks, and
its total the sum. Where any of its attempts has an exchange that could not be priced (no price for the model, an
answer without usage), the system's cost is `unpriced`: a partial sum is never shown as its cost, and an unpriced
system is never drawn at $0.

The judge is priced apart: its calls and tokens (the evaluation's `judge_usage`) at the judge model's price, found
as the agent's is (the run's `--prices` entry when the judge is the run's model, else genai-prices' table by the
judge's URL and name); the offline judges cost nothing.

The figure plots each priced system's Avg (or accuracy) against its median cost per task, and marks the Pareto
frontier: the systems no other system matches or beats on both (no cheaper system scores as high).
"""

import json
from pathlib import Path
from statistics import median

from pydantic import BaseModel, Field

from omnidr._files import save_figure
from omnidr._runread import SystemRun, read_run
from omnidr.attempts import cost_text, resolve_pricing
from omnidr.errors import UserError
from omnidr.paths import RunPaths
from sandbox.models import ModelPricing

COST_FIGURE = "cost.png"


class SystemCost(BaseModel):
    """One system's dollars (None: unpriced)."""

    tasks: int = Field(description="Tasks with at least one attempt.")
    attempts: int = Field(description="Attempts over those tasks.")
    per_task: dict[str, float | None] = Field(default_factory=dict, description="Task id -> what its attempts "
                                              "cost, USD (None: an attempt of it is unpriced).")
    per_task_median: float | None = Field(description="Median over tasks of what the task's attempts cost, USD.")
    total: float | None = Field(description="What all attempts cost, USD.")
    unpriced_attempts: int = Field(description="Attempts with an exchange that could not be priced.")
    price_source: str | None = Field(description="Where the agent model's price came from; None: no price.")
    judge: float | None = Field(description="What the judge's calls cost, USD (0 for an offline judge).")
    judge_price_source: str | None = Field(None, description="Where the judge model's price came from.")


def system_cost(folder: Path, judge_model: str | None = None, judge_base_url: str | None = None) -> SystemCost:
    """The cost of the system folder `folder` (attempts under it, run.json, its evaluation summary)."""
    run = read_run(folder)
    if not isinstance(run, SystemRun):
        raise UserError(f"{folder}: not a system folder; pass a system folder of `omnidr eval` or `omnidr run`")
    pricing = run.config.pricing if run.config is not None else None
    per_task: dict[str, float | None] = {}
    attempts = unpriced = 0
    for task_id, found in run.attempts.items():
        costs = [a.record.budget_use.cost for a in found.values() if a.record is not None]
        if costs:
            attempts += len(costs)
            unpriced += sum(c is None for c in costs)
            per_task[task_id] = None if None in costs else sum(c for c in costs if c is not None)
    known = [c for c in per_task.values() if c is not None]
    priced = bool(per_task) and len(known) == len(per_task)
    judge, judge_source = _judge_cost(folder, judge_model, judge_base_url, pricing)
    return SystemCost(tasks=len(per_task), attempts=attempts, per_task=per_task, per_task_median=float(median(known)) if priced else None,
                      total=sum(known) if priced else None, unpriced_attempts=unpriced,
                      price_source=pricing.source if pricing else None, judge=judge, judge_price_source=judge_source)


def _judge_cost(folder: Path, model: str | None, base_url: str | None,
                run_pricing: ModelPricing | None) -> tuple[float | None, str | None]:
    from omnidr.evaluation import JudgeUsage
    from sandbox.gateway import Pricer
    from sandbox.models import TokenUsage

    summary_file = RunPaths(folder).evaluation_summary
    if not summary_file.is_file():
        return None, None
    # every kind's summary.json (reports, answers) carries the run's judge_usage
    usage = JudgeUsage.model_validate(json.loads(summary_file.read_text("utf-8")).get("judge_usage") or {})
    if base_url is None or model is None:  # an offline judge (lexical baseline, option checker): no model is paid
        return 0.0, "offline judge"
    overrides = {run_pricing.model: run_pricing} if run_pricing is not None else None
    pricing = resolve_pricing(model, base_url, overrides)
    if pricing is None:
        return None, None
    cost = Pricer(pricing).cost(TokenUsage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                                           cache_read_input_tokens=usage.cached_input_tokens or None))
    return float(cost), pricing.source


def pareto_frontier(points: dict[str, tuple[float, float]]) -> list[str]:
    """The labels of `points` (label -> (cost, score)) that no other point dominates: none costs as little or less
    and scores as high or higher, with one of the two strictly. Ordered by cost."""
    frontier = []
    for label, (cost, score) in points.items():
        dominated = any(c <= cost and s >= score and (c < cost or s > score)
                        for other, (c, s) in points.items() if other != label)
        if not dominated:
            frontier.append(label)
    return sorted(frontier, key=lambda lab: (points[lab][0], -points[lab][1]))


def cost_grid(costs: dict[str, SystemCost], scores: dict[str, float], score_name: str):
    """The leaderboard's cost table: each system's score, median and total cost, judge cost and price source."""
    from omnidr.scoring import Grid

    priced = {label: (c.per_task_median, scores[label]) for label, c in costs.items()
              if c.per_task_median is not None and label in scores}
    frontier = set(pareto_frontier(priced))
    rows = []
    for label, c in costs.items():
        rows.append([label, f"{scores[label]:.1f}" if label in scores else "-", cost_text(c.per_task_median),
                     cost_text(c.total), str(c.attempts), cost_text(c.judge),
                     "yes" if label in frontier else "no", c.price_source or "no price for the model"])
    return Grid("Cost (US dollars; unpriced: an exchange without a price or usage, never counted as $0)",
                ["system", score_name, "cost per task (median)", "cost (total)", "attempts", "judge cost",
                 "Pareto frontier", "price source"], rows, frozenset({1, 2, 3, 4, 5}))


def plot_cost(costs: dict[str, SystemCost], scores: dict[str, float], score_name: str, path: Path,
              subtitle: str) -> bool:
    """Score against median cost per task, the Pareto frontier joined; False (nothing written) without a priced
    system."""
    points = {label: (c.per_task_median, scores[label]) for label, c in costs.items()
              if c.per_task_median is not None and label in scores}
    if not points:
        path.unlink(missing_ok=True)  # an earlier figure of systems no longer priced would mislead
        return False
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    frontier = pareto_frontier(points)
    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    for label, (cost, score) in points.items():
        on = label in frontier
        ax.scatter([cost], [score], s=60 if on else 35, color="#C44E52" if on else "#4C72B0", zorder=3)
        ax.annotate(label, (cost, score), textcoords="offset points", xytext=(6, 4), fontsize=8)
    ax.step([points[lab][0] for lab in frontier], [points[lab][1] for lab in frontier], where="post",
            color="#C44E52", lw=1.2, label="Pareto frontier")
    ax.set_xlabel("cost per task, US dollars (median over tasks, all attempts)")
    ax.set_ylabel(score_name)
    ax.set_title(f"Score against cost\n{subtitle}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
    return True


def cost_metrics(cost: SystemCost | None) -> dict[str, float | None]:
    """A system's dollars as MLflow metrics (an unpriced figure is left out, never logged as 0)."""
    if cost is None:
        return {}
    return {"cost_per_task_median_usd": cost.per_task_median, "cost_total_usd": cost.total,
            "judge_cost_usd": cost.judge, "unpriced_attempts": cost.unpriced_attempts}
