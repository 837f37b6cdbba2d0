"""The release checks of App. E.4 beyond schema and identifiers: direction boundaries, behavioural
calibration against `calibration_gap`, and the review decision every warning needs before
`snapshot freeze` accepts it."""

import json
import subprocess
import sys

import pytest
from testkit import DEMO, edit_json, first_task, run_cli


def _atoms(snapshot, task):
    return json.loads((snapshot / "tasks" / task / "rubric.json").read_text("utf-8"))["atoms"]


def _facts(snapshot, task):
    return {f["id"]: f for f in json.loads((snapshot / "tasks" / task / "facts.json").read_text("utf-8"))["facts"]}


def test_atoms_outside_their_directions_boundary_are_warnings(demo_copy):
    task = first_task(demo_copy)
    atoms, facts = _atoms(demo_copy, task), _facts(demo_copy, task)
    vf = next(i for i, a in enumerate(atoms) if a["direction"] == "C-VF")
    web_fact = next(f for f, v in facts.items() if v["origin"] == "web")
    seek = next(i for i, a in enumerate(atoms) if (a.get("probe") or {}).get("name") == "timestamp_seeks")

    def change(d):
        d["atoms"][vf]["fact_id"] = web_fact  # video faithfulness checked against a web fact
        d["atoms"][seek]["direction"] = "P-MA"  # a seek probe counted as media assets

    edit_json(demo_copy / "tasks" / task / "rubric.json", change)
    r = run_cli("snapshot", "validate", "--no-videos", demo_copy)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (f"warning: tasks/{task}/rubric.json: atoms[{vf}].fact_id: direction boundary: C-VF checks video facts, "
            f"but '{web_fact}' is a web fact") in r.stdout
    assert (f"warning: tasks/{task}/rubric.json: atoms[{seek}].probe.name: direction boundary: probe "
            "'timestamp_seeks' measures P-TN, not P-MA") in r.stdout
    # moving the atom also leaves P-TN's 'any' gate with one atom, a warning of its own; and an L0 atom now bound
    # to an external fact declares a level its evidence no longer gives (App. E.3)
    assert (f"warning: tasks/{task}/rubric.json: atoms[{vf}].difficulty: declared L0, but the evidence makes it L1: "
            f"it rests on one external fact ({web_fact}) (App. E.3)") in r.stdout
    assert "4 warning(s), 4 without a review decision" in r.stdout


def _scores(r1, r2, r3):
    return {"R1": r1, "R2": r2, "R3": r3}


def _write_calibration(snapshot, tasks):
    (snapshot / "calibration.json").write_text(json.dumps({
        "systems": {"R1": "claude-code/opus no-search", "R2": "claude-code/opus full", "R3": "claude-code/opus brief"},
        "judge": "offline-baseline", "tasks": tasks}), "utf-8")


def test_calibration_holds_each_task_to_r1_r2_r3_and_the_calibration_gap(demo_copy):
    ids = json.loads((demo_copy / "snapshot.json").read_text("utf-8"))["tasks"]
    _write_calibration(demo_copy, {ids[0]: _scores(20, 35, 45), ids[1]: _scores(20, 45, 35), ids[2]: _scores(30, 40, 48)})
    r = run_cli("snapshot", "validate", "--no-videos", demo_copy)
    assert r.returncode == 0, r.stdout
    assert f"calibration.json: tasks.{ids[0]}: calibration fails" not in r.stdout  # gain 25 > 20
    assert (f"warning: calibration.json: tasks.{ids[1]}: calibration fails: R1 < R2 < R3 does not hold "
            "(R1 20, R2 45, R3 35: R2 - R1 = +25, R3 - R2 = -10 points)") in r.stdout
    assert (f"warning: calibration.json: tasks.{ids[2]}: calibration fails: R3 - R1 = 18 points, not above the "
            "calibration gap of 20 points") in r.stdout
    # calibration_gap drives the check: at 0.30 the first task fails too, at 0.10 the third passes
    edit_json(demo_copy / "hyperparameters.json", lambda d: d.update(calibration_gap=0.30))
    assert f"calibration.json: tasks.{ids[0]}: calibration fails" in run_cli("snapshot", "validate", "--no-videos", demo_copy).stdout
    edit_json(demo_copy / "hyperparameters.json", lambda d: d.update(calibration_gap=0.10))
    out = run_cli("snapshot", "validate", "--no-videos", demo_copy).stdout
    assert f"tasks.{ids[2]}: calibration fails" not in out and f"tasks.{ids[1]}: calibration fails" in out


