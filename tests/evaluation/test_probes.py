"""The M probes on real reports: the demo's good report passes its M atoms, the skeleton fails
every one (and scores 0 on presentation), results repeat exactly, broken reports fail the probe
that checks what is broken."""

import json

import pytest
from eval_helpers import GOOD, SKELETON, copy_report, demo_inputs, m_calls

pytestmark = pytest.mark.browser


def _probe(chromium, report, calls, **context):
    from omnidr.evaluation import ProbeContext, ProbeLimits, probe_report

    ctx = ProbeContext(duration_s=36.0, **context)
    limits = ProbeLimits(media_wait_s=2, seek_wait_s=2, play_wait_s=2)  # failure bounds only: passes never wait
    return chromium.run(lambda b: probe_report(b, report, calls, ctx, limits))


def _edit_data(report, change):
    path = report / "data.js"
    text = path.read_text("utf-8")
    data = json.loads(text[text.index("{"):text.rindex("}") + 1])
    change(data)
    path.write_text("window.DATA = " + json.dumps(data, ensure_ascii=False) + ";\n", "utf-8")


def test_every_catalog_probe_is_implemented():
    from omnidr.benchmark import probe_catalog
    from omnidr.evaluation._probes import PROBES

    assert set(PROBES) == set(probe_catalog().by_name())


def test_good_report_passes_its_m_atoms(chromium, tmp_path):
    calls = m_calls()
    out = _probe(chromium, GOOD, calls, screenshots_dir=tmp_path / "shots")
    failed = {k: r.reason for k, r in out.results.items() if r.status != "pass"}
    assert not failed
    assert out.session.loaded and out.session.responsive and not out.session.content_free
    assert out.session.faults == [] and out.session.console_errors == [] and out.session.blocked_total == 0
    assert {"page", "timeline", "findings"} <= set(out.session.screenshots)
    assert (tmp_path / "shots" / "page.jpg").stat().st_size > 10_000
    seek = next(r for r in out.results.values() if r.name == "timestamp_seeks")
    assert "24.00 s" in seek.reason


def test_budget_probes_without_min_count_hold_the_report_to_the_snapshots_budgets(chromium):
    """App. D.3: B_web (external sources of every type), B_video, B_doc and B_anchor are the minimum counts; an atom
    that leaves out min_count is held to them, so changing hyperparameters.json changes the verdict."""
    from omnidr.benchmark import ReferenceBudgets
    from omnidr.evaluation import Call

    calls = [Call("source_budget", {"source_type": "external"}), Call("source_budget", {"source_type": "document"}),
             Call("sources_per_anchor", {})]
    zero = _probe(chromium, GOOD, calls, budgets=ReferenceBudgets(web_sources=0, documents=0, records_per_anchor=0))
    have = [int(zero.result(c).reason.split()[0]) for c in calls[:2]]
    assert have[0] >= 5 and have[1] >= 1 and all(r.status == "pass" for r in zero.results.values())
    # B_web counts external sources of every type (App. D.3): the good report's web pages, documents, images and
    # videos together, more than its web-type records alone
    by_type = _probe(chromium, GOOD, [Call("source_budget", {"source_type": t, "min_count": 0})
                                      for t in ("web", "document", "image", "video")])
    typed = [int(r.reason.split()[0]) for r in by_type.results.values()]
    assert have[0] == sum(typed) > typed[0], (have, typed)
    exact = ReferenceBudgets(web_sources=have[0], documents=have[1], records_per_anchor=2)
    above = ReferenceBudgets(web_sources=have[0] + 1, documents=have[1] + 1, records_per_anchor=50)
    at, over = _probe(chromium, GOOD, calls, budgets=exact), _probe(chromium, GOOD, calls, budgets=above)
    assert [at.result(c).status for c in calls] == ["pass"] * 3
    assert [over.result(c).status for c in calls] == ["fail"] * 3
    assert f"(need {have[0] + 1})" in over.result(calls[0]).reason
    assert "fewer than 50 source records" in over.result(calls[2]).reason
    # an explicit min_count still wins over the budgets
    assert _probe(chromium, GOOD, [Call("source_budget", {"source_type": "web", "min_count": 1})],
                  budgets=above).results.popitem()[1].status == "pass"
    for kind in ("image", "web"):  # no budget counts images, or web pages alone: B_web is over every type
        alone = _probe(chromium, GOOD, [Call("source_budget", {"source_type": kind})])
        assert f"the budgets set none for {kind} sources" in alone.results.popitem()[1].reason


