"""The report check of paper App. F.1 ("a run succeeds only when its final HTML report is recoverable and can be
parsed by the evaluator"; "unfilled interface skeletons are counted as failures"), as the attempt and the evaluator
both apply it: what fails, and what deviates from the contract yet still counts, with a warning."""

import json
import shutil
from pathlib import Path

import pytest
from testkit import DEMO

from omnidr.benchmark import check_report, report_problem

REPORTS = DEMO / "reports" / "pendant-lamp-safety"


def _report(tmp_path: Path, edit=None, text: str | None = None) -> Path:
    folder = tmp_path / "report"
    shutil.copytree(REPORTS / "good", folder)
    if text is not None:
        (folder / "data.js").write_text(text, "utf-8")
    elif edit is not None:
        body = (folder / "data.js").read_text("utf-8").strip()
        data = json.loads(body[body.index("{"):body.rindex("}") + 1])
        edit(data)
        (folder / "data.js").write_text("window.DATA = " + json.dumps(data) + ";\n", "utf-8")
    return folder


def test_the_demo_reports_good_one_counts_and_its_skeleton_does_not():
    assert check_report(REPORTS / "good").problem is None and check_report(REPORTS / "good").warnings == []
    assert check_report(REPORTS / "skeleton").problem.startswith("an unfilled interface skeleton")


@pytest.mark.parametrize("text, problem", [
    (None, "not a valid report: data.js: missing"),
    ("console.log(1)", "not a valid report: data.js: expected `window.DATA = {...};`"),
    ("window.DATA = {broken", "not a valid report: data.js:"),
    ("window.DATA = [1, 2];", "not a valid report: data.js:"),
    # a skeleton that also breaks the schema is still a skeleton: there is nothing to read
    ('window.DATA = {"title": 7, "timeline": [], "findings": [], "sources": []};', "an unfilled interface skeleton"),
])
def test_what_cannot_be_read_or_holds_nothing_fails(tmp_path, text, problem):
    folder = _report(tmp_path, text=text or "")
    if text is None:
        (folder / "data.js").unlink()
    got = check_report(folder)
    assert got.problem is not None and got.problem.startswith(problem), got
    assert report_problem(folder) == got.problem


@pytest.mark.parametrize("edit, where", [
    (lambda d: d.pop("overview"), "overview: Field required"),
    (lambda d: d["findings"][0].update(claims="one long paragraph"), "findings.0.claims"),
    (lambda d: d["video"].update(duration_s=-3), "video.duration_s"),
])
def test_a_report_that_deviates_from_the_schema_but_reads_counts_with_a_warning(tmp_path, edit, where):
    got = check_report(_report(tmp_path, edit))
    assert got.problem is None
    [warning] = got.warnings
    assert where in warning and "the evaluator reads it" in warning, warning


def test_unknown_keys_are_no_deviation(tmp_path):
    got = check_report(_report(tmp_path, lambda d: d.update(extra_notes="kept")))
    assert got.problem is None and got.warnings == []


def test_a_data_file_that_leads_out_of_the_folder_or_is_no_file_is_refused_unread(tmp_path):
    """The report folder is the agent's: the check runs on the host at the end of an attempt, so the data file must
    be a regular file inside the folder and of a bounded size; nothing else is opened."""
    secret = tmp_path / "host-secret.json"
    secret.write_text('{"timeline": [1]}', "utf-8")
    cases = {
        "outside": lambda f: f.symlink_to(secret),
        "device": lambda f: f.symlink_to("/dev/zero"),
        "folder": lambda f: f.mkdir(),
        "huge": lambda f: f.open("wb").truncate(65 * 1024 * 1024),  # sparse: nothing is written or read
    }
    reasons = {}
    for name, make in cases.items():
        folder = _report(tmp_path / name)
        (folder / "data.js").unlink()
        make(folder / "data.js")
        reasons[name] = check_report(folder).problem
    assert reasons["outside"] == "not a valid report: data.js points outside the report folder"
    assert reasons["device"] == "not a valid report: data.js points outside the report folder"
    assert reasons["folder"] == "not a valid report: data.js is not a regular file"
    assert reasons["huge"] == f"not a valid report: data.js is {65 * 1024 * 1024} bytes, above {64 * 1024 * 1024}"
    inside = _report(tmp_path / "inside")  # a link to a file inside the folder is the agent's own business
    (inside / "real.js").write_bytes((inside / "data.js").read_bytes())
    (inside / "data.js").unlink()
    (inside / "data.js").symlink_to("real.js")
    assert check_report(inside).problem is None