def test_calibration_of_an_unknown_task_is_an_error_and_a_missing_task_a_warning(demo_copy):
    ids = json.loads((demo_copy / "snapshot.json").read_text("utf-8"))["tasks"]
    _write_calibration(demo_copy, {ids[0]: _scores(10, 30, 50), "no-such-task": _scores(10, 30, 50)})
    r = run_cli("snapshot", "validate", "--no-videos", demo_copy)
    assert r.returncode == 1
    assert "error: calibration.json: tasks.no-such-task: 'no-such-task' is not a task of the snapshot" in r.stdout
    assert f"warning: calibration.json: tasks: task '{ids[1]}' has no calibration record" in r.stdout


@pytest.mark.browser
def test_freeze_needs_a_review_decision_for_every_warning(demo_copy):
    ids = json.loads((demo_copy / "snapshot.json").read_text("utf-8"))["tasks"]
    _write_calibration(demo_copy, {i: _scores(20, 30, 35) for i in ids})  # every task: gain 15 < 20
    before = (demo_copy / "MANIFEST.json").read_bytes()
    refused = run_cli("snapshot", "freeze", demo_copy)
    assert refused.returncode == 1 and (demo_copy / "MANIFEST.json").read_bytes() == before
    assert "not frozen: 3 warning(s) without a review decision" in refused.stdout
    assert f"warning: calibration.json: tasks.{ids[0]}: calibration fails" in refused.stdout

    message = "calibration fails: R3 - R1 = 15 points, not above the calibration gap of 20 points"
    reviews = [{"file": "calibration.json", "field": f"tasks.{i}", "message": message, "decision": "accept",
                "reviewer": "a. reviewer", "reason": "demo task: the synthetic corpus caps the brief's gain"} for i in ids]
    (demo_copy / "reviewed-warnings.json").write_text(json.dumps({"reviews": reviews[:2]}), "utf-8")
    assert "1 warning(s) without a review decision" in run_cli("snapshot", "freeze", demo_copy).stdout

    (demo_copy / "reviewed-warnings.json").write_text(json.dumps({"reviews": reviews}), "utf-8")
    ok = run_cli("snapshot", "validate", demo_copy)
    assert ok.returncode == 0 and "(accepted by a. reviewer: demo task" in ok.stdout
    frozen = run_cli("snapshot", "freeze", demo_copy)
    assert frozen.returncode == 0, frozen.stdout
    manifest = json.loads((demo_copy / "MANIFEST.json").read_text("utf-8"))
    assert {"reviewed-warnings.json", "calibration.json"} <= set(manifest["files"])


def test_a_review_of_a_warning_that_no_longer_occurs_is_an_error(demo_copy):
    (demo_copy / "reviewed-warnings.json").write_text(json.dumps({"reviews": [
        {"file": "tasks/x/rubric.json", "field": "atoms[0].criterion", "message": "subjective wording 'nice'",
         "decision": "accept", "reviewer": "r", "reason": "kept"}]}), "utf-8")
    r = run_cli("snapshot", "validate", "--no-videos", demo_copy)
    assert r.returncode == 1
    assert ("error: reviewed-warnings.json: reviews[0]: matches no current warning (tasks/x/rubric.json: "
            "atoms[0].criterion: subjective wording 'nice'); remove the entry") in r.stdout
    (demo_copy / "reviewed-warnings.json").write_text(json.dumps({"reviews": [{"file": "a", "decision": "maybe"}]}), "utf-8")
    bad = run_cli("snapshot", "validate", "--no-videos", demo_copy)
    assert bad.returncode == 1 and "error: reviewed-warnings.json: reviews[0].decision:" in bad.stdout


def test_static_validation_does_not_load_the_evaluator():
    code = ("import sys; from omnidr.benchmark import validate_snapshot; r = validate_snapshot(sys.argv[1]); "
            "print(len(r.errors), 'omnidr.evaluation' in sys.modules, 'playwright' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(DEMO)], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", "False", "False"]


def test_a_coverage_check_outside_the_content_dimension_is_an_error(demo_copy):
    """App. A.4: coverage checks ask that the report state a fact; a citation atom marked as one is refused."""
    task = first_task(demo_copy)
    atoms = _atoms(demo_copy, task)
    cs = next(i for i, a in enumerate(atoms) if a["direction"] == "R-CS" and a.get("fact_id"))
    xv = next(i for i, a in enumerate(atoms) if a["direction"] == "C-XV" and a.get("fact_id"))

    def change(d):
        d["atoms"][cs]["coverage"] = True
        d["atoms"][xv]["coverage"] = True  # allowed: a content atom that states its fact

    edit_json(demo_copy / "tasks" / task / "rubric.json", change)
    r = run_cli("snapshot", "validate", "--no-videos", demo_copy)
    assert r.returncode == 1, r.stdout + r.stderr
    errors = [line for line in r.stdout.splitlines() if line.startswith("error:")]
    assert errors == [f"error: tasks/{task}/rubric.json: atoms[{cs}].coverage: only content atoms are coverage checks "
                      "(App. A.4); R-CS is not a content (C) direction"], r.stdout
