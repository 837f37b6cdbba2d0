"""`omnidr eval` runs the evaluator and scoring stages on the demo's example reports, offline."""

import json

import pytest
from eval_helpers import DEMO

pytestmark = [pytest.mark.browser, pytest.mark.media]  # the video checks run ffprobe on the demo videos


def test_eval_scores_the_example_reports_with_the_baseline_judge(tmp_path, monkeypatch):
    from omnidr.pipeline import check_snapshot

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # no pass kept by another test: the checks run here

    checked = check_snapshot(DEMO)
    stages = {s.name: s for s in checked.stages}
    assert stages["evaluator"].status == "ok", stages["evaluator"].detail
    assert "offline-baseline" in stages["evaluator"].detail
    assert "good (pendant-lamp-safety): M 13/13 pass" in stages["evaluator"].detail
    # App. F.1: the evaluator's own report check fails the unfilled skeleton before any probe
    assert "skeleton (pendant-lamp-safety): failure: an unfilled interface skeleton" in stages["evaluator"].detail
    assert stages["scoring"].status == "ok"
    assert "good: 100.0" in stages["scoring"].detail and "skeleton: 0.0" in stages["scoring"].detail
    assert all(s.status == "ok" for s in checked.stages)
    assert checked.snapshot_id.startswith("demo-")


def test_a_pass_of_the_browser_checks_is_reused_for_the_same_files_code_and_chromium_and_a_failure_never(
        tmp_path, monkeypatch):
    import shutil

    from omnidr.pipeline import _checks, check_snapshot

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    demo = tmp_path / "demo"
    shutil.copytree(DEMO, demo)
    said: list[str] = []
    first = check_snapshot(demo, said.append)
    assert "evaluating the example reports (browser probes, offline baseline judge)" in said
    [kept] = (tmp_path / "cache" / "omnidr" / "checks").iterdir()

    def no_browser(*_args, **_kwargs):
        raise AssertionError("Chromium ran again on the same inputs")

    with monkeypatch.context() as m:  # the second eval on the same three runs neither browser check
        m.setattr(_checks, "_evaluate_examples", no_browser)
        m.setattr("omnidr.evaluation.check_empty_reports", no_browser)
        said.clear()
        second = check_snapshot(demo, said.append)
    assert any("not run again" in line for line in said)
    before, after = {s.name: s for s in first.stages}, {s.name: s for s in second.stages}
    assert after.keys() == before.keys()
    for name in ("evaluator", "scoring"):  # the same findings, marked as reused
        assert after[name].status == "ok" and after[name].detail.startswith(before[name].detail)
        assert "(as checked " in after[name].detail and "same snapshot files, omnidr code and Chromium)" in after[name].detail

    # another file is another key: the checks run again, and their pass is kept beside the first
    (demo / "NOTES.txt").write_text("a maintainer's note")
    said.clear()
    third = check_snapshot(demo, said.append)
    assert "evaluating the example reports (browser probes, offline baseline judge)" in said
    assert [s.detail for s in third.stages if s.name == "scoring"] == [before["scoring"].detail]
    assert len(list((tmp_path / "cache" / "omnidr" / "checks").iterdir())) == 2

    # a failed check is never kept: the next eval checks again
    (demo / "NOTES.txt").write_text("another note")
    calls = []

    def broken(snap):
        calls.append(snap)
        return [_checks.StageResult("evaluator", "failed", "Chromium crashed"),
                _checks.StageResult("scoring", "failed", "nothing was evaluated")]

    monkeypatch.setattr(_checks, "_evaluate_examples", broken)
    for _ in range(2):
        assert {s.name: s.status for s in check_snapshot(demo).stages}["evaluator"] == "failed"
    assert len(calls) == 2 and len(list((tmp_path / "cache" / "omnidr" / "checks").iterdir())) == 2
    assert kept in list((tmp_path / "cache" / "omnidr" / "checks").iterdir())


def test_a_command_that_scores_no_example_keeps_the_empty_report_pass_alone_and_eval_completes_it(
        tmp_path, monkeypatch):
    from omnidr.pipeline import _checks, check_snapshot

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    ran: list[str] = []
    real_empty, real_examples = _checks._BrowserChecks.empty_report_check, _checks._evaluate_examples

    def empty(self, snap):
        ran.append("empty")
        return real_empty(self, snap)

    def examples(snap):
        ran.append("examples")
        return real_examples(snap)

    monkeypatch.setattr(_checks._BrowserChecks, "empty_report_check", empty)
    monkeypatch.setattr(_checks, "_evaluate_examples", examples)
    said: list[str] = []
    # `compare` and `calibrate`: the empty-report check runs once, and its pass is kept alone
    first = check_snapshot(DEMO, said.append, check_examples=False)
    again = check_snapshot(DEMO, said.append, check_examples=False)
    assert ran == ["empty"] and [s.name for s in first.stages] == [s.name for s in again.stages]
    assert any(line.startswith("the empty-report check passed on ") and line.endswith("not run again")
               for line in said)
    [kept] = (tmp_path / "cache" / "omnidr" / "checks").iterdir()
    assert json.loads(kept.read_text())["stages"] is None
    # `eval` then scores the examples only, and keeps the pass of both in the same record
    full = check_snapshot(DEMO, said.append)
    assert ran == ["empty", "examples"] and {"evaluator", "scoring"} <= {s.name for s in full.stages}
    assert [s["name"] for s in json.loads(kept.read_text())["stages"]] == ["evaluator", "scoring"]
    check_snapshot(DEMO, said.append, check_examples=False)  # and a later compare reuses it, keeping it whole
    check_snapshot(DEMO, said.append)
    assert ran == ["empty", "examples"] and json.loads(kept.read_text())["stages"] is not None
