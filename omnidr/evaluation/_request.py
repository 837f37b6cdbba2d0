"""`ScoreRequest`: what to score and how, passed whole from a command to the evaluator."""

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from omnidr.paths import RunPaths

from ._browser import ProbeLimits
from ._judge import JudgeSettings

Step = Literal["all", "probe", "judge"]
"""What a scoring does: both steps in this process (`all`), or one of them, as the evaluator image's two
containers do (`probe`: the browser, no judge key; `judge`: the key, no browser, only what `probe` wrote)."""


class ScoreRequest(BaseModel):
    """One scoring of a run folder: its inputs, its judge, and where the scores are computed. The progress
    callback is not part of it (it is how the caller watches, not what is scored)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_dir: Path | None = None
    """The run folder scored (made by `omnidr run` or `omnidr eval`); None only for the judge step, which reads
    `probe_dir` instead."""
    out_dir: Path | None = None
    """Where evaluation.json files and summary.json go; None: RUN_DIR/evaluation."""
    snapshot: Path | None = None
    """The snapshot the run used; None: the one named in run.json."""
    judge_settings: JudgeSettings | None = None
    """The judge endpoint; None: the offline baseline judge."""
    tasks: tuple[str, ...] | None = None
    """Only these task ids; None or empty: every task of the run."""
    cache_dir: Path | None = None
    """The judge cache folder (`evaluator="host"` only); None: OUT/judge-cache."""
    evaluator: str = "docker"
    """Where scores are computed: `docker` (the evaluator image's containers) or `host` (this process)."""
    outside_network: str | None = None
    """The Docker network the judge relay reaches the judge through (`evaluator="docker"`); None: `bridge`."""
    limits: ProbeLimits = ProbeLimits()
    """Bounds on what a report may cost (reports only)."""
    step: Step = "all"
    """`all`; or one step in this process, as the evaluator image's containers run it: `probe` writes the probe
    step's output to `out_dir`, `judge` reads it from `probe_dir` and finishes the scoring."""
    probe_dir: Path | None = None
    """The probe step's output, for `step="judge"`."""

    @property
    def target(self) -> Path:
        """The output folder: `out_dir`, else RUN_DIR/evaluation."""
        if self.out_dir is not None:
            return Path(self.out_dir)
        if self.run_dir is None:
            raise ValueError("a ScoreRequest without run_dir needs out_dir")
        return RunPaths(Path(self.run_dir)).evaluation
