"""`omnidr snapshot validate`: the demo passes; each kind of broken snapshot is named precisely."""

import json

import pytest
from testkit import DEMO, edit_json, first_task, run_cli

pytestmark = pytest.mark.browser  # full validation runs the empty-report check in Chromium


def test_demo_snapshot_validates():
    r = run_cli("snapshot", "validate", DEMO)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 error(s)" in r.stdout


def test_demo_uses_all_23_directions_with_tens_of_atoms():
    from omnidr.benchmark import Language, direction_inventory, validate_snapshot

    snap = validate_snapshot(DEMO).snapshot
    assert len(snap.tasks) == 3
    assert any(b.task.language is Language.zh for b in snap.tasks.values())
    ids = {d.id for d in direction_inventory().directions}
    for b in snap.tasks.values():
        assert {a.direction for a in b.rubric.atoms} == ids
        assert len(b.rubric.atoms) >= 20


def test_duplicate_atom_id_is_named(demo_copy):
    task = first_task(demo_copy)
    rubric = demo_copy / "tasks" / task / "rubric.json"
    dup = json.loads(rubric.read_text("utf-8"))["atoms"][0]["id"]
    edit_json(rubric, lambda d: d["atoms"][1].update(id=dup))
    r = run_cli("snapshot", "validate", demo_copy)
    assert r.returncode == 1
    assert f"error: tasks/{task}/rubric.json: atoms[1].id: duplicate atom id '{dup}'" in r.stdout
    assert "Traceback" not in r.stdout + r.stderr


def test_unknown_direction_is_named(demo_copy):
    task = first_task(demo_copy)
    edit_json(demo_copy / "tasks" / task / "rubric.json", lambda d: d["atoms"][2].update(direction="C-XYZ"))
    r = run_cli("snapshot", "validate", demo_copy)
    assert r.returncode == 1
    assert f"tasks/{task}/rubric.json: atoms[2].direction: unknown direction 'C-XYZ'" in r.stdout


def test_malformed_json_names_file_and_position(demo_copy):
    task = first_task(demo_copy)
    path = demo_copy / "tasks" / task / "facts.json"
    path.write_text(path.read_text("utf-8")[:-5], "utf-8")
    r = run_cli("snapshot", "validate", demo_copy)
    assert r.returncode == 1
    line = next(x for x in r.stdout.splitlines() if f"tasks/{task}/facts.json" in x)
    assert "malformed JSON" in line and "line " in line
    assert "Traceback" not in r.stdout + r.stderr


def test_schema_error_names_field_path(demo_copy):
    task = first_task(demo_copy)
    edit_json(demo_copy / "tasks" / task / "task.json", lambda d: d.update(language="fr"))
    r = run_cli("snapshot", "validate", demo_copy)
    assert r.returncode == 1
    assert f"tasks/{task}/task.json: language:" in r.stdout


def test_missing_video_and_wrong_checksum(demo_copy):
    tasks = json.loads((demo_copy / "snapshot.json").read_text("utf-8"))["tasks"]
    (demo_copy / "tasks" / tasks[0] / "video.mp4").unlink()
    video = demo_copy / "tasks" / tasks[1] / "video.mp4"
    video.write_bytes(video.read_bytes() + b"\0")
    r = run_cli("snapshot", "validate", demo_copy)
    assert r.returncode == 1
    assert f"tasks/{tasks[0]}/task.json: video.file: video tasks/{tasks[0]}/video.mp4 is missing" in r.stdout
    assert f"tasks/{tasks[1]}/task.json: video.sha256: checksum mismatch" in r.stdout
    assert run_cli("snapshot", "validate", "--no-videos", demo_copy).returncode == 0


def test_evidence_binding_and_probe_parameters(demo_copy):
    task = first_task(demo_copy)
    rubric = demo_copy / "tasks" / task / "rubric.json"
    atoms = json.loads(rubric.read_text("utf-8"))["atoms"]
    j = next(i for i, a in enumerate(atoms) if a["evaluator"] == "J")
    m = next(i for i, a in enumerate(atoms) if a["evaluator"] == "M" and a["probe"]["params"])
    param = next(iter(atoms[m]["probe"]["params"]))

    def change(d):
        d["atoms"][j]["fact_id"] = "no-such-fact"
        del d["atoms"][m]["probe"]["params"][param]

    edit_json(rubric, change)
    r = run_cli("snapshot", "validate", demo_copy)
    assert r.returncode == 1
    assert f"atoms[{j}].fact_id: unknown fact id 'no-such-fact'" in r.stdout
    assert f"atoms[{m}].probe.params: missing parameter '{param}'" in r.stdout


def test_direction_coverage_needs_atoms_or_na_reason(demo_copy):
    task = first_task(demo_copy)
    rubric = demo_copy / "tasks" / task / "rubric.json"
    edit_json(rubric, lambda d: d.update(atoms=[a for a in d["atoms"] if a["direction"] != "P-IT"]))
    r = run_cli("snapshot", "validate", demo_copy)
    assert r.returncode == 1
    assert "direction P-IT (Image-text correspondence) has no atom and no N/A reason" in r.stdout
    edit_json(rubric, lambda d: d.update(na_reasons={"P-IT": "The task's report carries no figures."}))
    assert run_cli("snapshot", "validate", demo_copy).returncode == 0


def test_subjective_wording_and_machine_eligibility(demo_copy):
    task = first_task(demo_copy)
    rubric = demo_copy / "tasks" / task / "rubric.json"
    atoms = json.loads(rubric.read_text("utf-8"))["atoms"]
    j = next(i for i, a in enumerate(atoms) if a["evaluator"] == "J" and a["direction"].startswith("C-"))
    m = next(i for i, a in enumerate(atoms) if a["evaluator"] == "M")

    def change(d):
        d["atoms"][j]["criterion"] = "Does the report give a nice and clear account of the lamp socket rating?"
        d["atoms"][m]["direction"] = "C-FC"

    edit_json(rubric, change)
    r = run_cli("snapshot", "validate", demo_copy)
    assert f"warning: tasks/{task}/rubric.json: atoms[{j}].criterion: subjective wording 'nice'" in r.stdout
    assert f"atoms[{m}].evaluator: direction C-FC takes J atoms, not M" in r.stdout
    assert r.returncode == 1


def test_duplicate_criterion_is_an_error(demo_copy):
    task = first_task(demo_copy)
    rubric = demo_copy / "tasks" / task / "rubric.json"
    atoms = json.loads(rubric.read_text("utf-8"))["atoms"]
    edit_json(rubric, lambda d: d["atoms"][4].update(criterion=atoms[3]["criterion"].upper()))
    r = run_cli("snapshot", "validate", demo_copy)
    assert r.returncode == 1
    assert "atoms[4].criterion: duplicate criterion (same as atoms[3])" in r.stdout


def test_not_a_snapshot_is_a_usage_error(tmp_path):
    r = run_cli("snapshot", "validate", tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0
    assert "no snapshot.json" in r.stderr
