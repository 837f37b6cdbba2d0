"""S5's behavioural calibration of an authoring package (`omnidr author calibrate`), offline: the scripted model under
the reference harness writes R1 (no web search), R2 (full tools) and R3 (full tools and the evidence brief), the
scripted judge scores them in the evaluator, and the package's fate takes the result in (App. E.4)."""

import json

import pytest
from test_review import TASK, demo_package
from testkit import run_cli

from omnidr.authoring import Package, review_package
from omnidr.benchmark import verify_snapshot

pytestmark = [pytest.mark.docker, pytest.mark.media, pytest.mark.browser,
              pytest.mark.images("reference", "evaluator")]


def test_author_calibrate_runs_r1_r2_r3_on_the_package_and_keeps_it_in_the_trace(tmp_path):
    pkg = demo_package(tmp_path / "pkg")
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"round": 1, "rater": f"r{n}", "item": "V01", "label": "correct"}) + "\n"
                              for n in (1, 2, 3)))
    assert review_package(Package(pkg), labels).status == "frozen"

    done = run_cli("author", "calibrate", pkg, "--runs-root", tmp_path / "runs", timeout=1500)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    record = json.loads((pkg / "authoring" / "s5" / "record.json").read_text())
    s = record["scores"]
    assert record["passed"] and s["R1"] < s["R2"] < s["R3"] and s["R3"] - s["R1"] > 20
    assert record["systems"] == {"R1": "reference-video-scripted", "R2": "reference-full-scripted",
                                 "R3": "reference-full-brief-scripted"}
    assert json.loads((pkg / "calibration.json").read_text())["tasks"][TASK] == s
    assert "S5 calibration: passed (R1 " in done.stdout
    assert "S5 calibration: candidates 1, accepted 1, repaired 0, excluded 0 (passed" in done.stdout
    assert f"package {TASK}: frozen" in done.stdout
    trace = json.loads((pkg / "authoring" / "report.json").read_text())["attrition"]
    assert [r["step"] for r in trace] == ["S5 calibration", "S5/S6 round 1"]
    _, diff = verify_snapshot(pkg)  # frozen again with its calibration record
    assert diff.clean
