"""Released scoring, construction and execution constants (paper App. A.1, D.3)."""

from pydantic import Field

from ._base import Record


class DimensionWeights(Record):
    C: float = Field(0.50, ge=0, description="lambda_C: weight of the content dimension in the report score.")
    R: float = Field(0.30, ge=0, description="lambda_R: weight of the citation dimension.")
    P: float = Field(0.20, ge=0, description="lambda_P: weight of the presentation dimension.")


EXTERNAL = "external"
"""The `source_type` of a budget over every external source record, whatever its type (B_web)."""


class ReferenceBudgets(Record):
    """Minimum evidence counts the reference workflow aims for (App. D.3)."""

    web_sources: int = Field(25, ge=0, description="B_web: minimum external sources in a report, of every type (web "
                             "pages, documents, images and related videos are all external sources; App. D.3).")
    related_videos: int = Field(5, ge=0, description="B_video: minimum related videos.")
    documents: int = Field(3, ge=0, description="B_doc: minimum documents (PDFs, standards, papers).")
    records_per_anchor: int = Field(3, ge=0, description="B_anchor: minimum source records per research anchor.")

    def minimum(self, source_type: str) -> int | None:
        """The budget for source records of one kind: `external` (every source record, whatever its type: B_web,
        App. D.3 "minimum external-source ... counts"), `video` (B_video) or `document` (B_doc); None for a kind
        the released budgets do not count (`web` pages alone, `image`)."""
        return {EXTERNAL: self.web_sources, "video": self.related_videos, "document": self.documents}.get(source_type)


class Hyperparameters(Record):
    """Everything numeric that the score and the reference workflow depend on; fixed before comparison."""

    version: str = Field("omnidr-bench-released", description="Name of this parameter set.")
    dimension_weights: DimensionWeights = Field(default_factory=DimensionWeights, description="lambda per dimension.")
    tau: float = Field(0.18, gt=0, le=1, description="Saturation threshold tau_d of the high-volume directions (pass rate for full credit).")
    kappa: int = Field(15, ge=1, description="Weight cap kappa_d (atoms) of the high-volume directions.")
    window_s: float = Field(300.0, gt=0, description="T_win: length of one audiovisual reading window, seconds.")
    budgets: ReferenceBudgets = Field(default_factory=ReferenceBudgets, description="Reference evidence budgets.")
    calibration_gap: float = Field(0.20, ge=0, le=1, description="delta_cal: minimum R3-R1 score gain (fraction) for a task to be kept.")
    max_repair_rounds: int = Field(3, ge=0, description="R_max: at most this many validation-and-repair rounds.")
    gate_votes: int = Field(3, ge=1, description="Judge votes per gate atom, decided by majority.")
    bootstrap_replicates: int = Field(20000, ge=100, description="Task-bootstrap replicates for confidence intervals (App. F.2).")