def test_every_probe_passes_on_the_good_report_and_fails_on_the_skeleton(chromium, tmp_path):
    from omnidr.benchmark import probe_catalog
    from omnidr.evaluation import Call

    defaults = {"time_s": 24, "min_fraction": 0.5, "min_count": 1, "source_type": "web", "media_type": "image"}
    calls = [Call(p.name, {k: defaults[k] for k in p.params}) for p in probe_catalog().probes]
    good = _probe(chromium, GOOD, calls, screenshots_dir=tmp_path / "good")
    skeleton = _probe(chromium, SKELETON, calls, screenshots_dir=tmp_path / "skeleton")
    assert [r.name for r in good.results.values() if r.status != "pass"] == []
    assert all(r.status == "fail" and "content-free" in r.reason for r in skeleton.results.values())
    assert skeleton.session.content_free


def test_the_evaluator_counts_an_unfilled_skeleton_as_a_failure_whatever_the_attempt_said(chromium, tmp_path):
    """App. F.1: a run succeeds only when its report can be parsed by the evaluator, and an unfilled skeleton fails.
    The evaluator applies that check itself (a `command` run or an archive from elsewhere may say success)."""
    from omnidr.evaluation import BaselineJudge, evaluate_report

    ev = chromium.run(lambda b: evaluate_report(b, BaselineJudge(), SKELETON, demo_inputs(), tmp_path / "ev"))
    assert ev.failure is not None and ev.failure.startswith("an unfilled interface skeleton")
    assert ev.score.failed and ev.score.total == 0 and ev.atoms == []
    assert ev.decisions().failure == ev.failure  # re-aggregation and the leaderboard see a failure too


def test_a_report_that_deviates_from_the_schema_is_scored_with_a_warning(chromium, tmp_path):
    """App. F.1: what the evaluator can still read is a report, not a failure; the deviation is recorded."""
    import json

    from omnidr.evaluation import BaselineJudge, evaluate_report

    report = copy_report(tmp_path / "r")
    body = (report / "data.js").read_text("utf-8")
    data = json.loads(body[body.index("{"):body.rindex("}") + 1])
    del data["overview"]
    (report / "data.js").write_text("window.DATA = " + json.dumps(data) + ";", "utf-8")
    ev = chromium.run(lambda b: evaluate_report(b, BaselineJudge(), report, demo_inputs(), tmp_path / "ev"))
    assert ev.failure is None and not ev.score.failed and ev.score.total > 0
    [warning] = ev.report_warnings
    assert "overview: Field required" in warning
    [data_valid] = [a for a in ev.atoms if a.probe is not None and a.probe.name == "data_valid"]
    assert data_valid.outcome == "fail"  # the contract's own M atom still scores the deviation


@pytest.mark.media  # frames of the cited moments, cut by ffmpeg
def test_good_report_evaluation_passes_the_gates(chromium, tmp_path):
    from omnidr.evaluation import BaselineJudge, evaluate_report

    ev = chromium.run(lambda b: evaluate_report(b, BaselineJudge(), GOOD, demo_inputs(), tmp_path / "ev"))
    assert all(a.outcome == "pass" for a in ev.atoms if a.evaluator == "M")
    assert ev.score.direction("P-RI").gate_passed and ev.score.direction("P-TN").gate_passed
    assert ev.score.dimensions["P"].score > 90
    saved = json.loads((tmp_path / "ev" / "evaluation.json").read_text("utf-8"))
    assert saved["judge"]["kind"] == "offline-baseline" and saved["evaluator_version"]
    assert (tmp_path / "ev" / "material.json").is_file()


