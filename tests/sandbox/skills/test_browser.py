"""The persistent browser (paper 002, App. C.1.1) with real Chromium: every `omnidr-skill browser ...` is its own
process, as in a CLI harness's shell, and the page, its form state and its cookies carry over from one to the
next. The site exists only behind a loopback stand-in for the egress proxy, so every page the test sees came
through the proxy."""

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from testkit import DEMO, ROOT, ProxyWeb

from sandbox.reference_agent._capability import capability
from sandbox.reference_agent._tools import ToolBox, ToolError, ToolSettings

pytestmark = [pytest.mark.browser, pytest.mark.network]

SITE = "http://archive.opends.test"
TIDES = {("118", "1990s"): "mean tide 1.42 m", ("118", "1980s"): "mean tide 1.37 m", ("204", "1990s"): "mean tide 0.31 m"}


def _html(title: str, body: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    page = f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>"
    return 200, {"Content-Type": "text/html; charset=utf-8", **headers}, page.encode()


def _results(query: dict, headers: dict) -> tuple[int, dict[str, str], bytes]:
    station, decade = query.get("station", [""])[0], query.get("decade", [""])[0]
    visitor = headers.get("Cookie", "").partition("visitor=")[2] or "unknown"
    found = TIDES.get((station, decade), "no record")
    return _html("Results", f"<p>Station {station} in the {decade}: {found}.</p><p>Visitor {visitor}</p>"
                            f"<a href='/gauge/{station}'>Gauge record</a> "
                            f"<a href='/files/readings-{station}.csv'>Download the readings</a>")


@pytest.fixture
def site():
    with ProxyWeb() as web:
        web.pages["/"] = _html("Tide archive", "<h1>Tide archive</h1><a href='/search'>Search the tide archive</a>",
                               **{"Set-Cookie": "visitor=42; Path=/"})
        web.pages["/search"] = _html("Search", """
            <form action="/results" method="get">
              <label for="station">Station</label> <input id="station" name="station" required>
              <select name="decade"><option value="1980s">Eighties</option><option value="1990s">Nineties</option></select>
              <button type="submit">Look up</button>
            </form>""")
        web.pages["/results"] = _results
        web.pages["/files/report.pdf"] = (200, {"Content-Type": "application/pdf"},
                                          (DEMO / "web" / "www.example-optics.com" / "pdf" /
                                           "clearline-nd1000-datasheet.pdf").read_bytes())
        web.pages["/gauge/118"] = _html("Gauge 118", "<p>Gauge 118 stands on pier 4.</p>")
        web.pages["/files/readings-118.csv"] = (200, {"Content-Type": "text/csv", "Content-Disposition":
                                                      "attachment; filename=readings-118.csv"},
                                                b"date,tide_m\n1991-03-01,1.40\n1991-03-02,1.44\n")
        yield web


def _daemon_pid(sock: Path) -> int | None:
    """The pid of the process listening on the browser's socket (SO_PEERCRED), None when nobody listens."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(str(sock))
            pid, _uid, _gid = struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
            return pid
    except OSError:
        return None


@pytest.fixture
def browser_cli(tmp_path, site):
    state = tmp_path / "state"

    def run(*args: str) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        env.update(OMNIDR_CAPABILITY="multimodal", OMNIDR_TASK_KIND="short_answer", OMNIDR_SKILL_STATE=str(state),
                   OMNIDR_ARTIFACTS_DIR=str(tmp_path / "artifacts"), OMNIDR_VIDEO=str(DEMO / "none.mp4"),
                   OMNIDR_CONTRACT=str(DEMO / "contract"), HTTP_PROXY=site.url, HTTPS_PROXY=site.url,
                   PYTHONPATH=str(ROOT))
        return subprocess.run([sys.executable, "-m", "sandbox.skills", "browser", *args], env=env,
                              capture_output=True, text=True, timeout=240)

    run.state = state  # type: ignore[attr-defined]
    yield run
    run("close")
    pid = _daemon_pid(state / "browser.sock")
    if pid is not None:  # the daemon this test started did not stop: end it by its id
        os.kill(pid, signal.SIGTERM)


def ok(r: subprocess.CompletedProcess) -> dict:
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_a_form_query_through_separate_calls_keeps_the_page_its_fields_and_cookies(browser_cli, site, tmp_path):
    early = browser_cli("read")
    assert early.returncode == 1 and early.stderr.strip() == (
        "omnidr-skill browser read: no browser is open: start one with `browser open URL`")
    home = ok(browser_cli("open", f"{SITE}/"))
    assert (home["title"], home["status"]) == ("Tide archive", 200)
    assert home["links"] == [{"text": "Search the tide archive", "href": f"{SITE}/search"}]
    search = ok(browser_cli("click", "Search the tide archive"))
    assert search["url"] == f"{SITE}/search"
    fields = {f.get("name") or f["type"]: f for f in search["fields"]}
    assert fields["station"]["selector"] == "#station" and fields["station"]["label"] == "Station"
    assert [o["text"] for o in fields["decade"]["options"]] == ["Eighties", "Nineties"]
    assert fields["submit"]["text"] == "Look up"
    empty = browser_cli("submit")
    assert empty.returncode == 1 and empty.stderr.startswith(
        "omnidr-skill browser submit: the form cannot be submitted yet: station: ")
    assert ok(browser_cli("fill", "#station", "118"))["value"] == "118"
    assert ok(browser_cli("fill", "decade", "Nineties"))["value"] == "1990s"  # by name, the option by its text
    assert ok(browser_cli("read"))["fields"][0]["value"] == "118"  # the form state outlives the call that set it
    results = ok(browser_cli("submit"))
    assert results["submitted"] == {"method": "GET", "action": f"{SITE}/results"}
    assert results["url"] == f"{SITE}/results?station=118&decade=1990s"
    assert "Station 118 in the 1990s: mean tide 1.42 m." in results["text"]
    assert "Visitor 42" in results["text"]  # the home page's cookie, set three processes ago
    gauge = ok(browser_cli("click", "Gauge record"))
    assert gauge["text"] == "Gauge 118 stands on pier 4."
    back = ok(browser_cli("back"))
    assert back["url"] == results["url"] and "mean tide 1.42 m" in ok(browser_cli("read"))["text"]
    fetched = ok(browser_cli("click", "Download the readings"))
    [saved] = fetched["downloads"]
    assert Path(saved["path"]) == tmp_path / "artifacts" / "readings-118.csv"
    assert Path(saved["path"]).read_text() == "date,tide_m\n1991-03-01,1.40\n1991-03-02,1.44\n"
    index = [json.loads(line) for line in (tmp_path / "artifacts" / "artifacts.jsonl").read_text().splitlines()]
    assert [(r["url"], r["via"]) for r in index] == [(f"{SITE}/files/readings-118.csv", "browser")]
    assert f"GET {SITE}/results?station=118&decade=1990s" in site.seen  # the query went through the proxy
    nothing = browser_cli("click", "Buy tickets")
    assert nothing.returncode == 1 and "nothing to click matches 'Buy tickets'" in nothing.stderr
    assert ok(browser_cli("close")) == {"closed": True}
    assert not (browser_cli.state / "browser.sock").exists()
    after = browser_cli("read")
    assert after.returncode == 1 and "no browser is open" in after.stderr


def test_a_browser_that_died_is_reported_in_one_line_and_open_starts_a_new_one(browser_cli):
    ok(browser_cli("open", f"{SITE}/"))
    sock = browser_cli.state / "browser.sock"
    pid = _daemon_pid(sock)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)  # the daemon this test started
    deadline = time.monotonic() + 30
    while _daemon_pid(sock) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    dead = browser_cli("read")
    assert dead.returncode == 1 and dead.stdout == ""
    assert dead.stderr.strip() == (
        f"omnidr-skill browser read: the browser is no longer running (it stopped or crashed; its log is "
        f"{browser_cli.state / 'browser.log'}); `browser open URL` starts a new one, without the old pages and cookies")
    again = ok(browser_cli("open", f"{SITE}/search"))
    assert again["title"] == "Search" and _daemon_pid(sock) not in (None, pid)
    web_pdf = ok(browser_cli("open", f"{SITE}/files/report.pdf"))  # Chromium shows a PDF in its own viewer
    assert web_pdf["text"] == "" and web_pdf["note"].startswith("this page is a file (application/pdf) whose text")
    bad = browser_cli("open", "file:///etc/passwd")
    assert bad.returncode == 1 and "only http:// and https:// URLs can be opened" in bad.stderr


def test_the_reference_agent_browses_in_process_with_the_same_tools(tmp_path, site, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", site.url)
    monkeypatch.setenv("HTTPS_PROXY", site.url)
    box = ToolBox(capability("multimodal", "short_answer"), str(DEMO / "none.mp4"), tmp_path / "report",
                  DEMO / "contract", ToolSettings(artifacts_dir=tmp_path / "artifacts"))
    try:
        assert box.call("browser_open", {"url": f"{SITE}/search"})["title"] == "Search"
        box.call("browser_fill", {"selector": "station", "value": "204"})
        page = box.call("browser_submit", {})
        assert "Station 204 in the 1980s: no record." in page["text"]  # the select kept its first option
        with pytest.raises(ToolError, match="no field matches 'depth'"):
            box.call("browser_fill", {"selector": "depth", "value": "3"})
        box.close()  # as the agent's run ends
        with pytest.raises(ToolError, match="no browser is open"):
            box.call("browser_read", {})
    finally:
        box.close()
