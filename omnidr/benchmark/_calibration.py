"""The behavioural-calibration record of a snapshot (paper Sec. 3.4 S5 and App. E.4).

Three reports per task, made by one model under one harness: R1 sees the video but cannot search,
R2 has the full tool set, R3 also gets an evidence brief from the fact library. "Every retained task
satisfies R1 < R2 < R3 and R3 - R1 > delta_cal" (`calibration_gap` in hyperparameters.json).

The paper leaves open whether delta_cal is an absolute or a relative gain; this project reads it as an
absolute gain of the report score on its 0-1 scale, so the released 0.20 asks for more than 20 points
on the 0-100 scale the record keeps.
"""

from pydantic import Field

from ._base import Record

CALIBRATION_FILE = "calibration.json"


class CalibrationScores(Record):
    R1: float = Field(ge=0, le=100, description="Report score (0-100) of the video-only report.")
    R2: float = Field(ge=0, le=100, description="Report score (0-100) of the full-tool report.")
    R3: float = Field(ge=0, le=100, description="Report score (0-100) of the evidence-brief report.")


class Calibration(Record):
    systems: dict[str, str] = Field(description="R1, R2, R3 -> the system (harness, model, capability) that wrote them.")
    judge: str = Field(description="The judge that scored the three reports.")
    tasks: dict[str, CalibrationScores] = Field(description="Task id -> its three report scores.")


def _points(x: float, sign: str = "") -> str:
    """A score to one decimal, without a trailing .0 (97.3, 20, +5.5)."""
    text = f"{x:{sign}.1f}"
    return text[:-2] if text.endswith(".0") else text


def calibration_problem(scores: CalibrationScores, gap: float) -> str | None:
    """Why a task fails the calibration rule (None when it passes)."""
    if not scores.R1 < scores.R2 < scores.R3:
        return (f"R1 < R2 < R3 does not hold (R1 {_points(scores.R1)}, R2 {_points(scores.R2)}, R3 {_points(scores.R3)}: "
                f"R2 - R1 = {_points(scores.R2 - scores.R1, '+')}, R3 - R2 = {_points(scores.R3 - scores.R2, '+')} points)")
    gain = scores.R3 - scores.R1
    if not gain > 100 * gap:
        return f"R3 - R1 = {_points(gain)} points, not above the calibration gap of {100 * gap:g} points"
    return None
