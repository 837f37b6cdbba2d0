"""What scoring one report produces: the total, the dimension and direction layers, the N/A guard record."""

from pydantic import Field

from omnidr.benchmark import Difficulty, Dimension, GateLogic

from ._base import ScoringModel


class ScoringSettings(ScoringModel):
    """The parameters one score was computed with (copied into every result for audit)."""

    lambda_C: float = Field(ge=0, description="Weight of the content dimension.")
    lambda_R: float = Field(ge=0, description="Weight of the citation dimension.")
    lambda_P: float = Field(ge=0, description="Weight of the presentation dimension.")
    tau: float = Field(gt=0, description="Saturation threshold (pass rate, 0-1) of the high-volume directions.")
    kappa: int = Field(ge=1, description="Weight cap (atoms) of the high-volume directions.")
    na_guard: bool = Field(description="Whether the guarded citation N/A procedure ran.")

    def lambdas(self) -> dict[Dimension, float]:
        return {Dimension.C: self.lambda_C, Dimension.R: self.lambda_R, Dimension.P: self.lambda_P}


class DirectionScore(ScoringModel):
    """One direction of one report. Rates are fractions 0-1; None when no atom is applicable."""

    direction: str = Field(description="Direction id, e.g. C-FC.")
    dimension: Dimension = Field(description="Dimension the direction belongs to.")
    gate: bool = Field(description="True for a gate direction (a failed gate zeroes it).")
    logic: GateLogic = Field(description="Declared logic: all / any for gates, rate for core directions.")
    high_volume: bool = Field(description="Saturating direction (credited min(1, r/tau), weight capped at kappa).")
    atoms: int = Field(description="Atoms of this direction in the tree.")
    passed: int = Field(description="Applicable atoms decided pass.")
    failed: int = Field(description="Applicable atoms decided fail.")
    judged_na: int = Field(description="Atoms the judge declared not applicable.")
    guard_na: int = Field(description="Failed citation atoms set N/A by the guard (not applicable).")
    skipped: int = Field(description="Atoms with an evaluator error or no decision (not applicable).")
    applicable: int = Field(description="|A_d|: atoms decided pass or fail and not set N/A by the guard.")
    rate: float | None = Field(description="r_d = passed / applicable, fraction 0-1.")
    credited: float | None = Field(description="c_d: min(1, r_d / tau) for high-volume directions, else r_d.")
    weight: int | None = Field(description="w_d: applicable atoms, capped at kappa for high-volume directions.")
    gate_passed: bool | None = Field(description="Gate status (declared logic met); None for core directions.")
    effective: float | None = Field(description="g_d * c_d: the value that enters the dimension mean, 0-1.")


class DimensionScore(ScoringModel):
    """D_k of one dimension that has at least one applicable direction."""

    dimension: Dimension = Field(description="C, R or P.")
    score: float = Field(description="100 * D_k, points 0-100.")
    weight: float = Field(description="lambda_k used for this dimension.")
    directions: int = Field(description="Directions with applicable atoms that entered D_k.")
    applicable: int = Field(description="Applicable atoms over those directions (before caps).")


class DifficultyCount(ScoringModel):
    """Applicable and passed atoms of one evidence difficulty level."""

    applicable: int = Field(description="Applicable atoms at this level (after the guard).")
    passed: int = Field(description="Of those, atoms decided pass.")


class GuardStep(ScoringModel):
    """One reading of the guard (Eq. 5) and what it led to."""

    proposed: int = Field(description="Candidates still proposed for N/A when the reading was taken.")
    delta_c: float = Field(description="Delta_C: estimated score gain (fraction of lambda-weighted 1) of stating one omitted fact.")
    delta_r: float = Field(description="Delta_R: estimated citation gain of removing the proposed candidates.")
    retracted: str | None = Field(description="Atom restored to fail because Delta_C <= Delta_R; None when the reading held.")


class NaGuard(ScoringModel):
    """The record of the guarded citation N/A procedure for one report (App. A.4)."""

    enabled: bool = Field(description="False when scoring ran with the guard switched off.")
    candidates: int = Field(description="Failed citation atoms whose linked coverage atoms all failed.")
    applied: int = Field(description="Candidates set N/A in the end.")
    retracted: int = Field(description="Candidates restored to fail by the guard.")
    delta_c: float | None = Field(description="Final Delta_C for the applied set; None when nothing is applied.")
    delta_r: float | None = Field(description="Final Delta_R for the applied set; None when nothing is applied.")
    candidate_atoms: list[str] = Field(description="Ids of all candidates, sorted.")
    applied_atoms: list[str] = Field(description="Ids of the candidates set N/A, sorted.")
    retracted_atoms: list[str] = Field(description="Ids restored to fail, in the order the guard restored them.")
    steps: list[GuardStep] = Field(description="Every guard reading in order (for audit).")


class ReportScore(ScoringModel):
    """The Omni-ART score of one report (Sec. 3.3, Eq. 2-3) with everything needed to audit and re-aggregate it."""

    task_id: str = Field(description="Task the report answers.")
    failed: bool = Field(description="True when the report is missing or unreadable; it then scores 0.")
    failure_reason: str | None = Field(None, description="Why the report failed.")
    judge: str | None = Field(None, description="Identity of the judge that decided the J atoms, when known.")
    total: float = Field(ge=0, le=100, description="S, points 0-100.")
    dimensions: dict[Dimension, DimensionScore] = Field(
        default_factory=dict, description="Dimensions with at least one applicable direction."
    )
    directions: list[DirectionScore] = Field(default_factory=list, description="Every direction the tree uses, inventory order.")
    difficulties: dict[Difficulty, DifficultyCount] = Field(
        default_factory=dict, description="Applicable and passed atoms per difficulty level L0-L3."
    )
    na_guard: NaGuard | None = Field(None, description="Guard record; None for a failed report.")
    skipped: int = Field(0, description="Atoms not scored because of an evaluator error or a missing decision.")
    missing_decisions: list[str] = Field(default_factory=list, description="Atom ids of the tree that had no decision (counted as skipped).")
    settings: ScoringSettings | None = Field(None, description="Parameters used; None for a failed report.")
    failed_coverage: dict[str, int] = Field(
        default_factory=dict, description="Failed coverage criteria (the high-volume directions' positive atoms and "
        "every coverage check) by what the judge's rationale says: omission, contradiction or unclassified "
        "(App. F.3; `omnidr.scoring._rationale`).")

    def direction(self, direction_id: str) -> DirectionScore:
        """The score of one direction; KeyError if the tree has no atom in it."""
        for d in self.directions:
            if d.direction == direction_id:
                return d
        raise KeyError(direction_id)

    @classmethod
    def failure(cls, task_id: str, reason: str) -> "ReportScore":
        """The result of a missing or unreadable report: zero, counted as a failure."""
        return cls(task_id=task_id, failed=True, failure_reason=reason, total=0.0)
