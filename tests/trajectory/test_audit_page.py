"""The audit page in real Chromium: opens from file:// with no server and no console errors."""

import shutil
from pathlib import Path

import pytest
from testkit import follow_links
from trajectory_helpers import attempt_record, exchange, make_run, network_log, write_gateway

from omnidr.trajectory import audit_run

pytestmark = pytest.mark.browser


def open_page(path: Path):
    from playwright.sync_api import sync_playwright

    messages: list[str] = []
    failed: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
        page = browser.new_page()
        page.on("console", lambda m: messages.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: messages.append(f"pageerror: {e}"))
        page.on("requestfailed", lambda r: failed.append(r.url))
        page.on("request", lambda r: failed.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
        page.goto(path.resolve().as_uri())
        page.wait_for_load_state("load")
        result = {
            "steps": page.inner_text("#step-count"),
            "details": page.locator("details.step").count(),
            "budget": page.locator("svg#budget polyline").count(),
            "network_rows": page.locator("#network tr").count(),
        }
        page.click("button[data-filter=errors]")
        result["errors_shown"] = page.inner_text("#shown")
        page.click("button[data-filter=search]")
        result["search_shown"] = page.inner_text("#shown")
        page.click("#expand")
        result["open"] = page.locator("details.step[open]").count()
        browser.close()
    return result, messages, failed


def test_audit_page_in_chromium(tmp_path: Path, fixtures: Path):
    folder = make_run(tmp_path / "run", "openclaw")
    sessions = folder / "output/harness-logs/openclaw-state/agents/main/sessions"
    sessions.mkdir(parents=True)
    shutil.copy(fixtures / "openclaw-session.jsonl", sessions / "s.jsonl")
    write_gateway(folder / "logs/gateway.jsonl", [exchange(i, {}, tokens=(1000 * i, 50)) for i in range(1, 6)])
    attempt_record(folder, "openclaw")
    network_log(folder)
    [audit] = audit_run(tmp_path / "run")
    result, console, requests = open_page(Path(audit.page_path))
    assert console == [] and requests == []
    assert result["steps"] == "11" and result["details"] == 11
    assert result["budget"] == 2 and result["network_rows"] == 4  # header + 3 events
    assert result["errors_shown"] == "3" and result["search_shown"] == "2"
    assert result["open"] == 11


def test_gateway_only_page_with_hostile_text(tmp_path: Path):
    folder = make_run(tmp_path / "run", "command")
    body = {"choices": [{"message": {"content": "</script><script>console.error('pwned')</script><img src=x>"}}]}
    write_gateway(folder / "logs/gateway.jsonl", [exchange(1, body)])
    [audit] = audit_run(tmp_path / "run")
    result, console, requests = open_page(Path(audit.page_path))
    assert console == [] and requests == [] and result["steps"] == "1"


def test_a_failed_attempt_shows_its_error_first_and_links_to_what_sits_next_to_it(tmp_path: Path, fixtures: Path):
    """In a system folder of `omnidr eval`: links to the report, this attempt's evaluation, the logs and
    the run root's page, each followed in Chromium; the failure and every error step before the
    statistics, error steps open; the completion state from attempt.json when the log does not tell."""
    root = tmp_path / "runs" / "demo-x"
    system = root / "sys"
    folder = make_run(system, "openclaw")
    (system / "eval.json").write_text("{}", "utf-8")
    (root / "index.html").write_text("<h1>run index</h1>", "utf-8")
    (folder / "output/report/index.html").write_text("<h1>the report</h1>", "utf-8")
    (system / "evaluation/task-1").mkdir(parents=True)
    (system / "evaluation/task-1/evaluation.json").write_text('{"task_id": "task-1", "attempt": 1}', "utf-8")
    sessions = folder / "output/harness-logs/openclaw-state/agents/main/sessions"
    sessions.mkdir(parents=True)
    shutil.copy(fixtures / "openclaw-session.jsonl", sessions / "s.jsonl")
    write_gateway(folder / "logs/gateway.jsonl", [exchange(1, {})])
    network_log(folder)
    attempt_record(folder, "openclaw", reason="agent_error", detail="the agent exited 3 without a report", exit_code=3)
    [audit] = audit_run(system)
    values, links, opened = follow_links(
        Path(audit.page_path), "#links a",
        order="[...document.body.children].map(e => e.id || e.tagName)",
        outcome="document.querySelector('#outcome').innerText",
        errors="[...document.querySelectorAll('#errors a')].map(a => a.getAttribute('href'))",
        open_errors="document.querySelectorAll('details.step.err[open]').length",
        all_errors="document.querySelectorAll('details.step.err').length",
        completion="document.querySelector('#info').innerText")
    order, outcome, errors = values["order"], values["outcome"], values["errors"]
    open_errors, all_errors, completion = values["open_errors"], values["all_errors"], values["completion"]
    assert order.index("outcome") < order.index("errors") < order.index("info") < order.index("stats")
    assert outcome == "Failed: agent_error: the agent exited 3 without a report"
    assert len(errors) == all_errors == open_errors == 3 and all(h.startswith("#step-") for h in errors)
    assert "completion\tfinished: the log shows the run's end" in completion  # the OpenClaw log tells
    labels = [label for label, _ in links]
    assert labels[:2] == ["report", "evaluation"] and "run index" in labels and "logs/gateway.jsonl" in labels
    assert "the report" in opened["report"] and '"attempt": 1' in opened["evaluation"]
    assert "run index" in opened["run index"] and '"seq"' in opened["logs/network.jsonl"]


def test_completion_comes_from_attempt_json_where_the_log_does_not_tell(tmp_path: Path):
    from omnidr.attempts import AttemptRecord
    from omnidr.trajectory import Trajectory
    from omnidr.trajectory._html import completion

    folder = make_run(tmp_path / "run", "command")
    silent = Trajectory(harness="command", source_format="gateway", complete=None)
    assert completion(silent, None).startswith("unknown: no attempt.json")
    for reason, code, expected in [("agent_error", 3, "ended with exit code 3 (agent_error)"),
                                   ("timeout", None, "cut off at the time limit"),
                                   ("success", 0, "finished: the agent exited 0")]:
        attempt_record(folder, "command", reason=reason, exit_code=code)
        record = AttemptRecord.model_validate_json((folder / "attempt.json").read_text())
        assert completion(silent, record).startswith(expected)
    cut = silent.model_copy(update={"complete": False})
    assert completion(cut, record).startswith("cut off: the log ends")


def test_an_evaluation_of_another_attempt_is_not_linked(tmp_path: Path):
    from omnidr.trajectory._audit import page_links

    folder = make_run(tmp_path / "sys", "command", attempt=1)
    (tmp_path / "sys/evaluation/task-1").mkdir(parents=True)
    (tmp_path / "sys/evaluation/task-1/evaluation.json").write_text('{"attempt": 2}', "utf-8")
    assert "evaluation" not in dict(page_links(folder, "task-1", 1))
    assert dict(page_links(folder, "task-1", 1)).get("run index") is None  # not an eval system folder
