"""`omnidr eval` (what `make eval` runs) on the demo snapshot, offline."""

import json

import pytest

from testkit import DEMO, edit_json, first_task, run_cli

pytestmark = pytest.mark.browser  # full validation runs the empty-report check in Chromium


def test_eval_without_agents_checks_and_scores_the_example_reports():
    r = run_cli("eval", "--skip-agents", DEMO)
    assert r.returncode == 0, r.stdout + r.stderr
    for stage in ("snapshot", "manifest", "videos", "report contract", "evaluator", "scoring"):
        assert stage in r.stdout
    assert "unfilled skeleton" in r.stdout
    assert "good: 100.0" in r.stdout and "skeleton: 0.0" in r.stdout
    assert "not built" in r.stdout  # tracking is named as not built, never faked


@pytest.mark.docker
def test_eval_runs_the_reference_agent_offline_and_scores_the_run(tmp_path):
    r = run_cli("eval", DEMO, cwd=tmp_path)  # the default, relative runs root, as `make eval` uses it
    assert r.returncode == 0, r.stdout + r.stderr
    assert "using the scripted model" in r.stdout
    [run_dir] = list(tmp_path.glob("runs/demo-*/reference-full"))
    reasons = [json.loads(p.read_text())["reason"] for p in sorted(run_dir.glob("attempts/*/1/attempt.json"))]
    assert reasons == ["success"] * 3
    summary = json.loads((run_dir / "evaluation" / "summary.json").read_text())
    assert summary["judge"]["kind"] == "offline-baseline"
    assert [t["failed"] for t in summary["tasks"]] == [False, False, False]
    assert all(0 < t["total"] <= 100 for t in summary["tasks"])
    records = {p: p.read_bytes() for p in run_dir.glob("attempts/*/*/attempt.json")}
    again = run_cli("eval", DEMO, cwd=tmp_path)  # a rerun resumes: no attempt is redone
    assert again.returncode == 0, again.stdout + again.stderr
    assert {p: p.read_bytes() for p in run_dir.glob("attempts/*/*/attempt.json")} == records
    assert "attempt 1: success" not in again.stdout


def test_eval_stops_on_an_invalid_snapshot(demo_copy):
    task = first_task(demo_copy)
    edit_json(demo_copy / "tasks" / task / "rubric.json", lambda d: d["atoms"][0].update(direction="Q-Q"))
    r = run_cli("eval", demo_copy)
    assert r.returncode == 1
    assert "unknown direction 'Q-Q'" in r.stdout


def test_eval_reports_a_tampered_frozen_snapshot(demo_copy):
    assert run_cli("snapshot", "freeze", demo_copy).returncode == 0
    (demo_copy / "web" / "stray.html").write_text("<p>not frozen</p>")
    r = run_cli("eval", demo_copy)
    assert r.returncode == 1
    assert "web/stray.html" in r.stdout
