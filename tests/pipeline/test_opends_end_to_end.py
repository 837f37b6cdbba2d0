"""The OpenDS-World demo (task kind short_answer) end to end, offline: `make eval SNAPSHOT=snapshots/demo-opends`
with the reference agent, the same with Claude Code adding a row, the finalization stage after a spent research
budget, and `omnidr compare` of the two harnesses' folders."""

import json
import os
import subprocess
from pathlib import Path

import pytest
from testkit import ROOT, run_cli

pytestmark = [pytest.mark.docker, pytest.mark.images("reference", "claude-code")]
SNAPSHOT = "SNAPSHOT=snapshots/demo-opends"
TASKS = ("river-gauge-flood", "astrolabe-donor", "coffee-lot-buyer", "calculator-capacitor")


def make_eval(runs: Path, *settings: str) -> subprocess.CompletedProcess:
    """`make eval` of the demo with two of its four tasks at once (PARALLEL=2, as the VideoOdyssey demo's test runs
    it): the attempts wait on their containers much of the time, and nothing asserted depends on their order."""
    return subprocess.run(["make", "-s", "-C", str(ROOT), "eval", f"RUNS_ROOT={runs}", SNAPSHOT, "PARALLEL=2",
                           *settings], capture_output=True, text=True, timeout=1800, env=dict(os.environ))


def records(system: Path) -> dict[str, dict]:
    return {p.parent.parent.name: json.loads(p.read_text()) for p in system.glob("attempts/*/1/attempt.json")}


@pytest.fixture(scope="module")
def opends_runs(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    reference = make_eval(runs)
    assert reference.returncode == 0, reference.stdout[-4000:] + reference.stderr[-3000:]
    claude = make_eval(runs, "HARNESS=claude-code")
    assert claude.returncode == 0, claude.stdout[-4000:] + claude.stderr[-3000:]
    [root] = runs.glob("demo-opends-*")
    return root, reference.stdout, claude.stdout


def test_make_eval_answers_the_demo_and_prints_the_accuracy_leaderboard_with_its_breakdowns(opends_runs):
    root, stdout, _ = opends_runs
    system = root / "reference-full-scripted"
    got = records(system)
    assert set(got) == set(TASKS) and all(r["reason"] == "success" and r["task_kind"] == "short_answer"
                                          for r in got.values())
    # research answered three tasks itself; the fourth spent its 100 tool calls and was answered by finalization
    assert {t: (r["termination"], r["answer_source"]) for t, r in got.items()} == {
        "river-gauge-flood": ("complete_answer", "research"), "astrolabe-donor": ("complete_answer", "research"),
        "calculator-capacitor": ("complete_answer", "research"),
        "coffee-lot-buyer": ("budget_exhausted", "finalization")}
    coffee = got["coffee-lot-buyer"]
    assert coffee["budget"]["max_tool_calls"] == 100 and coffee["budget_use"]["tool_calls"] >= 100  # calls asked for
    agent_log = [json.loads(line) for line in
                 (system / "attempts/coffee-lot-buyer/1/output/harness-logs/reference.jsonl").read_text().splitlines()]
    assert sum(1 for e in agent_log if e["type"] == "tool_call") == 100  # calls run: research ends at 100
    assert coffee["finalization"]["accepted"] and coffee["finalization"]["requests"] <= 2
    assert coffee["context_handling"] == "paper-compaction"
    answer = json.loads((system / "attempts/coffee-lot-buyer/1/output/answer.json").read_text())
    assert "Harbourline Roasters" in answer["answer"] and answer["source"] == "finalization"
    phases = [json.loads(line).get("phase") for line in
              (system / "attempts/coffee-lot-buyer/1/logs/gateway.jsonl").read_text().splitlines()]
    assert phases.count("finalization") == coffee["finalization"]["requests"] and phases[0] == "research"
    # the board: 3 of 4 right (calculator-capacitor's scripted answer is the distractor's 470 µF)
    board = json.loads((root / "leaderboard.json").read_text())
    assert board["judge"].startswith("offline-baseline") and board["task_kind"] == "short_answer"
    row = next(r for r in board["leaderboard"]["rows"] if r["label"] == "scripted-demo / reference / full / default")
    assert (row["correct"], row["tasks"], row["accuracy"]) == (3, 4, 75.0)
    # paper 002, Sec. 3.6: a budget-exhausted end names its limit (the demo's coffee task runs out of tool calls)
    assert row["process"]["terminations"] == {"budget_exhausted (tool-call limit)": 1, "complete_answer": 3}
    assert row["process"]["budget_exhausted_share"] == 0.25
    by_domain = {g["group"]: g for g in row["breakdowns"]["domain"]}
    assert by_domain["technology"]["accuracy"] == 0.0 and by_domain["nature"]["accuracy"] == 100.0
    printed = " ".join(stdout.split())  # the console wraps long titles
    for what in ("domain", "evidence modality", "format category", "access type", "anchor-video duration"):
        assert f"Accuracy (%) by {what}" in printed, what
    assert (root / "tables" / "by_domain.csv").is_file() and (root / "leaderboard.png").stat().st_size > 0


def test_the_same_command_with_claude_code_adds_a_row(opends_runs):
    root, _, stdout = opends_runs
    got = records(root / "claude-code-full-scripted")
    assert all(r["reason"] == "success" and r["answer_source"] == "research" for r in got.values()), got
    assert {r["context_handling"] for r in got.values()} == {"harness-native"}
    rows = {r["label"]: r for r in json.loads((root / "leaderboard.json").read_text())["leaderboard"]["rows"]}
    assert set(rows) == {"scripted-demo / reference / full / default", "scripted-demo / claude-code / full / default"}
    assert rows["scripted-demo / claude-code / full / default"]["correct"] == 3
    assert "claude-code" in stdout
    # the two harnesses compared from their scored folders, running nothing
    r = run_cli("compare", root / "claude-code-full-scripted", root / "reference-full-scripted",
                env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Paired accuracy differences" in r.stdout and "coffee-lot-buyer" in r.stdout


def test_a_research_budget_of_three_calls_ends_in_an_accepted_finalization_answer(tmp_path):
    r = run_cli("eval", "--snapshot", ROOT / "snapshots/demo-opends", "--budget", "tool_calls=3,attempts=1", "--task",
                "coffee-lot-buyer", "--runs-root", tmp_path, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    [record] = records(next(tmp_path.glob("demo-opends-*/reference-*"))).values()
    assert record["budget_use"]["tool_calls"] == 3 and record["budget_use"]["exhausted"] == "max_tool_calls"
    assert (record["termination"], record["answer_source"]) == ("budget_exhausted", "finalization")
    assert record["finalization"]["accepted"] and 1 <= record["finalization"]["requests"] <= 2


def test_the_answers_archive_and_rescore_to_the_same_verdicts_without_docker(opends_runs, tmp_path):
    root, _, _ = opends_runs
    archive = tmp_path / "archive"
    r = run_cli("archive", root, "--out", archive)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "reference-full-scripted/attempts/coffee-lot-buyer/1/output/answer.json" in \
        json.loads((archive / "ARCHIVE.json").read_text())["files"]
    same = run_cli("rescore", archive, "--out", tmp_path / "same", env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert same.returncode == 0, same.stdout + same.stderr
    before = json.loads((root / "leaderboard.json").read_text())["leaderboard"]["rows"]
    after = json.loads((tmp_path / "same" / "leaderboard.json").read_text())["leaderboard"]["rows"]
    assert [(r["label"], r["correct"]) for r in after] == [(r["label"], r["correct"]) for r in before]
