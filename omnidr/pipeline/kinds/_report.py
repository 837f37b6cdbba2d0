"""The report kind: OmniDR-Bench (paper 000). An attempt delivers an interactive HTML report (`/output/report/`);
browser probes and the rubric judge decide every Omni-ART atom; the board is the Omni-ART score table with its
analysis tables (`_results.py`)."""

from pathlib import Path

from omnidr.benchmark import TaskFormat

from .._costs import cost_metrics
from .._specs import Endpoint
from ._base import KindBase


class ReportKind(KindBase):
    name = "report"
    task_format = TaskFormat.report
    deliverable = "a report"
    default_harness = "reference"
    kept_note = "every report is already scored by this judge and evaluator; kept"
    example_reports = True

    def describe_tasks(self, snap) -> str:
        return f"{sum(len(b.rubric.atoms) for b in snap.tasks.values() if b.rubric)} atoms"

    @property
    def evaluator_version(self) -> str:
        from omnidr.evaluation import EVALUATOR_VERSION

        return EVALUATOR_VERSION

    def judge_key(self, judge: Endpoint) -> str:
        from omnidr.evaluation import PROMPT_VERSION, BaselineJudge, JudgeIdentity

        if judge.offline:
            return BaselineJudge().identity.key
        return JudgeIdentity(kind="openai-compatible", model=judge.name, prompt_version=PROMPT_VERSION).key

    def read_scores(self, folder: Path):
        from omnidr.evaluation import read_scored_run

        return read_scored_run(folder)

    def pending(self, ev) -> str | None:
        if ev.incomplete or ev.skipped_atoms:
            return ev.incomplete or f"the judge did not answer for {ev.skipped_atoms} atom(s)"
        return None

    def scoring_note(self, n: int, judge: Endpoint) -> str:
        return f"scoring {n} report(s) (browser probes, judge {judge.spec})"

    def track(self, tracker, label: str, ev, evaluation_dir: Path) -> None:
        tracker.attempt_score(label, ev.task_id, ev.attempt, ev, evaluation_dir)

    def score_detail(self, scored, evaluations: list, pending: dict[str, str]) -> str:
        per_task = "; ".join(f"{t.task_id} " + ("not final" if t.task_id in pending else
                                                  f"{t.total:.1f}" + (" (failed)" if t.failed else ""))
                             for t in scored.tasks)
        return f"mean {scored.mean_total:.1f} with judge {scored.judge.key}: {per_task}"

    # -- the board -----------------------------------------------------------------------------------------------
    def build_board(self, root: Path, snapshot: Path, snapshot_id: str, key: str, task_ids: list[str],
                    traces: Path | None = None):
        from .._results import build_results

        return build_results(root, snapshot, snapshot_id, key, task_ids, traces=traces)

    def write_board(self, root: Path, board, results) -> list[Path]:
        from .._results import write_results

        return write_results(root, board, results)

    def system_metrics(self, row, results) -> dict[str, float | None]:
        # a provisional row logs no score: MLflow shows only how many tasks are not final
        scores: dict[str, float | None] = {} if row.provisional else {
            "avg": row.avg, "avg_ci_low": row.avg_ci_low, "avg_ci_high": row.avg_ci_high,
            "success_rate": row.success_rate, "avg_succ": row.avg_succ, "content": row.content,
            "citation": row.citation, "presentation": row.presentation, "rank": row.rank}
        return {**scores, "tasks_not_final": len(row.incomplete), **cost_metrics(results.costs.get(row.label))}

    def ranked_by(self, key: str) -> str:
        return f"judge {key}"

    def print_board(self, board, run_root: Path | None, console) -> None:
        from omnidr.scoring import by_folder, leaderboard_grids

        from .._results import system_folders

        grids, legend = by_folder(leaderboard_grids(board)[:1], system_folders(run_root))
        console.print(grids[0].rich())
        for line in legend:
            console.print(line, soft_wrap=True, markup=False)

    # -- comparisons ---------------------------------------------------------------------------------------------
    def read_system(self, folder: Path):
        from .._results import read_system

        return read_system(folder)

    def collect_systems(self, root: Path, judge_key: str, task_ids: list[str]):
        from .._results import collect_systems

        return collect_systems(root, judge_key, task_ids)[0]

    def compare_systems(self, chosen, snapshot: Path, task_ids: list[str], under, console, fmt: str):
        from .._compare import compare_chosen

        return compare_chosen(chosen, snapshot, task_ids, under, console, fmt)