@pytest.mark.media  # frames of the cited moments, cut by ffmpeg
@pytest.mark.parametrize("gate_votes", [1, 5])
def test_the_number_of_gate_votes_comes_from_the_hyperparameters(chromium, tmp_path, gate_votes):
    from dataclasses import replace

    from omnidr.benchmark import direction_inventory
    from omnidr.evaluation import BaselineJudge, evaluate_report

    inputs = demo_inputs()
    inputs = replace(inputs, hyperparameters=inputs.hyperparameters.model_copy(update={"gate_votes": gate_votes}))
    ev = chromium.run(lambda b: evaluate_report(b, BaselineJudge(), GOOD, inputs, tmp_path / "ev"))
    gates = {d.id for d in direction_inventory().directions if d.gate}
    judged_gates = [a for a in ev.atoms if a.evaluator == "J" and a.direction in gates]
    others = [a for a in ev.atoms if a.evaluator == "J" and a.direction not in gates]
    assert judged_gates and all(len(a.votes) == gate_votes for a in judged_gates)
    assert others and all(len(a.votes) == 1 for a in others)
    assert ev.judge_usage.votes == gate_votes * len(judged_gates) + len(others)


@pytest.mark.media  # frames of the cited moments, cut by ffmpeg
def test_visual_criteria_get_frames_of_the_cited_moments_from_the_snapshot_video(chromium, tmp_path):
    from omnidr.evaluation import BaselineJudge, evaluate_report
    from omnidr.evaluation._prompt import MAX_FRAMES

    ev = chromium.run(lambda b: evaluate_report(b, BaselineJudge(), GOOD, demo_inputs(), tmp_path / "ev"))
    material = json.loads((tmp_path / "ev" / "material.json").read_text("utf-8"))
    assert material["moments"] and material["frames_note"] is None
    assert 0 < len(material["frames"]) == min(MAX_FRAMES, len(material["moments"]))
    assert {float(t) for t in material["frames"]} <= set(material["moments"])
    for rel in material["frames"].values():
        assert (tmp_path / "ev" / rel).read_bytes()[:2] == b"\xff\xd8"  # JPEG frames taken by ffmpeg
    assert ev.atoms


