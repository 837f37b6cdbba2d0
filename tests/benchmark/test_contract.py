"""The report contract: the shipped good report fills window.DATA, the skeleton is recognised as unfilled."""

import json

import pytest
from testkit import DEMO

from omnidr.benchmark import ReportDataError, is_skeleton, read_report_data, validate_snapshot


def _reports():
    return json.loads((DEMO / "snapshot.json").read_text("utf-8"))["reports"]


def test_good_report_is_filled_and_cites_existing_sources():
    data = read_report_data(DEMO / _reports()["good"])
    assert not is_skeleton(data)
    source_ids = {s.id for s in data.sources}
    cited = {c for f in data.findings for claim in f.claims for c in claim.citations}
    assert cited and cited <= source_ids
    assert (DEMO / _reports()["good"] / data.video.src).is_file()


def test_skeleton_report_is_unfilled():
    assert is_skeleton(read_report_data(DEMO / _reports()["skeleton"]))


def test_report_template_is_the_contract_template():
    snap = validate_snapshot(DEMO).snapshot
    template = (DEMO / snap.contract_file).parent / snap.contract.template
    for label in ("good", "skeleton"):
        assert (DEMO / _reports()[label] / snap.contract.entry).read_bytes() == template.read_bytes()


def test_data_file_must_be_a_plain_assignment(tmp_path):
    (tmp_path / "data.js").write_text("var x = 1;")
    with pytest.raises(ReportDataError, match="expected `window.DATA"):
        read_report_data(tmp_path)
    (tmp_path / "data.js").write_text('window.DATA = {"title": "t"};')
    with pytest.raises(ReportDataError, match="problem"):
        read_report_data(tmp_path)
