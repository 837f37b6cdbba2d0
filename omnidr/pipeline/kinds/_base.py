"""What every kind shares: scoring a system's attempts (or keeping its current evaluations) and the leaderboard
stage's bookkeeping. A kind says only how it reads its evaluations, what leaves one not final, how it is tracked and
how the score line reads."""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omnidr.benchmark import TaskFormat
from omnidr.errors import UserError
from omnidr.paths import RunPaths

from .._checks import StageResult
from .._specs import Endpoint, judge_settings
from ._protocol import Scoring


class KindBase:
    """The generic part of a `TaskKind`; subclasses fill in the hooks below."""

    name: str
    task_format: TaskFormat
    deliverable: str
    default_harness = "reference"
    evaluates_in_image = True
    kept_note = "every delivery is already evaluated by this judge; kept"

    example_reports = False
    exports: tuple[str, ...] = ()
    deliveries = "reports"
    compare_unreadable_hint = ""
    compare_judges_differ = ("the folders were scored by different judges ({judges}); re-score them with one judge "
                             "(omnidr archive + omnidr rescore) before comparing")

    def describe_tasks(self, snap) -> str:
        return f"task kind {self.name}"

    def source_videos(self, snap) -> dict[str, Path]:
        """Each task's video."""
        return {task_id: b.folder / b.video.file for task_id, b in snap.tasks.items() if b.video is not None}

    # -- hooks ---------------------------------------------------------------------------------------------------
    @property
    def evaluator_version(self) -> str:
        raise NotImplementedError

    def judge_key(self, judge: Endpoint) -> str:
        raise NotImplementedError

    def read_system(self, folder: Path) -> Any:
        """A scored system folder of `omnidr eval` as its board and `compare` take it, or why it cannot be used."""
        raise NotImplementedError

    def collect_systems(self, root: Path, judge_key: str, task_ids: list[str]) -> list[Any]:
        """The system folders of `root` scored by `judge_key` on `task_ids`, read by `read_system`."""
        raise NotImplementedError

    def compare_systems(self, chosen: list[Any], snapshot: Path, task_ids: list[str], under: Any, console,
                        fmt: str) -> Any:
        """The paired comparison of `chosen` (each with the first), printed and written under `under.root`."""
        raise NotImplementedError

    def read_scores(self, folder: Path) -> tuple[Any, list]:
        """(summary, evaluations) of an evaluation folder; UserError when it holds none of this kind."""
        raise NotImplementedError

    def pending(self, ev) -> str | None:
        """Why an evaluation is not final, None when it is."""
        return ev.incomplete

    def scoring_note(self, n: int, judge: Endpoint) -> str:
        raise NotImplementedError

    def track(self, tracker, label: str, ev, evaluation_dir: Path) -> None:
        raise NotImplementedError

    def score_detail(self, scored, evaluations: list, pending: dict[str, str]) -> str:
        raise NotImplementedError

    def evaluate(self, run_dir: Path, out_dir: Path, tasks: Sequence[str], scoring: Scoring):
        """In the evaluator (its image by default, or this process with `--evaluator host`)."""
        from omnidr.evaluation import ScoreRequest, score_folder

        request = ScoreRequest(run_dir=run_dir, out_dir=out_dir, snapshot=scoring.snapshot,
                               judge_settings=judge_settings(scoring.judge), tasks=tuple(tasks),
                               evaluator=scoring.evaluator, outside_network=scoring.outside_network)
        return score_folder(request, progress=scoring.progress)

    # -- generic -------------------------------------------------------------------------------------------------
    def kept_scores(self, folder: Path, judge: Endpoint, records: dict):
        """The existing (summary, evaluations) when complete and current: same judge and evaluator version, every
        task's evaluation made from its last attempt, and none pending. Else None (evaluate again)."""
        if not RunPaths(folder).scored:
            return None
        try:
            summary, evaluations = self.read_scores(RunPaths(folder).evaluation)
        except UserError:
            return None
        last = {t: (rs[-1].attempt if rs else None) for t, rs in records.items()}
        scored = {ev.task_id: ev for ev in evaluations}
        if (summary.judge.key != self.judge_key(judge) or summary.evaluator_version != self.evaluator_version
                or set(scored) != set(last) or any(self.pending(ev) for ev in evaluations)
                or any(scored[t].attempt != a for t, a in last.items())):
            return None
        return summary, evaluations

    def score_system(self, request, spec, folder: Path, task_ids: Sequence[str], progress, tracker,
                     out) -> StageResult:
        kept = self.kept_scores(folder, request.judge, out.records)
        if kept is not None:
            progress.note(f"{spec.label}: {self.kept_note}")
            out.scored, evaluations = kept
        else:
            progress.note(f"{spec.label}: {self.scoring_note(len(task_ids), request.judge)}")
            scoring = Scoring(Path(request.snapshot), request.judge, request.evaluator, request.outside_network,
                              progress.note)
            out.scored = self.evaluate(folder, RunPaths(folder).evaluation, task_ids, scoring)
            _, evaluations = self.read_scores(RunPaths(folder).evaluation)
        out.evaluations = {(ev.task_id, ev.attempt): ev for ev in evaluations if ev.attempt is not None}
        for ev in evaluations:
            if ev.attempt is not None:
                self.track(tracker, spec.label, ev, RunPaths(folder).task_evaluation(ev.task_id).parent)
        pending = {ev.task_id: why for ev in evaluations if (why := self.pending(ev))}
        detail = self.score_detail(out.scored, evaluations, pending)
        if pending:
            return StageResult(f"score {spec.label}", "failed", f"{detail}; provisional: "
                               + "; ".join(f"{t}: {why}" for t, why in pending.items()) + "; rerun the same command "
                               "to finish them")
        return StageResult(f"score {spec.label}", "ok", detail)