def test_a_section_longer_than_the_limit_is_cut_with_notice(chromium, tmp_path):
    import re
    import shutil

    from omnidr.evaluation._material import MAX_SECTION_CHARS

    report = tmp_path / "long"
    shutil.copytree(GOOD, report)
    data = (report / "data.js").read_text("utf-8")
    long_text = "A sentence about the lamp's weight. " * (MAX_SECTION_CHARS // 30)
    data = re.sub(r'"overview": "', '"overview": "' + long_text, data, count=1)
    (report / "data.js").write_text(data, "utf-8")
    material = _probe(chromium, report, m_calls()).material
    assert material.cut_sections["overview"] > MAX_SECTION_CHARS
    assert len(material.sections["overview"]) == MAX_SECTION_CHARS
    shown = material.text_of(("overview",))
    assert f"only its first {MAX_SECTION_CHARS:,} of {material.cut_sections['overview']:,} characters" in shown


def test_same_report_same_results(chromium):
    calls = m_calls()
    runs = [_probe(chromium, GOOD, calls) for _ in range(2)] + [_probe(chromium, SKELETON, calls)]
    def strip(out):
        return {k: (r.status, r.reason) for k, r in out.results.items()}

    assert strip(runs[0]) == strip(runs[1])
    material = [r.material.model_dump() for r in runs[:2]]
    assert material[0] == material[1]


def test_other_demo_tasks_render_with_their_own_probes(chromium, tmp_path):
    # The nd-filter task's probes (findings_linked_to_video, no_console_errors, timestamp at 11 s)
    # on the pendant report: the report answers another task, but the probes still measure it.
    calls = m_calls("nd-filter-waterfall")
    out = _probe(chromium, GOOD, calls)
    by_name = {r.name: r for r in out.results.values()}
    assert by_name["findings_linked_to_video"].status == "pass"
    assert by_name["no_console_errors"].status == "pass"
    assert by_name["timestamp_seeks"].status == "fail" and "no visible timestamp link for 11 s" in by_name["timestamp_seeks"].reason


def test_broken_reports_fail_the_probe_that_checks_what_is_broken(chromium, tmp_path):
    from omnidr.evaluation import Call

    r = copy_report(tmp_path / "r")
    (r / "assets" / "frame_007.jpg").unlink()  # a missing image
    _edit_data(r, lambda d: d["findings"][0]["claims"][0].update(citations=["S99"]))  # a dangling citation
    _edit_data(r, lambda d: d["sources"][0].update(date="last spring", quote=""))  # incomplete provenance
    _edit_data(r, lambda d: d.update(timeline=d["timeline"][:2]))  # covers 12 of 36 s
    calls = [Call("assets_load"), Call("citations_resolve"), Call("source_fields_complete"),
             Call("timeline_covers", {"min_fraction": 0.9}), Call("media_present", {"media_type": "image", "min_count": 3}),
             Call("data_valid")]
    out = _probe(chromium, r, calls)
    res = {c.name: out.result(c) for c in calls}
    assert res["assets_load"].status == "fail" and "frame_007.jpg" in res["assets_load"].reason
    assert res["citations_resolve"].status == "fail" and "S99" in res["citations_resolve"].reason
    assert res["source_fields_complete"].status == "fail" and "ISO date" in res["source_fields_complete"].reason
    assert res["timeline_covers"].status == "fail" and "12.0 of 36.0 s" in res["timeline_covers"].reason
    assert res["media_present"].status == "fail"
    assert res["data_valid"].status == "pass"


def test_missing_video_fails_playback_and_seeking(chromium, tmp_path):
    from omnidr.evaluation import Call

    r = copy_report(tmp_path / "r")
    (r / "video.mp4").unlink()
    calls = [Call("video_plays"), Call("timestamp_seeks", {"time_s": 24}), Call("assets_load")]
    out = _probe(chromium, r, calls)
    assert all(out.result(c).status == "fail" for c in calls)
    assert "video.mp4" in out.result(calls[2]).reason


def test_invalid_data_fails_data_valid(chromium, tmp_path):
    from omnidr.evaluation import Call

    r = copy_report(tmp_path / "r")
    _edit_data(r, lambda d: d.update(contract="omnidr-report-0"))
    out = _probe(chromium, r, [Call("data_valid")])
    assert out.result(Call("data_valid")).status == "fail" and "omnidr-report-0" in out.result(Call("data_valid")).reason
    (r / "data.js").write_text("window.DATA = {\"title\": 3};", "utf-8")
    out = _probe(chromium, r, [Call("data_valid"), Call("report_present")])
    assert out.result(Call("data_valid")).status == "fail"


def test_a_report_not_under_its_folder_is_refused(chromium, tmp_path):
    from omnidr.evaluation import Call

    r = copy_report(tmp_path / "r")
    secret = tmp_path / "secret.txt"
    secret.write_text("rubric answers")
    (r / "leak.txt").symlink_to(secret)
    _edit_data(r, lambda d: d["findings"][0].setdefault("media", []).append({"type": "image", "src": "leak.txt", "caption": "x"}))
    out = _probe(chromium, r, [Call("assets_load")])
    assert out.result(Call("assets_load")).status == "fail"
    assert "leak.txt" in out.result(Call("assets_load")).reason
