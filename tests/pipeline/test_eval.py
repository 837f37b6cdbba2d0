"""`omnidr eval` (what `make eval` runs) on the demo snapshot, offline."""

import json

import pytest
from testkit import DEMO, edit_json, first_task, run_cli, said

pytestmark = pytest.mark.browser  # full validation runs the empty-report check in Chromium


@pytest.mark.media  # the video checks run ffprobe
def test_eval_without_agents_checks_and_scores_the_example_reports(tmp_path):
    (tmp_path / "cwd").mkdir()
    # a cache of its own (no pass kept by another test): the browser checks run here
    r = run_cli("eval", "--skip-agents", "--snapshot", DEMO, cwd=tmp_path / "cwd", env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert r.returncode == 0, r.stdout + r.stderr
    for stage in ("snapshot", "manifest", "videos", "report contract", "evaluator", "scoring"):
        assert stage in r.stdout
    assert "unfilled skeleton" in r.stdout
    assert "good: 100.0" in r.stdout and "skeleton: 0.0" in r.stdout
    assert "evaluating the example reports" in r.stdout
    assert list((tmp_path / "cwd").iterdir()) == []  # no run root: nothing ran
    # the stages as JSON on stdout (the browser checks' pass is cached now), the progress on stderr
    js = run_cli("eval", "--skip-agents", "--snapshot", DEMO, "--format", "json", cwd=tmp_path / "cwd",
                 env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert js.returncode == 0, js.stdout + js.stderr
    [table] = json.loads(js.stdout)
    assert [row["stage"] for row in table["rows"]][:3] == ["snapshot", "manifest", "videos"]
    assert all(row["status"] == "ok" for row in table["rows"]) and "validating the snapshot" in js.stderr


@pytest.mark.docker  # a full eval pings the Docker engine before it reads the snapshot
def test_eval_stops_on_an_invalid_snapshot(demo_copy):
    task = first_task(demo_copy)
    edit_json(demo_copy / "tasks" / task / "rubric.json", lambda d: d["atoms"][0].update(direction="Q-Q"))
    r = run_cli("eval", "--snapshot", demo_copy)
    assert r.returncode == 2  # bad input: one line, no run
    assert "unknown direction 'Q-Q'" in r.stderr and len(said(r.stderr)) == 1


@pytest.mark.docker  # a full eval pings the Docker engine before it reads the snapshot
def test_eval_reports_a_tampered_frozen_snapshot(demo_copy):
    assert run_cli("snapshot", "freeze", demo_copy).returncode == 0
    (demo_copy / "web" / "stray.html").write_text("<p>not frozen</p>")
    r = run_cli("eval", "--snapshot", demo_copy)
    assert r.returncode == 1
    assert "web/stray.html" in r.stdout
