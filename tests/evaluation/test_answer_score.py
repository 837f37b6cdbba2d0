"""`omnidr score RUN_DIR` on a short-answer run folder made in the test (real attempt.json, output/answer.json and
output/trajectory.jsonl files): the snapshot's task kind picks the answer judge; each task's last finished attempt
is judged, with what it spent and its tool use; no answer and refusals are incorrect without a call; an outage is
recorded per task as not final, and rerunning the same command completes it without asking cached verdicts again."""

import json
from datetime import UTC, datetime

import pytest
from answer_helpers import Spent, write_answer_attempt, write_answer_run, write_answer_snapshot
from click.testing import CliRunner
from fake_answer_judge import FakeAnswerJudge

pytestmark = pytest.mark.network

KEY_ENV = "OMNIDR_TEST_JUDGE_KEY"
ALL = ["bridge-span", "falls-height", "museum-year", "river-length", "ship-name"]


@pytest.fixture
def server():
    fake = FakeAnswerJudge().start()
    yield fake
    fake.stop()


@pytest.fixture
def run_dir(tmp_path):
    snapshot = write_answer_snapshot(tmp_path / "snapshot")
    run = write_answer_run(tmp_path / "run", snapshot, ALL)
    write_answer_attempt(run, "bridge-span", 1, "success", spent=Spent(tokens=(1000, 200), wall_time_s=120.0),
                         answer=dict(answer="Its main span measures 1,280 m.", termination="complete_answer",
                                     source="research"),
                         calls=[("search_web", 2.0, False), ("fetch_url", 3.0, True), ("browser_open", 1.0, False),
                                ("search_web", 1.0, False)])
    write_answer_attempt(run, "falls-height", 1, "timeout", detail="killed at the wall-clock limit")
    write_answer_attempt(run, "falls-height", 2, "success",
                         spent=Spent(tokens=(3000, 500), wall_time_s=3600.0, exhausted="max_tool_calls"),
                         answer=dict(answer="It drops about 807 m.", termination="budget_exhausted",
                                     source="finalization"))
    write_answer_attempt(run, "museum-year", 1, "agent_error", detail="exit code 3")
    write_answer_attempt(run, "river-length", 1, "success",
                         answer=dict(answer="I cannot determine the length from the sources I found.",
                                     termination="complete_answer", source="research"))
    write_answer_attempt(run, "ship-name", 1, "infra_error", detail="the engine went away")
    return run


def _read(path):
    return json.loads(path.read_text("utf-8"))


def test_a_short_answer_run_is_judged_task_by_task(run_dir, server, monkeypatch):
    from omnidr.evaluation import score
    from omnidr.paths import RunPaths

    monkeypatch.setenv(KEY_ENV, "sk-test")
    result = CliRunner().invoke(score, [str(run_dir), "--judge", f"fake-judge@{server.url}", "--judge-key-env", KEY_ENV],
                                catch_exceptions=False)
    assert result.exit_code == 1, result.output  # ship-name is not final: its attempt was an infrastructure failure
    assert "accuracy 20.00% (1/5 correct)" in result.output and "not final: ship-name" in result.output
    # the judge decides every answer there is (App. C.4), the refusal too; museum-year has none: no call
    assert server.calls == 3 and sorted(c for _, c in server.judged) == [
        "I cannot determine the length from the sources I found.", "It drops about 807 m.",
        "Its main span measures 1,280 m."]
    paths = RunPaths(run_dir)
    summary = _read(paths.evaluation_summary)
    assert summary["task_kind"] == "short_answer" and summary["mean_total"] == 20.0
    assert [t["task_id"] for t in summary["tasks"]] == ALL
    lines = {t["task_id"]: t for t in summary["tasks"]}
    assert lines["bridge-span"]["correct"] is True and lines["bridge-span"]["total"] == 100.0
    assert lines["falls-height"]["correct"] is False and lines["falls-height"]["attempt"] == 2

    bridge = _read(paths.task_evaluation("bridge-span"))
    assert bridge["verdict"]["correct"] and bridge["termination"] == "complete_answer" and bridge["attempt"] == 1
    assert bridge["answer_file"] == "attempts/bridge-span/1/output/answer.json"
    assert bridge["input_tokens"] == 1000 and bridge["output_tokens"] == 200 and bridge["wall_time_s"] == 120.0
    use = bridge["tool_use"]
    assert use["calls"] == 4 and use["failed_calls"] == 1 and use["categories"] == {"search": 2, "browse": 1, "read": 1}
    assert use["latency_s"] == 7.0 and use["failed_latency_s"] == 3.0
    assert use["transitions"] == {"search->read": 1, "read->browse": 1, "browse->search": 1}
    assert bridge["judge"]["model"] == "fake-judge" and bridge["judge_usage"]["calls"] == 1

    falls = _read(paths.task_evaluation("falls-height"))
    assert not falls["verdict"]["correct"] and falls["termination"] == "budget_exhausted" and falls["source"] == "finalization"
    assert falls["limit"] == "tool-call limit"  # paper 002, Sec. 3.6: the call limit, told from the time limit
    museum = _read(paths.task_evaluation("museum-year"))
    assert museum["answer"] is None and museum["hard_rule"] and not museum["verdict"]["correct"]
    assert "no answer file" in museum["execution_error"] and "agent_error" in museum["execution_error"]
    river = _read(paths.task_evaluation("river-length"))
    assert not river["hard_rule"] and not river["verdict"]["correct"] and river["incomplete"] is None  # the judge said so
    ship = _read(paths.task_evaluation("ship-name"))
    assert "infra_error" in ship["incomplete"] and not ship["verdict"]["correct"]

    # the evaluations are the leaderboard's input, without any judge
    from omnidr.benchmark import open_snapshot
    from omnidr.evaluation import answer_systems
    from omnidr.scoring import build_answer_leaderboard

    judge, systems = answer_systems([paths.evaluation])
    assert judge is not None and judge.model == "fake-judge" and systems[0].system.label == "fake-model / command"
    snap = open_snapshot(run_dir.parent / "snapshot")
    board = build_answer_leaderboard(systems, [b.question for b in snap.tasks.values() if b.question], replicates=200)
    [row] = board.rows
    assert row.accuracy == 20.0 and row.correct == 1 and row.answered == 3 and row.incomplete == ["ship-name"]
    assert row.process.terminations == {"budget_exhausted (tool-call limit)": 1, "complete_answer": 2, "unrecorded": 2}
    assert row.process.budget_exhausted_share == pytest.approx(1 / 5)
    assert row.process.failed_latency_share == pytest.approx(3 / 7)


