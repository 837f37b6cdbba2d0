"""The audit page in real Chromium: opens from file:// with no server and no console errors."""

import shutil
from pathlib import Path

import pytest

from omnidr.trajectory import audit_run
from trajectory_helpers import attempt_record, exchange, make_run, network_log, write_gateway

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
