"""`omnidr snapshot freeze` / `verify`: hashes of every file, a stable id, precise differences."""

import json

import pytest
from testkit import edit_json, first_task, run_cli

pytestmark = pytest.mark.browser  # full validation runs the empty-report check in Chromium


def test_freeze_then_verify_clean(demo_copy):
    (demo_copy / "MANIFEST.json").unlink(missing_ok=True)
    r = run_cli("snapshot", "freeze", demo_copy)
    assert r.returncode == 0, r.stdout + r.stderr
    manifest = json.loads((demo_copy / "MANIFEST.json").read_text())
    assert manifest["snapshot_id"].startswith("demo-")
    assert manifest["snapshot_id"] in r.stdout
    assert "snapshot.json" in manifest["files"] and "MANIFEST.json" not in manifest["files"]
    assert not list(demo_copy.glob(".MANIFEST.*"))
    r = run_cli("snapshot", "verify", demo_copy)
    assert r.returncode == 0 and "match" in r.stdout


def test_snapshot_id_depends_only_on_content(demo_copy, tmp_path):
    import shutil

    other = tmp_path / "elsewhere" / "demo"
    shutil.copytree(demo_copy, other)
    a = run_cli("snapshot", "freeze", demo_copy)
    b = run_cli("snapshot", "freeze", other)
    id_a = json.loads((demo_copy / "MANIFEST.json").read_text())["snapshot_id"]
    assert a.returncode == b.returncode == 0
    assert id_a == json.loads((other / "MANIFEST.json").read_text())["snapshot_id"]
    edit_json(other / "hyperparameters.json", lambda d: d.update(tau=0.2))
    run_cli("snapshot", "freeze", other)
    assert json.loads((other / "MANIFEST.json").read_text())["snapshot_id"] != id_a


def test_one_changed_byte_is_named(demo_copy):
    assert run_cli("snapshot", "freeze", demo_copy).returncode == 0
    task = first_task(demo_copy)
    video = demo_copy / "tasks" / task / "video.mp4"
    data = bytearray(video.read_bytes())
    data[len(data) // 2] ^= 0x01
    video.write_bytes(bytes(data))
    r = run_cli("snapshot", "verify", demo_copy)
    assert r.returncode == 1
    assert f"changed: tasks/{task}/video.mp4" in r.stdout
    assert "1 file(s) differ" in r.stdout


def test_missing_and_extra_files_are_named(demo_copy):
    assert run_cli("snapshot", "freeze", demo_copy).returncode == 0
    (demo_copy / "hyperparameters.json").unlink()
    (demo_copy / "notes.txt").write_text("added after freezing")
    r = run_cli("snapshot", "verify", demo_copy)
    assert r.returncode == 1
    assert "missing: hyperparameters.json" in r.stdout
    assert "extra: notes.txt" in r.stdout


def test_freeze_refuses_an_invalid_snapshot_and_writes_nothing(demo_copy):
    (demo_copy / "MANIFEST.json").unlink(missing_ok=True)
    task = first_task(demo_copy)
    edit_json(demo_copy / "tasks" / task / "rubric.json", lambda d: d["atoms"][1].update(id=d["atoms"][0]["id"]))
    r = run_cli("snapshot", "freeze", demo_copy)
    assert r.returncode == 1
    assert "duplicate atom id" in r.stdout
    assert not (demo_copy / "MANIFEST.json").exists()


def test_verify_without_manifest_is_a_usage_error(demo_copy):
    (demo_copy / "MANIFEST.json").unlink(missing_ok=True)
    r = run_cli("snapshot", "verify", demo_copy)
    assert r.returncode == 2
    assert "run `omnidr snapshot freeze" in r.stderr
    assert "Traceback" not in r.stderr
