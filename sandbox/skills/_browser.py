"""The persistent browser: one Chromium that lives across `omnidr-skill browser ...` calls.

OpenDS-World's environment gives agents "persistent browser interaction" (paper 002, App. C.1.1), because much of
its evidence is reached only by interacting with a site: following links (the access type *hypermedia
transitions*), filling and submitting forms (*parameterized updates*, a GET form being a query string), or
downloading what a page offers (*artifact transfer*, App. B.4). Each `omnidr-skill` call is a separate process, so
the browser cannot live in it: the first `browser open` starts a background daemon (`main` below, in a
process of its own) that holds one headless Chromium (Debian's /usr/bin/chromium, OMNIDR_CHROMIUM to change
it, driven by Playwright through `executable_path`) with one browser context, so cookies, the current page, its
history and the form state persist from one call to the next. Later calls talk to the daemon over a Unix socket
in the skills' state folder (`browser.sock`, mode 0600), one JSON line each way. `browser close` stops it; it also
stops by itself after OMNIDR_BROWSER_IDLE_S seconds without a call (default 3,600). A daemon that died leaves a
socket nobody answers: the next call says so in one line and removes it, and the next `open` starts a new one.

The web, through the egress proxy only. Chromium is given the proxy the other skills use (HTTPS_PROXY, else
HTTP_PROXY, with NO_PROXY as its bypass list) and resolves no name itself. For HTTPS the sandbox's proxy
intercepts TLS with the run's own CA, which Chromium's certificate store (NSS) does not hold and which cannot be
added without NSS's tools. The browser context therefore ignores certificate errors, which is safe here: every
connection Chromium makes ends at the egress proxy, the one door out of the agent's network, and the proxy makes
the real TLS connection itself and verifies the site's certificate against the public CAs (its
`ssl_verify_upstream_trusted_ca`, sandbox/egress/_run.py). Nothing on the path can impersonate a site that the
proxy would not have caught. Chromium's own background traffic (updates, safe browsing, sync) is switched off, so
that network.jsonl holds the agent's requests only.

Files a page sends as downloads are saved into the artifact folder and indexed as `download get` does (`via`
browser), up to the same size cap.
"""

import argparse
import contextlib
import hashlib
import json
import os
import re
import select
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _artifacts

if TYPE_CHECKING:
    from playwright.sync_api import ProxySettings

SOCKET_FILE = "browser.sock"
LOG_FILE = "browser.log"
CHROMIUM = "/usr/bin/chromium"
IDLE_S = 3600.0
START_TIMEOUT_S = 90.0
CALL_TIMEOUT_S = 300.0
NAV_TIMEOUT_MS = 45_000
ACTION_TIMEOUT_MS = 15_000
NAV_START_S = 1.0
"""A click or a submit that navigates has sent its request within this time; one that has not changes the page in
place (or does nothing)."""
MAX_LINKS = 100
MAX_FIELDS = 60
LAUNCH_ARGS = [
    "--disable-dev-shm-usage",  # containers have a small /dev/shm
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-domain-reliability",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--mute-audio",
]
OPS = ("open", "click", "fill", "submit", "read", "back", "close")
DAEMON = "import sys; from sandbox.skills._browser import main; sys.exit(main())"
"""The daemon's command (`python -c`: `-m` would import this module twice, through the package first)."""


class BrowserError(RuntimeError):
    """A browser call that failed; the message says why and what to do next."""


