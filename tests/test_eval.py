"""`omnidr eval` (what `make eval` runs) on the demo snapshot, offline."""

from testkit import DEMO, edit_json, first_task, run_cli


def test_eval_runs_existing_stages_and_names_the_missing_ones():
    r = run_cli("eval", DEMO)
    assert r.returncode == 0, r.stdout + r.stderr
    for stage in ("snapshot", "manifest", "videos", "report contract"):
        assert stage in r.stdout
    assert "not built" in r.stdout
    assert "unfilled skeleton" in r.stdout


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
