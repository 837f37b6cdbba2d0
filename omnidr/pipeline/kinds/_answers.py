"""What the answer kinds share: an attempt delivers `/output/answer.json`; an answer is correct or not; the board is
the accuracy leaderboard with its breakdowns (`_answer_board.py`). A kind whose answers are checked otherwise
overrides `evaluate` (and `judge_key`)."""

import re
from pathlib import Path

from .._costs import cost_metrics
from .._specs import Endpoint, judge_settings
from ._base import KindBase


def metric_name(label: str) -> str:
    """A breakdown label as MLflow allows a metric name (letters, digits, _ - . / and spaces): `<2 min` -> `lt2min`."""
    return re.sub(r"[^\w\-./]", "", label.replace(">=", "ge").replace("<", "lt"))


class AnswerKind(KindBase):
    deliverable = "an answer"
    kept_note = "every answer is already judged by this judge; kept"
    deliveries = "answers"
    compare_unreadable_hint = " (folders of one task kind compare)"
    compare_judges_differ = ("the folders were judged by different judges ({judges}); judge them with one judge "
                             "before comparing")

    @property
    def evaluator_version(self) -> str:
        from omnidr.evaluation import ANSWER_EVALUATOR_VERSION

        return ANSWER_EVALUATOR_VERSION

    def judge_key(self, judge: Endpoint) -> str:
        from omnidr.evaluation import answer_judge_identity

        return answer_judge_identity(judge_settings(judge), self.task_format).key

    def read_scores(self, folder: Path):
        from omnidr.evaluation import read_answer_run

        return read_answer_run(folder)

    def scoring_note(self, n: int, judge: Endpoint) -> str:
        return f"judging {n} answer(s) (judge {judge.spec})"

    def track(self, tracker, label: str, ev, evaluation_dir: Path) -> None:
        tracker.attempt_answer(label, ev.task_id, ev.attempt, ev, evaluation_dir)

    def score_detail(self, scored, evaluations: list, pending: dict[str, str]) -> str:
        per_task = "; ".join(f"{ev.task_id} " + ("not final" if ev.incomplete else "correct" if ev.correct else "wrong")
                             for ev in evaluations)
        correct = sum(ev.correct for ev in evaluations)
        return f"{correct}/{len(evaluations)} correct with judge {scored.judge.key}: {per_task}"

    # -- the board -----------------------------------------------------------------------------------------------
    def build_board(self, root: Path, snapshot: Path, snapshot_id: str, key: str, task_ids: list[str],
                    traces: Path | None = None):
        from ._answer_board import build_answer_results

        board, results = build_answer_results(root, snapshot, snapshot_id, key, task_ids)
        return (None, None) if board is None or results is None else (board, results)

    def write_board(self, root: Path, board, results) -> list[Path]:
        from ._answer_board import write_answer_results

        return write_answer_results(root, board, results)

    def system_metrics(self, row, results) -> dict[str, float | None]:
        p = row.process
        metrics: dict[str, float | None] = {} if row.provisional else {
            "accuracy": row.accuracy, "accuracy_ci_low": row.accuracy_ci_low, "accuracy_ci_high": row.accuracy_ci_high,
            "correct": row.correct, "answered": row.answered, "rank": row.rank,
            **{f"accuracy.{name}.{metric_name(g.group)}": g.accuracy for name, groups in row.breakdowns.items()
               for g in groups}}
        metrics.update({"tasks_not_final": len(row.incomplete), "mean_tokens": p.mean_tokens,
                        "mean_elapsed_s": p.mean_elapsed_s, "budget_exhausted_share": p.budget_exhausted_share,
                        "failed_latency_share": p.failed_latency_share, "failed_call_share": p.failed_call_share,
                        **cost_metrics(results.costs.get(row.label))})
        return metrics

    def ranked_by(self, key: str) -> str:
        return f"accuracy, judge {key}"

    def print_board(self, board, run_root: Path | None, console) -> None:
        from ._answer_board import print_answer_board

        print_answer_board(board, console)

    # -- comparisons ---------------------------------------------------------------------------------------------
    def ablations(self, chosen, snapshot: Path, task_ids: list[str], console, fmt: str) -> None:
        """Tables over the systems compared beyond the paired differences (none for short answers)."""

    def read_system(self, folder: Path):
        from ._answer_board import read_answer_system

        return read_answer_system(folder)

    def collect_systems(self, root: Path, judge_key: str, task_ids: list[str]):
        from ._answer_board import collect_answer_systems

        return collect_answer_systems(root, judge_key, task_ids)[0]

    def compare_systems(self, chosen, snapshot: Path, task_ids: list[str], under, console, fmt: str):
        from .._compare import compare_answers

        result = compare_answers(chosen, task_ids, under, console, fmt)
        if fmt != "json":
            self.ablations(chosen, snapshot, task_ids, console, fmt)
        return result
