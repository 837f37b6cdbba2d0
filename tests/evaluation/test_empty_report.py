"""The empty-report check joins `omnidr snapshot validate`: every M atom runs against a valid but
content-free report, and an atom that awards credit there is an error."""

import json

import pytest
from eval_helpers import DEMO, TASK, edit_json, run_cli

pytestmark = pytest.mark.browser


def test_content_free_report_is_valid_and_empty(tmp_path):
    from omnidr.benchmark import is_skeleton, open_snapshot, read_report_data
    from omnidr.evaluation import content_free_report

    snap = open_snapshot(DEMO)
    b = snap.tasks[TASK]
    folder = content_free_report(tmp_path / "empty", DEMO / "contract" / "template.html", b.task, b.folder / b.task.video.file)
    data = read_report_data(folder)
    assert is_skeleton(data) and data.query == b.task.query
    assert (folder / "index.html").read_bytes() == (DEMO / "contract" / "template.html").read_bytes()
    assert (folder / "video.mp4").stat().st_size == (b.folder / "video.mp4").stat().st_size


def test_demo_m_atoms_award_no_credit_to_an_empty_report():
    from omnidr.benchmark import open_snapshot
    from omnidr.evaluation import check_empty_reports

    assert check_empty_reports(open_snapshot(DEMO)) == []


def test_an_atom_that_credits_an_empty_report_is_a_validation_error(demo_copy):
    rubric = demo_copy / "tasks" / TASK / "rubric.json"
    index = next(i for i, a in enumerate(json.loads(rubric.read_text("utf-8"))["atoms"]) if a.get("probe", {}) and a["probe"]["name"] == "video_plays")
    # "Does the video fail to play?" with polarity no: a content-free report fails every probe, so it would pass.
    edit_json(rubric, lambda d: d["atoms"][index].update(polarity="no"))
    r = run_cli("snapshot", "validate", demo_copy)
    assert r.returncode == 1, r.stdout
    line = next(x for x in r.stdout.splitlines() if "content-free" in x)
    assert f"tasks/{TASK}/rubric.json: atoms[{index}].probe" in line and "P-TN-02" in line
    fast = run_cli("snapshot", "validate", "--no-videos", demo_copy)  # the fast path skips the browser check
    assert "content-free" not in fast.stdout
