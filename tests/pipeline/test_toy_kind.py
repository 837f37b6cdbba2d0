"""Adding a task kind is one module: a toy kind (short answers checked by exact match, defined here and registered
through the registry's public API, nothing edited elsewhere) runs end to end through `omnidr eval` on a two-task
snapshot made from the OpenDS-World demo.

The toy kind builds on the short-answer task format (task files, agent inputs, `/output/answer.json`), so the agent
and the sandbox run as for any short-answer snapshot; its own part is the check. That check needs no browser and no
judge key, so the kind evaluates in the driver's process (`evaluates_in_image = False`): the evaluator image is
neither built nor used, whatever `--evaluator` says."""

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner
from testkit import ROOT

from omnidr.benchmark import TaskFormat
from omnidr.evaluation import AnswerJudgement, AnswerRequest, AnswerVerdict, JudgeIdentity, score_answers_with
from omnidr.pipeline.kinds import AnswerKind, Scoring, kind_named, register_kind, registered_kinds

pytestmark = [pytest.mark.docker, pytest.mark.images("reference")]

OPENDS = ROOT / "snapshots" / "demo-opends"
TASKS = ("river-gauge-flood", "astrolabe-donor")
# the scripted episode's final answer for the river task, word for word; the astrolabe task keeps its short
# reference ("1841"), which the short-answer judge accepts inside a sentence and exact match does not
RIVER_ANSWER = "The gauge recorded its highest water level of that year on 2011-01-14."


class ExactJudge:
    """An `AnswerJudge`: correct when the answer is the reference, spaces at either end aside."""

    identity = JudgeIdentity(kind="offline-baseline", model="toy-exact-match", prompt_version="toy-1",
                             description="exact string match")
    endpoint: str | None = None

    async def judge(self, request: AnswerRequest) -> AnswerJudgement:
        same = request.execution_error is None and request.candidate.strip() == request.reference.strip()
        reason = "the answer is the reference" if same else f"not exactly {request.reference!r}"
        return AnswerJudgement(verdict=AnswerVerdict(correct=same, confidence=1.0, reason=reason))

    async def aclose(self) -> None:
        return None


class ExactAnswerKind(AnswerKind):
    name = "toy_exact_answer"
    task_format = TaskFormat.short_answer
    evaluates_in_image = False

    def judge_key(self, judge) -> str:
        return ExactJudge.identity.key

    def evaluate(self, run_dir: Path, out_dir: Path, tasks: Sequence[str], scoring: Scoring):
        return score_answers_with(run_dir, ExactJudge(), snapshot=scoring.snapshot, tasks=tasks, out_dir=out_dir,
                                  progress=scoring.progress)


TOY = registered_kinds().get(ExactAnswerKind.name) or register_kind(ExactAnswerKind())


def toy_snapshot(root: Path) -> Path:
    """The OpenDS-World demo cut to two tasks, declaring the toy kind."""
    shutil.copytree(OPENDS, root, ignore=shutil.ignore_patterns("MANIFEST.json"))
    for folder in (root / "tasks").iterdir():
        if folder.name not in TASKS:
            shutil.rmtree(folder)
    info = json.loads((root / "snapshot.json").read_text())
    (root / "snapshot.json").write_text(json.dumps({**info, "name": "toy-exact", "task_kind": TOY.name,
                                                    "tasks": list(TASKS)}))
    task_file = root / "tasks" / "river-gauge-flood" / "task.json"
    task_file.write_text(json.dumps({**json.loads(task_file.read_text()), "answer": RIVER_ANSWER}))
    return root


def test_the_registry_knows_the_toy_kind_by_name_and_refuses_a_second_one():
    assert kind_named("toy_exact_answer") is TOY
    with pytest.raises(ValueError, match="already registered"):
        register_kind(ExactAnswerKind())


def test_a_registered_toy_kind_runs_end_to_end_through_omnidr_eval(tmp_path):
    from omnidr.cli import cli

    snapshot = toy_snapshot(tmp_path / "toy")
    runs = tmp_path / "runs"
    result = CliRunner().invoke(cli, ["eval", "--snapshot", str(snapshot), "--runs-root", str(runs)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output[-4000:]
    [root] = runs.glob("toy-exact*")
    [system] = [p for p in root.iterdir() if (p / "eval.json").is_file()]
    # the agent answered both tasks in the sandbox, as for a short-answer snapshot
    records = {p.parent.parent.name: json.loads(p.read_text()) for p in system.glob("attempts/*/1/attempt.json")}
    assert set(records) == set(TASKS) and all(r["reason"] == "success" for r in records.values())
    # the toy kind's own check decided: the river answer is the reference word for word, the astrolabe one is a
    # sentence around "1841"
    verdicts = {t: json.loads((system / "evaluation" / t / "evaluation.json").read_text()) for t in TASKS}
    assert {t: v["verdict"]["correct"] for t, v in verdicts.items()} == {"river-gauge-flood": True,
                                                                        "astrolabe-donor": False}
    assert {v["judge"]["model"] for v in verdicts.values()} == {"toy-exact-match"}
    # and its board: accuracy 1 of 2 under the toy judge, written and printed
    board = json.loads((root / "leaderboard.json").read_text())
    assert board["judge"] == ExactJudge.identity.key
    [row] = board["leaderboard"]["rows"]
    assert (row["correct"], row["tasks"], row["accuracy"]) == (1, 2, 50.0)
    assert (root / "leaderboard.md").is_file() and "50.0" in result.output
    # evaluated in the driver's process (no evaluator image), and tracked with the toy kind's name
    summary = json.loads((system / "evaluation" / "summary.json").read_text())
    assert summary["evaluator"]["where"] == "host" and all(v["evaluator"]["where"] == "host" for v in verdicts.values())
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    [experiment] = [e for e in client.search_experiments() if e.name.startswith("omnidr/toy-exact")]
    [parent] = client.search_runs([experiment.experiment_id], "tags.`omnidr.kind` = 'system'")
    assert parent.data.params["task_kind"] == TOY.name and parent.data.metrics["accuracy"] == 50.0