def test_an_outage_is_not_a_wrong_answer_and_a_rerun_completes_it(run_dir, server, monkeypatch):
    from omnidr.errors import UserError
    from omnidr.evaluation import JudgeSettings, ScoreRequest, read_scored_run, score_run

    monkeypatch.setenv(KEY_ENV, "sk-test")
    settings = JudgeSettings(base_url=server.url, model="fake-judge", api_key_env=KEY_ENV, backoff_s=0.0,
                             max_attempts=2, timeout_s=5.0)
    out = run_dir / "evaluation"
    score_run(ScoreRequest(run_dir=run_dir, judge_settings=settings, tasks=["bridge-span"]))
    assert server.calls == 1

    server.reset()
    server.mode = "503"
    summary = score_run(ScoreRequest(run_dir=run_dir, judge_settings=settings, tasks=["bridge-span", "falls-height"]))
    assert server.calls == 2  # falls-height asked twice; bridge-span read from the cache
    failed = _read(out / "falls-height" / "evaluation.json")
    assert failed["verdict"] is None and "503" in failed["error"] and "rerun" in failed["incomplete"]
    line = {t.task_id: t for t in summary.tasks}["falls-height"]
    assert line.incomplete and line.correct is None and not line.failed
    assert {t.task_id: t for t in summary.tasks}["bridge-span"].correct is True

    server.reset()
    server.mode = "ok"
    summary = score_run(ScoreRequest(run_dir=run_dir, judge_settings=settings, tasks=["bridge-span", "falls-height"]))
    assert server.calls == 1 and [c for _, c in server.judged][-1] == "It drops about 807 m."
    assert not any(t.incomplete for t in summary.tasks) and summary.mean_total == 50.0
    assert _read(out / "bridge-span" / "evaluation.json")["cached"] is True

    with pytest.raises(UserError, match="read_answer_run"):  # the report reader refuses answers, in one line
        read_scored_run(out)


def test_without_an_endpoint_the_offline_baseline_judges_and_says_so(run_dir, server):
    from omnidr.evaluation import score

    result = CliRunner().invoke(score, [str(run_dir), "--out", str(run_dir / "baseline")], catch_exceptions=False)
    assert "offline baseline (offline-baseline: normalised exact and numeric match" in result.output
    summary = _read(run_dir / "baseline" / "summary.json")
    assert summary["judge"]["kind"] == "offline-baseline" and summary["mean_total"] == 20.0
    assert server.calls == 0


def test_the_limit_that_ended_research_is_named():
    """Paper 002, Sec. 3.6 counts the time limit apart from the call limit: a spent gateway budget names its limit;
    a research clock that ran out (no budget spent) is the time limit; other terminations name none."""
    from omnidr.attempts import AttemptReason, AttemptRecord, BudgetUse, SandboxLimits
    from omnidr.evaluation._answer_run import budget_limit
    from sandbox.models import Budget

    def record(exhausted):
        now = datetime.now(UTC)
        return AttemptRecord(task_id="t", attempt=1, harness="command", command=["x"], reason=AttemptReason.success,
                             detail="", exit_code=0, started_at=now, ended_at=now, wall_time_s=1.0, budget=Budget(),
                             budget_use=BudgetUse(exhausted=exhausted), limits=SandboxLimits(), proxy_mode="replay")

    assert budget_limit("budget_exhausted", record("max_tool_calls")) == "tool-call limit"
    assert budget_limit("budget_exhausted", record("max_iterations")) == "model-call limit"
    assert budget_limit("budget_exhausted", record("max_total_tokens")) == "token limit"
    assert budget_limit("budget_exhausted", record(None)) == "time limit"
    assert budget_limit("complete_answer", record("max_tool_calls")) is None
