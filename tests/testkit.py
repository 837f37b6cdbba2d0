"""Helpers shared by the test modules (import them from here, never from conftest)."""

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "snapshots" / "demo"
DEMO_OPENDS = ROOT / "snapshots" / "demo-opends"  # the OpenDS-World demo (short answers)


def run_cli(*args: str, cwd: Path = ROOT, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `omnidr ARGS` in a subprocess, exactly as a user would (exit code, stdout, stderr); `env`
    adds to (or, with a None value, removes from) the environment."""
    full = dict(os.environ)
    for k, v in (env or {}).items():
        if v is None:
            full.pop(k, None)
        else:
            full[k] = v
    return subprocess.run(
        [sys.executable, "-m", "omnidr.cli", *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout,
        env=full,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def said(stderr: str) -> list[str]:
    """The lines a command wrote to stderr, less the image builder's warning that Debian's archive moved on past
    an image's package lock (printed by every command that builds images, on the day a security fix ships; its
    own tests are in tests/images/test_locks.py)."""
    return [line for line in stderr.strip().splitlines()
            if not (line.startswith("warning: images/") and "the archive moved on" in line)]


def scripted_on_loopback(*extra: str) -> tuple[subprocess.Popen, str]:
    """The scripted model (`python -m sandbox.scripted_model`, `extra` its options) on the host's loopback, once it
    accepts connections: (its process, its base URL ending in /v1). The caller terminates it."""
    import time

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "sandbox.scripted_model", "--host", "127.0.0.1", "--port", str(port),
                             *extra], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}/v1"
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, "the scripted model did not start"
            time.sleep(0.1)


def session_pids(sid: int) -> list[int]:
    """Every live process of session `sid`: a command started with a session of its own (`start_new_session`) and
    all it started, however deep, e.g. a `ray start` and the Ray processes it leaves running. Found by id, so a
    test stops its own processes and never another test's of the same name (`ray stop` would stop them all)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # a zombie is gone, only not yet reaped
            pids.append(int(entry.name))
    return pids


def kill_session(sid: int, timeout_s: float = 10.0) -> list[int]:
    """SIGKILL every process of session `sid`, and wait until none is left; returns those still there then."""
    import signal
    import time

    deadline = time.monotonic() + timeout_s
    while left := session_pids(sid):
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            return left
        time.sleep(0.2)
    return []


def edit_json(path: Path, change) -> None:
    """Load a JSON file, let `change(data)` modify it, write it back."""
    data = json.loads(path.read_text("utf-8"))
    change(data)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), "utf-8")


def first_task(snapshot: Path) -> str:
    return json.loads((snapshot / "snapshot.json").read_text("utf-8"))["tasks"][0]


def make_mp4(path: Path, seconds: float = 2.0, color: str = "blue") -> Path:
    """A small real mp4 with video and audio, made by ffmpeg."""
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"color=c={color}:s=160x90:r=10:d={seconds}",
         "-f", "lavfi", "-i", f"sine=frequency=440:duration={seconds}", "-c:v", "libx264", "-preset", "ultrafast",
         "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", str(path)],
        check=True,
    )
    return path


def follow_links(page_file: Path, selector: str, **expressions: str) -> tuple[dict, list[list[str]], dict[str, str]]:
    """Open `page_file` in Chromium as a user would (file://): evaluate each JavaScript expression
    given by name, collect the [text, href] of the links matching `selector`, and follow each of them.
    Returns (values by name, links, body text of each followed link by its text)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
        page = browser.new_page()
        page.goto(Path(page_file).resolve().as_uri())
        values = {name: page.evaluate(expression) for name, expression in expressions.items()}
        links = page.eval_on_selector_all(selector, "as => as.map(a => [a.textContent, a.href])")
        opened = {}
        for label, href in links:
            page.goto(href)
            opened[label] = page.inner_text("body")
        browser.close()
    return values, links, opened


Page = tuple[int, dict[str, str], bytes]


class ProxyWeb(ThreadingHTTPServer):
    """A loopback forward proxy standing in for the egress proxy and the web behind it: it answers only proxy
    requests (absolute URIs, any made-up host) from `pages`, by path: a (status, headers, body) or a function of
    (query, request headers) giving one; and it records every request line, so a test sees what went through
    the proxy. Use as a context manager; `url` is the proxy's address."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _ProxyWebHandler)
        self.pages: dict[str, Page | Callable[[dict[str, list[str]], dict[str, str]], Page]] = {}
        self.seen: list[str] = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> "ProxyWeb":
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()


class _ProxyWebHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def do_GET(self):
        server: ProxyWeb = self.server  # type: ignore[assignment]
        server.seen.append(f"{self.command} {self.path}")
        if not self.path.startswith(("http://", "https://")):  # only a proxy is asked for absolute URIs
            self.send_error(400, "not a proxy request")
            return
        parts = urlsplit(self.path)
        page = server.pages.get(unquote(parts.path), (404, {"Content-Type": "text/plain"}, b"not found"))
        status, headers, body = page(parse_qs(parts.query), dict(self.headers)) if callable(page) else page
        self.send_response(status)
        for k, v in headers.items():
            if k != "X-No-Length":
                self.send_header(k, v)
        if "Content-Length" not in headers and "X-No-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def system(harness: str, capability: str = "full", url: str | None = None, model: str = "scripted-demo",
           key_env: str | None = None, family: str | None = None, budget=None, **web):
    """A `SystemConfig` of `harness` on the model `model` at `url` (an API of `family`; None: the harness's own), or on
    the offline scripted model without `url`; `web` are `WebPolicy` fields."""
    from omnidr.harness import Endpoint, SystemConfig, SystemSpec, WebPolicy

    endpoint = Endpoint.served(model, url, key_env, family) if url else Endpoint.scripted(name=model)  # type: ignore[arg-type]
    return SystemConfig(agent=SystemSpec(harness=harness, capability=capability, model=endpoint),
                        budget=budget, budget_label="default" if budget is None else "test", web=WebPolicy(**web))
