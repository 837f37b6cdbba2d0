"""Models of the across-report results: systems, leaderboard rows, paired comparisons, sensitivity."""

from typing import Literal

from pydantic import Field

from omnidr.benchmark import Difficulty

from ._base import ScoringModel
from ._decisions import Decisions
from ._report_models import DifficultyCount, ReportScore, ScoringSettings


class SystemKey(ScoringModel):
    """One evaluated system: model x harness x capability x budget (the file `system.json`)."""

    model: str = Field(min_length=1, description="Model name, e.g. claude-opus-5.")
    harness: str = Field("", description="Agent harness, e.g. claude-code.")
    capability: str = Field("", description="Capability (skill) configuration, e.g. full-workflow.")
    budget: str = Field("", description="Budget name, e.g. default.")
    translation: str = Field("", description="The gateway's API translation between the harness and the model's "
                             "endpoint, e.g. anthropic-messages->openai-chat; empty when the endpoint speaks the "
                             "harness's API.")

    @property
    def label(self) -> str:
        """Short display name: the non-empty parts joined by ' / '."""
        return " / ".join(p for p in (self.model, self.harness, self.capability, self.budget, self.translation) if p)


class SystemScores(ScoringModel):
    """Every report score of one system (one per task; a task without a report counts as a failure)."""

    system: SystemKey = Field(description="The system.")
    reports: list[ReportScore] = Field(description="Report scores, at most one per task.")


class SystemDecisions(ScoringModel):
    """The saved decisions of one system, one `Decisions` per task; the input of re-aggregation."""

    system: SystemKey = Field(description="The system.")
    decisions: list[Decisions] = Field(description="Decisions per task, at most one per task.")


class SystemResult(ScoringModel):
    """One leaderboard row (paper Table 3 plus the direction and difficulty pass rates)."""

    rank: int | None = Field(
        description="1 = highest Avg; systems whose Avg is within 1e-9 points share a rank (1, 2, 2, 4). "
        "None for a provisional row, which is not ranked."
    )
    system: SystemKey = Field(description="The system.")
    label: str = Field(description="Display name of the system.")
    tasks: int = Field(description="Tasks in the task set.")
    successes: int = Field(description="Tasks with a readable report.")
    success_rate: float = Field(description="successes / tasks, fraction 0-1.")
    avg: float = Field(description="Mean score over all tasks with failures as 0, points 0-100.")
    avg_ci_low: float = Field(description="Lower end of the task-bootstrap percentile interval of avg, points.")
    avg_ci_high: float = Field(description="Upper end of the task-bootstrap percentile interval of avg, points.")
    avg_succ: float | None = Field(description="Mean score over successful reports, points; None without any.")
    content: float | None = Field(description="Mean content dimension score over successful reports, points.")
    citation: float | None = Field(description="Mean citation dimension score over successful reports, points.")
    presentation: float | None = Field(description="Mean presentation dimension score over successful reports, points.")
    direction_pass_rates: dict[str, float] = Field(
        description="Direction id -> mean over successful reports of the report's pass rate r_d (fraction), "
        "over reports where the direction has applicable atoms."
    )
    difficulty_pass_rates: dict[Difficulty, float] = Field(
        description="L0-L3 -> mean over successful reports of the report's pass rate at that level (fraction)."
    )
    direction_atoms: dict[str, DifficultyCount] = Field(
        default_factory=dict, description="Direction id -> applicable and passed atoms summed over successful "
        "reports: the pooled-atom counts behind the dashboard's pooled rates (App. F.3).")
    difficulty_atoms: dict[Difficulty, DifficultyCount] = Field(
        default_factory=dict, description="L0-L3 -> applicable and passed atoms summed over successful reports.")
    failed_coverage: dict[str, int] = Field(
        default_factory=dict, description="Failed coverage criteria by what the judge's rationale says (omission, "
        "contradiction, unclassified), summed over successful reports (App. F.3).")
    incomplete: list[str] = Field(
        default_factory=list,
        description="Tasks whose score is not final (the judge did not answer for some atoms, or the last attempt was "
        "ended by an upstream outage or an infrastructure failure). A row with any is provisional: its numbers are "
        "shown marked as such and it is not ranked.",
    )

    @property
    def provisional(self) -> bool:
        return bool(self.incomplete)


class Leaderboard(ScoringModel):
    """Per-system results over one task set, ranked by Avg."""

    task_ids: list[str] = Field(description="The task set.")
    replicates: int = Field(description="Task-bootstrap replicates behind the intervals.")
    seed: int = Field(description="Seed of the bootstrap index matrix.")
    confidence: float = Field(description="Coverage of the percentile intervals, fraction (0.95).")
    settings: ScoringSettings | None = Field(description="Parameters every report was scored with; None if none was scored.")
    rows: list[SystemResult] = Field(description="Systems, best Avg first.")
    sensitivity: "Sensitivity | None" = Field(None, description="Re-aggregation under alternative parameters, if asked for.")
    comparisons: list["PairedComparison"] = Field(default_factory=list, description="Paired comparisons, if asked for.")


class PairedComparison(ScoringModel):
    """A minus B over the same tasks, with a paired task bootstrap (the same resampled tasks for both)."""

    a: str = Field(description="Label of system A.")
    b: str = Field(description="Label of system B.")
    tasks: int = Field(description="Tasks compared (failures score 0 for either system).")
    mean_a: float = Field(description="Avg of A, points.")
    mean_b: float = Field(description="Avg of B, points.")
    mean_difference: float = Field(description="Avg(A) - Avg(B), points.")
    ci_low: float = Field(description="Lower end of the paired bootstrap percentile interval of the difference, points.")
    ci_high: float = Field(description="Upper end of the interval, points.")
    wins: int = Field(description="Tasks where A scores above B.")
    ties: int = Field(description="Tasks where A and B score the same.")
    losses: int = Field(description="Tasks where A scores below B.")
    replicates: int = Field(description="Bootstrap replicates.")
    seed: int = Field(description="Seed of the bootstrap index matrix.")
    confidence: float = Field(description="Coverage of the interval, fraction.")


class SensitivityVariant(ScoringModel):
    """One alternative parameter set; only one group differs from the released values."""

    name: str = Field(description="Short name, e.g. 'tau = 0.12'.")
    group: Literal["released", "lambda", "tau", "kappa"] = Field(description="Parameter group that was changed.")
    settings: ScoringSettings = Field(description="The full parameter set used.")


class SensitivityRow(ScoringModel):
    """Every system's Avg and rank under one variant (a row of paper Table 15)."""

    variant: SensitivityVariant = Field(description="The variant.")
    scores: dict[str, float] = Field(description="System label -> Avg (all tasks, failures 0), points.")
    ranks: dict[str, int] = Field(description="System label -> rank under this variant.")
    max_rank_change: int = Field(description="Largest absolute rank change of any system from the released setting.")
    same_top3: bool = Field(description="True when the top three systems are the same, in the same order.")


class Sensitivity(ScoringModel):
    """Re-aggregation of saved decisions under alternative lambda, tau and kappa (paper App. F.2, Table 15)."""

    systems: list[str] = Field(description="System labels in released-rank order.")
    rows: list[SensitivityRow] = Field(description="The released setting first, then one row per variant.")


Leaderboard.model_rebuild()