def socket_path(state_dir: Path) -> Path:
    """`browser.sock` in the state folder; in the temporary folder (named by a digest of the state folder) when
    that path is too long for a Unix socket (108 bytes on Linux)."""
    path = state_dir / SOCKET_FILE
    if len(str(path).encode()) < 100:
        return path
    digest = hashlib.sha256(str(state_dir.resolve()).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"omnidr-browser-{digest}.sock"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    for line in text.splitlines():
        line = re.sub(r"^(Error|TimeoutError):\s*", "", line.strip())
        line = re.sub(r"^[A-Z]\w*\.\w+: ", "", line)  # Playwright's "Page.goto: " and the like
        if line and not line.startswith("="):
            return line
    return type(exc).__name__


# ---- the client (every `omnidr-skill browser` call) ----------------------------------------------------

class BrowserClient:
    """Talks to the daemon of one state folder; starts it on `open`."""

    def __init__(self, state_dir: Path, artifacts_dir: Path, max_bytes: int = _artifacts.MAX_DOWNLOAD_BYTES,
                 idle_s: float | None = None):
        self.state_dir = state_dir
        self.artifacts_dir = artifacts_dir
        self.max_bytes = max_bytes
        self.idle_s = idle_s if idle_s is not None else float(os.environ.get("OMNIDR_BROWSER_IDLE_S") or IDLE_S)
        self.socket = socket_path(state_dir)
        self.log = state_dir / LOG_FILE

    def _connect(self) -> tuple[socket.socket | None, bool]:
        """(connection, stale): None and False when there is no daemon, None and True when its socket is left
        from a daemon that died (the socket file is removed)."""
        if not self.socket.exists():
            return None, False
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(CALL_TIMEOUT_S)
        try:
            conn.connect(str(self.socket))
        except (ConnectionRefusedError, FileNotFoundError):
            conn.close()
            self.socket.unlink(missing_ok=True)
            return None, True
        return conn, False

    def _log_tail(self) -> str:
        try:
            lines = [ln for ln in self.log.read_text("utf-8", "replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        return lines[-1].strip()[:300] if lines else ""

    def _start(self) -> None:
        """Start the daemon and wait until it says it is ready (or why it is not)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        read_fd, write_fd = os.pipe()
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])  # the folder that holds the `sandbox` package
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        with open(self.log, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-c", DAEMON, "--socket", str(self.socket), "--artifacts",
                 str(self.artifacts_dir), "--max-bytes", str(self.max_bytes), "--idle-s", str(self.idle_s),
                 "--status-fd", str(write_fd)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(write_fd,), cwd=str(self.state_dir),
                env=env, start_new_session=True)
        os.close(write_fd)
        status = b""
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            while b"\n" not in status and time.monotonic() < deadline:
                ready, _w, _x = select.select([read_fd], [], [], 0.5)
                if ready:
                    chunk = os.read(read_fd, 4096)
                    if not chunk:
                        break  # the daemon closed its end without a word: it died
                    status += chunk
        finally:
            os.close(read_fd)
            proc.wait(timeout=30)  # the launcher exits once the daemon has forked away from it
        line = status.decode("utf-8", "replace").strip()
        if line == "ok":
            return
        if line.startswith("error:"):
            raise BrowserError(f"the browser could not start: {line[6:].strip()}")
        tail = self._log_tail()
        raise BrowserError("the browser could not start" + (f": {tail}" if tail else f" within {START_TIMEOUT_S:g} s"))

    def call(self, op: str, **args: Any) -> dict:
        if op not in OPS:
            raise BrowserError(f"no browser action {op!r}; the actions are {', '.join(OPS)}")
        conn, stale = self._connect()
        if conn is None:
            if op == "close":
                return {"closed": False, "note": "no browser was open"}
            if op != "open":
                if stale:
                    raise BrowserError(f"the browser is no longer running (it stopped or crashed; its log is "
                                       f"{self.log}); `browser open URL` starts a new one, without the old pages "
                                       f"and cookies")
                raise BrowserError("no browser is open: start one with `browser open URL`")
            self._start()
            conn, _stale = self._connect()
            if conn is None:
                raise BrowserError("the browser started but does not answer")
        with conn:
            try:
                conn.sendall(json.dumps({"op": op, "args": args}).encode() + b"\n")
                reply = _recv_line(conn)
            except TimeoutError:
                raise BrowserError(f"the browser did not answer `{op}` within {CALL_TIMEOUT_S:g} s") from None
            except OSError:
                reply = b""  # the daemon went away mid-call
        if not reply:
            raise BrowserError(f"the browser stopped while doing `{op}` (its log is {self.log}); `browser open URL` "
                               f"starts a new one")
        answer = json.loads(reply)
        if not answer.get("ok"):
            raise BrowserError(answer.get("error") or "the browser failed")
        return answer["result"]


def _recv_line(conn: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(1 << 16)
        if not chunk:
            break
        data += chunk
    return data.strip()


# ---- the daemon ------------------------------------------------------------------------------------------

VIEW_JS = r"""
([maxLinks, maxFields]) => {
  const clean = s => (s || '').replace(/\s+/g, ' ').trim();
  const visible = el => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  const unique = sel => { try { return document.querySelectorAll(sel).length === 1; } catch (e) { return false; } };
  const selectorOf = el => {
    const tag = el.tagName.toLowerCase();
    if (el.id && unique('#' + CSS.escape(el.id))) return '#' + CSS.escape(el.id);
    const name = el.getAttribute('name');
    if (name) {
      const s = `${tag}[name="${CSS.escape(name)}"]`;
      if (unique(s)) return s;
      const v = `${s}[value="${CSS.escape(el.getAttribute('value') || '')}"]`;
      if (unique(v)) return v;
    }
    const steps = [];
    for (let node = el; node && node !== document.body && node.nodeType === 1; node = node.parentElement) {
      if (node !== el && node.id && unique('#' + CSS.escape(node.id))) { steps.unshift('#' + CSS.escape(node.id)); return steps.join(' > '); }
      let i = 1;
      for (let sib = node.previousElementSibling; sib; sib = sib.previousElementSibling) if (sib.tagName === node.tagName) i++;
      steps.unshift(`${node.tagName.toLowerCase()}:nth-of-type(${i})`);
    }
    return ['body', ...steps].join(' > ');
  };
  const labelOf = el => clean((el.labels && el.labels.length && el.labels[0].innerText)
      || el.getAttribute('aria-label') || el.getAttribute('placeholder') || el.getAttribute('title') || '');
  const forms = [...document.forms];
  const links = [];
  let linksTotal = 0;
  for (const a of document.querySelectorAll('a[href]')) {
    if (!visible(a)) continue;
    linksTotal++;
    if (links.length >= maxLinks) continue;
    const img = a.querySelector('img[alt]');
    links.push({text: clean(a.innerText) || clean(a.getAttribute('aria-label') || a.title || (img && img.alt) || ''),
                href: a.href});
  }
  const fields = [];
  for (const el of document.querySelectorAll('input, select, textarea, button')) {
    const type = (el.getAttribute('type') || (el.tagName === 'BUTTON' ? 'submit' : el.tagName === 'INPUT' ? 'text' : el.tagName)).toLowerCase();
    if (type === 'hidden' || !visible(el) || fields.length >= maxFields) continue;
    const f = {selector: selectorOf(el), type};
    if (el.name) f.name = el.name;
    const label = labelOf(el);
    if (label) f.label = label;
    if (el.tagName === 'SELECT') {
      f.options = [...el.options].slice(0, 50).map(o => ({value: o.value, text: clean(o.text), selected: o.selected}));
    } else if (type === 'checkbox' || type === 'radio') {
      f.value = el.value; f.checked = el.checked;
    } else if (el.tagName === 'BUTTON' || ['submit', 'button', 'reset', 'image'].includes(type)) {
      f.text = clean(el.innerText || el.value);
    } else {
      f.value = el.value;
    }
    if (el.required) f.required = true;
    if (el.form) f.form = forms.indexOf(el.form);
    fields.push(f);
  }
  return {title: document.title, text: document.body ? document.body.innerText : '', links, linksTotal,
          forms: forms.map((f, i) => ({index: i, selector: selectorOf(f), method: (f.getAttribute('method') || 'get').toUpperCase(),
                                       action: f.action})),
          fields};
}
"""

FIND_JS = r"""
(target) => {
  const clean = s => (s || '').replace(/\s+/g, ' ').trim();
  const visible = el => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  const textOf = el => {
    const img = el.querySelector ? el.querySelector('img[alt]') : null;
    return clean(el.innerText || el.value || el.getAttribute('aria-label') || el.title || (img && img.alt) || '');
  };
  const els = [...document.querySelectorAll('a[href], button, input[type=submit], input[type=button], input[type=image], [role=button], [role=link], summary')].filter(visible);
  const low = target.toLowerCase();
  let hit = els.find(el => textOf(el) === target) || els.find(el => textOf(el).toLowerCase() === low)
         || els.find(el => el.href && (el.href === target || el.getAttribute('href') === target));
  if (!hit) {
    const partial = els.filter(el => textOf(el).toLowerCase().includes(low));
    if (partial.length === 1) hit = partial[0];
  }
  return hit || null;
}
"""

SUBMIT_JS = """f => { const b = [...f.elements].find(e => e.type === 'submit' || e.type === 'image');
                      if (f.requestSubmit) f.requestSubmit(b || undefined); else f.submit(); }"""


def proxy_settings(env: dict[str, str]) -> "ProxySettings | None":
    """Playwright's proxy option from the environment the other skills use."""
    server = next((env[k] for k in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy") if env.get(k)), None)
    if not server:
        return None
    from urllib.parse import urlsplit

    parts = urlsplit(server if "://" in server else f"http://{server}")
    out: ProxySettings = {"server": f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")}
    if parts.username:
        out["username"], out["password"] = parts.username, parts.password or ""
    bypass = env.get("NO_PROXY") or env.get("no_proxy")
    if bypass:
        out["bypass"] = bypass
    return out


class Session:
    """The daemon's browser: one Chromium, one context, a stack of pages (a link that opens a new tab pushes it;
    `back` on a tab without history closes it)."""

    def __init__(self, artifacts_dir: Path, max_bytes: int):
        from playwright.sync_api import sync_playwright

        self.artifacts_dir = artifacts_dir
        self.max_bytes = max_bytes
        self.pw = sync_playwright().start()
        path = os.environ.get("OMNIDR_CHROMIUM") or CHROMIUM
        try:
            self.browser = self.pw.chromium.launch(executable_path=path, headless=True, args=LAUNCH_ARGS,
                                                   proxy=proxy_settings(dict(os.environ)), timeout=60_000)
        except Exception:
            self.pw.stop()
            raise
        self.context = self.browser.new_context(ignore_https_errors=True, accept_downloads=True)
        self.context.set_default_timeout(ACTION_TIMEOUT_MS)
        self.context.set_default_navigation_timeout(NAV_TIMEOUT_MS)
        self.pages: list = []
        self.status: dict = {}
        self.forms: dict = {}  # page -> the form of the field last filled
        self.downloads: list = []
        self.context.on("page", self._adopt)
        self._new_page()

    def _new_page(self) -> None:
        page = self.context.new_page()
        if page not in self.pages:  # the context's page event has not adopted it yet
            self._adopt(page)

    def _adopt(self, page) -> None:
        if page in self.pages:
            return
        self.pages.append(page)

        def on_response(resp) -> None:
            if resp.request.is_navigation_request() and resp.frame == page.main_frame:
                self.status[page] = (resp.status, (resp.headers.get("content-type") or "").split(";")[0].strip())

        page.on("response", on_response)
        page.on("download", lambda download: self.downloads.append(download))

    @property
    def page(self):
        while self.pages and self.pages[-1].is_closed():
            self.pages.pop()
        if not self.pages:
            self._new_page()
        return self.pages[-1]

    def alive(self) -> bool:
        return self.browser.is_connected()

    def close(self) -> None:
        for step in (self.context.close, self.browser.close, self.pw.stop):
            with contextlib.suppress(Exception):
                step()

    # -- waiting for what an action started ------------------------------------------------------------
    def _settle(self, page, action) -> None:
        """Run `action`; when it starts a navigation (of this page, or a new tab), wait for the new page's load
        event; when it starts a download, for the download."""
        seen = {"request": False, "commit": False}
        pages_before, downloads_before = len(self.pages), len(self.downloads)

        def on_request(req) -> None:
            if req.is_navigation_request() and req.frame == page.main_frame:
                seen["request"] = True

        def on_nav(frame) -> None:
            if frame == page.main_frame:
                seen["commit"] = True

        page.on("request", on_request)
        page.on("framenavigated", on_nav)
        try:
            action()
            t0 = time.monotonic()

            def other() -> bool:
                return len(self.pages) > pages_before or len(self.downloads) > downloads_before

            while not (seen["request"] or seen["commit"] or other()) and time.monotonic() - t0 < NAV_START_S:
                page.wait_for_timeout(50)
            while seen["request"] and not seen["commit"] and not other() and \
                    time.monotonic() - t0 < NAV_TIMEOUT_MS / 1000:
                page.wait_for_timeout(100)
            target = self.pages[-1] if len(self.pages) > pages_before else page
            if seen["commit"] or target is not page:
                target.wait_for_load_state("load")
        finally:
            page.remove_listener("request", on_request)
            page.remove_listener("framenavigated", on_nav)

    def _saved_downloads(self) -> list[dict]:
        out = []
        while self.downloads:
            d = self.downloads.pop(0)
            failure = d.failure()
            if failure:
                out.append({"url": d.url, "error": f"the download failed: {failure}"})
                continue
            self.artifacts_dir.mkdir(parents=True, exist_ok=True)
            tmp = self.artifacts_dir / f".browser-{uuid.uuid4().hex}"
            d.save_as(tmp)
            try:
                record = _artifacts.store(self.artifacts_dir, tmp, d.url, "", d.suggested_filename or "download",
                                          self.max_bytes, via="browser")
            except _artifacts.ArtifactError as exc:
                out.append({"url": d.url, "error": str(exc)})
                continue
            out.append(record.model_dump(include={"path", "url", "content_type", "bytes", "sha256"}))
        return out

    # -- what a model sees ------------------------------------------------------------------------------
    def view(self, offset: int | None = None, max_chars: int | None = None) -> dict:
        page = self.page
        data = page.evaluate(VIEW_JS, [MAX_LINKS, MAX_FIELDS])
        text = re.sub(r"\n\s*\n+", "\n\n", data["text"] or "").strip()
        status, ctype = self.status.get(page, (None, ""))
        out: dict = {"url": page.url, "title": data["title"], "status": status,
                     **_artifacts.paged(text, offset, max_chars), "links": data["links"]}
        if ctype and not re.search(r"html|xml|text/|json", ctype):  # a PDF or an image shown by the browser itself
            out["note"] = (f"this page is a file ({ctype}) whose text the browser does not expose: `download get URL` "
                           f"saves it and `artifact read PATH` reads it")
        if data["linksTotal"] > len(data["links"]):
            out["links_total"] = data["linksTotal"]
        out.update(forms=data["forms"], fields=data["fields"])
        return out

    def _locate(self, page, selector: str):
        """A field or element by CSS selector, then by name, then by label text."""
        tries = [lambda: page.locator(selector), lambda: page.locator(f'[name="{_css_string(selector)}"]'),
                 lambda: page.get_by_label(selector, exact=True), lambda: page.get_by_placeholder(selector, exact=True)]
        for make in tries:
            try:
                loc = make()
                if loc.count():
                    return loc.first
            except Exception:  # not a valid selector of that kind: try the next
                continue
        return None

    # -- the actions ------------------------------------------------------------------------------------
    def handle(self, op: str, args: dict) -> dict:
        if op == "close":
            return {"closed": True}
        method = getattr(self, f"do_{op}", None)
        if method is None:
            raise BrowserError(f"no browser action {op!r}")
        result = method(**args)
        downloads = self._saved_downloads()
        if downloads:
            result["downloads"] = downloads
        return result

    def do_open(self, url: str) -> dict:
        if not re.match(r"^https?://", url, re.I):
            raise BrowserError("only http:// and https:// URLs can be opened")
        page = self.page
        try:
            page.goto(url, wait_until="load")
        except Exception as exc:
            message = _first_line(exc)
            if "Download is starting" in message:
                page.wait_for_timeout(200)
            elif "Timeout" in message:
                pass  # what has loaded is shown
            else:
                raise BrowserError(f"could not open {url}: {message}") from None
        return self.view()

    def do_read(self, offset: int | None = None, max_chars: int | None = None) -> dict:
        return self.view(offset, max_chars)

    def do_click(self, target: str) -> dict:
        page = self.page
        element = page.evaluate_handle(FIND_JS, target).as_element()
        clickable: Any = element if element is not None else self._locate(page, target)
        if clickable is None:
            raise BrowserError(f"nothing to click matches {target!r}: give a link's or button's text as `browser "
                               f"read` lists it, its URL, or a CSS selector")
        self._settle(page, lambda: clickable.click())
        return self.view()

    def do_fill(self, selector: str, value: str) -> dict:
        page = self.page
        field = self._locate(page, selector)
        if field is None:
            raise BrowserError(f"no field matches {selector!r}: give a selector as `browser read` lists it under "
                               f"fields, a field's name or its label")
        tag, kind = field.evaluate("e => [e.tagName.toLowerCase(), (e.type || '').toLowerCase()]")
        if tag == "select":
            try:
                field.select_option(value=value, timeout=2000)
            except Exception:
                try:
                    field.select_option(label=value, timeout=2000)
                except Exception:
                    options = field.evaluate("e => [...e.options].map(o => o.value + ' (' + o.text.trim() + ')')")
                    raise BrowserError(f"{selector!r} has no option {value!r}; its options are "
                                       f"{', '.join(options[:30])}") from None
        elif kind in ("checkbox", "radio"):
            if value.strip().lower() in ("", "on", "true", "yes", "1", "checked"):
                field.check()
            else:
                field.uncheck()
        elif tag in ("input", "textarea") or field.evaluate("e => e.isContentEditable"):
            field.fill(value)
        else:
            raise BrowserError(f"{selector!r} is a <{tag}>, not a form field")
        self.forms[page] = field.evaluate_handle("e => e.form")
        now = field.evaluate("e => (e.type === 'checkbox' || e.type === 'radio') ? e.checked : e.value")
        return {"url": page.url, "filled": selector, "value": now}

    def do_submit(self, selector: str | None = None) -> dict:
        page = self.page
        button = None
        if selector:
            element = self._locate(page, selector)
            if element is None:
                raise BrowserError(f"nothing matches {selector!r}; give a form, a field in it or its submit button")
            tag, kind = element.evaluate("e => [e.tagName.toLowerCase(), (e.type || '').toLowerCase()]")
            if tag in ("button", "input") and kind in ("submit", "image"):
                button = element
            form = element.element_handle().evaluate_handle("e => e.tagName === 'FORM' ? e : e.form").as_element()
            if form is None:
                raise BrowserError(f"{selector!r} is in no form")
        else:
            form = self._last_form(page) or page.evaluate_handle("() => document.forms[0] || null").as_element()
            if form is None:
                raise BrowserError("the page has no form to submit")
        invalid = form.evaluate("f => [...f.elements].filter(e => e.willValidate && !e.checkValidity())"
                                ".map(e => (e.name || e.id || e.tagName.toLowerCase()) + ': ' + e.validationMessage)")
        if invalid:
            raise BrowserError("the form cannot be submitted yet: " + "; ".join(invalid) + " (fill those fields first)")
        method, action = form.evaluate("f => [(f.getAttribute('method') || 'get').toUpperCase(), f.action]")
        self._settle(page, (lambda: button.click()) if button is not None else (lambda: form.evaluate(SUBMIT_JS)))
        return {"submitted": {"method": method, "action": action}, **self.view()}

    def _last_form(self, page):
        """The form of the field last filled on this page, while it is still in the page."""
        last = self.forms.get(page)
        try:
            form = last.as_element() if last is not None else None
            return form if form is not None and form.evaluate("f => f.isConnected") else None
        except Exception:  # the page has navigated since: the handle is gone
            return None

    def do_back(self) -> dict:
        page = self.page
        before = page.url
        response = page.go_back(wait_until="load")
        if response is None and page.url == before:
            if len(self.pages) > 1:
                page.close()
                return {"note": "the tab had no earlier page: it was closed, back to the tab that opened it",
                        **self.view()}
            raise BrowserError("there is no earlier page to go back to")
        return self.view()


def _css_string(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _report(fd: int | None, line: str) -> None:
    if fd is None:
        return
    with contextlib.suppress(OSError):
        os.write(fd, (line.replace("\n", " ") + "\n").encode())
        os.close(fd)


def serve(sock: Path, artifacts_dir: Path, max_bytes: int, idle_s: float, status_fd: int | None = None) -> int:
    """The daemon's loop: start Chromium, listen, answer one request a connection, until `close`, the idle
    timeout or the browser's death."""
    try:
        session = Session(artifacts_dir, max_bytes)
    except Exception as exc:
        print(f"browser daemon: Chromium did not start: {exc}", file=sys.stderr, flush=True)
        _report(status_fd, f"error: {_first_line(exc)}")
        return 1
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.unlink(missing_ok=True)
    server.bind(str(sock))
    os.chmod(sock, 0o600)
    server.listen(8)
    server.settimeout(idle_s)
    print(f"browser daemon {os.getpid()}: Chromium {session.browser.version} ready on {sock}", file=sys.stderr,
          flush=True)
    _report(status_fd, "ok")
    gone = False
    try:
        while True:
            try:
                conn, _addr = server.accept()
            except TimeoutError:
                print(f"browser daemon: idle for {idle_s:g} s, closing", file=sys.stderr, flush=True)
                break
            with conn:
                conn.settimeout(CALL_TIMEOUT_S)
                try:
                    line = _recv_line(conn)
                except OSError:
                    continue
                if not line:
                    continue
                op, stop = "?", False
                try:
                    request = json.loads(line)
                    op = request.get("op", "?")
                    reply = {"ok": True, "result": session.handle(op, request.get("args") or {})}
                    stop = op == "close"
                except BrowserError as exc:
                    reply = {"ok": False, "error": str(exc)}
                except Exception as exc:
                    if not session.alive():
                        reply = {"ok": False, "error": f"the browser crashed ({_first_line(exc)}); it is closed: "
                                                       "`browser open URL` starts a new one"}
                        stop = True
                    else:
                        reply = {"ok": False, "error": _first_line(exc)}
                    print(f"browser daemon: {op}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                if stop:  # no call may reach a daemon that is going: the socket goes before the reply
                    server.close()
                    with contextlib.suppress(OSError):
                        sock.unlink()
                    gone = True
                with contextlib.suppress(OSError):
                    conn.sendall(json.dumps(reply, ensure_ascii=False).encode() + b"\n")
                if stop:
                    break
    finally:
        if not gone:  # (a socket a new daemon made at the same path after the reply is not ours to remove)
            server.close()
            with contextlib.suppress(OSError):
                sock.unlink()
        session.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="omnidr-browser-daemon", description="The browser daemon.")
    p.add_argument("--socket", type=Path, required=True)
    p.add_argument("--artifacts", type=Path, required=True)
    p.add_argument("--max-bytes", type=int, default=_artifacts.MAX_DOWNLOAD_BYTES)
    p.add_argument("--idle-s", type=float, default=IDLE_S)
    p.add_argument("--status-fd", type=int, default=None, help="write `ok` or `error: ...` here once, then close it")
    args = p.parse_args(argv)
    if args.status_fd is not None and os.fork() > 0:
        os._exit(0)  # the launcher returns at once; the daemon goes on detached (no zombie in its caller)
    return serve(args.socket, args.artifacts, args.max_bytes, args.idle_s, args.status_fd)


if __name__ == "__main__":
    sys.exit(main())
