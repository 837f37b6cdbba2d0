"""Chromium driven by Playwright, hardened for hostile reports.

The report folder is served under a private origin by a request interceptor: nothing is read
from outside the folder, and every other request (the web, other local files, WebSockets) is
refused and logged. Probes read the page from an isolated JavaScript world (a CDP execution
context with its own globals), so a report that redefines DOM getters or globals cannot fake
what the probes measure. Every call into the page is bounded; a page that stops answering is
marked unresponsive and every later probe fails with that reason instead of hanging.
"""

import asyncio
import json
import mimetypes
import os
import shutil
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from playwright.async_api import (
    Browser,
    BrowserContext,
    CDPSession,
    Page,
    Playwright,
    PlaywrightContextManager,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout
from pydantic import BaseModel, ConfigDict, Field

from omnidr.errors import UserError

from ._models import BlockedRequest, PageFault

ORIGIN = "http://report.omnidr.test"
"""Private origin the report folder is served under; it never resolves to a network host."""

DEFAULT_CHROMIUM = "/usr/bin/chromium"
FIXED_TIME = "2025-01-01T00:00:00Z"
MAX_LISTED = 50
MAX_BLOCKED_LISTED = 100
RANGE_CHUNK = 4 << 20  # bytes served per range request
PROGRAMMATIC = frozenset({"fetch", "xhr", "websocket", "eventsource", "ping", "beacon"})

T = TypeVar("T")

mimetypes.add_type("text/javascript", ".js")
mimetypes.add_type("text/javascript", ".mjs")
mimetypes.add_type("video/mp4", ".mp4")
mimetypes.add_type("video/webm", ".webm")
mimetypes.add_type("image/webp", ".webp")
mimetypes.add_type("image/svg+xml", ".svg")


class ProbeLimits(BaseModel):
    """Bounds on what a report may cost. They only bound failures: a well-behaved report never
    comes near them, so they do not decide its outcomes."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    load_timeout_s: float = Field(20.0, gt=0, description="Page load (the load event), seconds.")
    step_timeout_s: float = Field(8.0, gt=0, description="One call into the page (an evaluation, a click), seconds.")
    media_wait_s: float = Field(5.0, gt=0, description="Waiting for images to decode and videos to load metadata, seconds.")
    seek_wait_s: float = Field(5.0, gt=0, description="Waiting for the source video to finish a seek after a click, seconds.")
    play_wait_s: float = Field(5.0, gt=0, description="Waiting for the source video's time to advance after play(), seconds.")
    report_timeout_s: float = Field(120.0, gt=0, description="Everything the probes do on one report, seconds.")
    max_dom_nodes: int = Field(100_000, ge=100, description="Elements above which the DOM counts as abusive.")
    max_data_chars: int = Field(20_000_000, ge=1000, description="Largest window.DATA accepted, characters of JSON.")
    max_file_bytes: int = Field(64 << 20, ge=1 << 20, description="Largest file served whole (range requests are unbounded).")
    max_screenshot_px: int = Field(12_000, ge=800, description="Screenshots taller than this are cut, pixels.")
    max_citations: int = Field(2_000, ge=1, description="Inline citations clicked at most.")


def chromium_path() -> str:
    """The system Chromium Playwright drives (`OMNIDR_CHROMIUM` overrides /usr/bin/chromium)."""
    path = os.environ.get("OMNIDR_CHROMIUM", DEFAULT_CHROMIUM)
    if not (Path(path).is_file() and os.access(path, os.X_OK)) and shutil.which(path) is None:
        raise UserError(
            f"Chromium not found at {path}; install Debian's chromium (`make setup`) or set OMNIDR_CHROMIUM to its path"
        )
    return path


LAUNCH_ARGS = [
    "--host-resolver-rules=MAP * ~NOTFOUND",  # no name resolves: nothing un-intercepted reaches a host
    "--proxy-server=http://127.0.0.1:9",  # and nothing un-intercepted reaches an address either
    "--proxy-bypass-list=<-loopback>",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--autoplay-policy=no-user-gesture-required",
    "--mute-audio",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-domain-reliability",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--font-render-hinting=none",
]

INIT_SCRIPT = """
(() => {
  // Same report, same page: a seeded Math.random (the clock is fixed by Playwright).
  let s = 0x2545f491;
  Math.random = function () {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    return s / 4294967296;
  };
})();
"""


SANDBOX_ENV = "OMNIDR_CHROMIUM_SANDBOX"
"""`0` turns Chromium's own sandbox off; by default it is used wherever it can start."""


def sandbox_refusal() -> str | None:
    """Why Chromium's own sandbox is known not to start here, before trying: it refuses to run as root, and
    `OMNIDR_CHROMIUM_SANDBOX=0` turns it off. None: try it."""
    if os.environ.get(SANDBOX_ENV, "1") == "0":
        return f"{SANDBOX_ENV}=0"
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return "Chromium runs as root, where its sandbox does not start"
    return None


class ChromiumBrowser:
    """One Chromium process for many reports; each report gets its own context (see `ReportPage`).

    Chromium runs with its own sandbox (renderers in their own user, PID and network namespaces) wherever that
    starts: not as root, and not where the kernel or a seccomp profile forbids unprivileged user namespaces (Docker's
    default profile does; the evaluator image's containers use a profile that allows them, see
    `omnidr/evaluation/seccomp.json`). Where it cannot start, the browser runs without it, and `sandboxed` and
    `sandbox_note` say so (recorded in each probe session)."""

    def __init__(self) -> None:
        self._pw_cm: PlaywrightContextManager | None = None
        self._pw: Playwright | None = None
        self._browser: Browser | None = None
        self.version = ""
        self.sandboxed = False
        self.sandbox_note: str | None = None

    async def __aenter__(self) -> "ChromiumBrowser":
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def start(self) -> None:
        path = chromium_path()
        self._pw_cm = async_playwright()
        self._pw = await self._pw_cm.__aenter__()
        refusal = sandbox_refusal()
        try:
            if refusal is None:
                try:
                    self._browser = await self._pw.chromium.launch(
                        executable_path=path, headless=True, args=LAUNCH_ARGS, timeout=60_000, chromium_sandbox=True
                    )
                except PlaywrightError as exc:  # e.g. "No usable sandbox!": no user namespaces here
                    refusal = next((line.split("] ", 1)[-1] for line in str(exc).splitlines() if "sandbox" in line.lower()),
                                   "Chromium did not start with its sandbox")[:200]
            if self._browser is None:
                self._browser = await self._pw.chromium.launch(
                    executable_path=path, headless=True, args=LAUNCH_ARGS, timeout=60_000
                )
        except PlaywrightError as exc:
            await self.close()
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UserError(f"Chromium at {path} did not start under Playwright: {first}") from None
        self.version = self._browser.version
        self.sandboxed, self.sandbox_note = refusal is None, refusal

    async def restart(self) -> None:
        """Replace a browser that no longer answers."""
        await self.close()
        await self.start()

    async def close(self) -> None:
        if self._browser is not None:
            try:
                await asyncio.wait_for(self._browser.close(), 15)
            except (TimeoutError, PlaywrightError):
                pass
            self._browser = None
        if self._pw_cm is not None:
            try:
                await asyncio.wait_for(self._pw_cm.__aexit__(None, None, None), 15)
            except (TimeoutError, PlaywrightError):
                pass
            self._pw_cm = None
            self._pw = None

    async def new_context(self):
        assert self._browser is not None, "browser not started"
        return await self._browser.new_context(
            viewport={"width": 1280, "height": 800},
            device_scale_factor=1,
            locale="en-US",
            timezone_id="UTC",
            color_scheme="light",
            reduced_motion="reduce",
            service_workers="block",
            accept_downloads=False,
        )


class PageUnusable(Exception):
    """The page stopped answering (or crashed); every later probe fails with this reason."""


class PageCallError(Exception):
    """One call into the page failed (an exception in the page's context, a detached element, ...)."""


class ReportPage:
    """One report in one browser context: serving, logging, bounded calls into the page."""

    def __init__(self, browser: ChromiumBrowser, report_dir: Path, entry: str, limits: ProbeLimits):
        self.browser = browser
        self.root = Path(report_dir).resolve()
        self.entry = entry
        self.entry_url = f"{ORIGIN}/{entry}"
        self.limits = limits
        self.context: BrowserContext | None = None
        self.page: Page | None = None
        self._cdp: CDPSession | None = None
        self._world: int | None = None
        self.loaded = False  # the page reached its load event
        self._entered = False  # the entry page was requested once; later top-level navigations are refused
        self.responsive = True
        self.unusable_reason: str | None = None
        self.console_errors: list[str] = []
        self.console_total = 0
        self.faults: list[PageFault] = []
        self.blocked: list[BlockedRequest] = []
        self.blocked_total = 0
        self.served: dict[str, int] = {}  # path relative to the report folder -> last status
        self.missing: list[str] = []  # local paths requested but absent (or refused)

    # ---------------------------------------------------------------- recording

    def fault(self, kind: str, detail: str) -> None:
        if len(self.faults) < MAX_LISTED:
            self.faults.append(PageFault(kind=kind, detail=detail[:300]))

    def _console(self, msg) -> None:
        if msg.type != "error":
            return
        text = msg.text or ""
        if text.startswith("Failed to load resource"):
            return  # refused or missing resources are recorded by the interceptor, not as script errors
        self._error(f"console.error: {text}")

    def _error(self, text: str) -> None:
        self.console_total += 1
        if len(self.console_errors) < MAX_LISTED:
            self.console_errors.append(text[:300])

    def _dialog(self, dialog) -> None:
        self.fault("dialog", f"{dialog.type}: {dialog.message}")
        asyncio.ensure_future(self._dismiss(dialog))

    @staticmethod
    async def _dismiss(dialog) -> None:
        try:
            await dialog.dismiss()
        except PlaywrightError:
            pass

    def _popup(self, page) -> None:
        self.fault("popup", f"the report opened a window ({page.url[:200]})")
        asyncio.ensure_future(self._close_quietly(page))

    @staticmethod
    async def _close_quietly(page) -> None:
        try:
            await page.close(run_before_unload=False)
        except PlaywrightError:
            pass

    def _crash(self, *_args) -> None:
        self.fault("crash", "the page's renderer process crashed")
        self._unusable("the page crashed")

    def _unusable(self, reason: str) -> None:
        if self.responsive:
            self.responsive = False
            self.unusable_reason = reason

    # ---------------------------------------------------------------- serving

    def _block(self, url: str, resource_type: str) -> None:
        self.blocked_total += 1
        if len(self.blocked) < MAX_BLOCKED_LISTED:
            self.blocked.append(BlockedRequest(url=url[:300], resource_type=resource_type))
        if resource_type in PROGRAMMATIC:
            self.fault("network", f"{resource_type} request to {url[:200]} refused")

    def local_path(self, url: str) -> Path | None:
        """The file a URL under the private origin maps to, or None if it leaves the folder."""
        if not url.startswith(ORIGIN + "/"):
            return None
        rel = unquote(urlsplit(url).path).lstrip("/")
        if "\x00" in rel:
            return None
        path = (self.root / rel).resolve()
        if path != self.root and self.root not in path.parents:
            return None
        return path

    async def _route(self, route) -> None:
        request = route.request
        url = request.url
        try:
            try:
                top = request.is_navigation_request() and request.frame.parent_frame is None
            except PlaywrightError:  # a request without a frame (never a top-level navigation)
                top = False
            if top and (self._entered or url != self.entry_url):
                # A 204 answer to a navigation leaves the current document in place (an aborted
                # navigation would replace it with an error page).
                self.fault("navigation", f"the report tried to navigate to {url[:200]}")
                if not url.startswith(ORIGIN + "/"):
                    self._block(url, request.resource_type)
                await route.fulfill(status=204, body=b"")
                return
            if top:
                self._entered = True  # the one allowed top-level load: the entry page itself
            if not url.startswith(ORIGIN + "/"):
                self._block(url, request.resource_type)
                await route.abort("blockedbyclient")
                return
            await self._serve(route, request, url)
        except PlaywrightError:
            pass  # the page or context went away while answering
        except OSError:
            try:
                await route.fulfill(status=500, body=b"")  # the file changed or vanished under us
            except PlaywrightError:
                pass

    async def _serve(self, route, request, url: str) -> None:
        path = self.local_path(url)
        rel = unquote(urlsplit(url).path).lstrip("/")
        if request.method not in ("GET", "HEAD"):
            self.served[rel] = 405
            await route.fulfill(status=405, body=b"")
            return
        if path is None or not path.is_file():
            self.served[rel] = 404
            if len(self.missing) < MAX_LISTED:
                self.missing.append(rel)
            await route.fulfill(status=404, body=b"", headers={"Content-Type": "text/plain"})
            return
        size = path.stat().st_size
        ctype = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        headers = {"Content-Type": ctype, "Accept-Ranges": "bytes", "Cache-Control": "no-store"}
        rng = request.headers.get("range", "")
        if rng.startswith("bytes=") and size > 0:
            start, end = _parse_range(rng[6:], size)
            if start is None:
                self.served[rel] = 416
                await route.fulfill(status=416, body=b"", headers={"Content-Range": f"bytes */{size}"})
                return
            end = min(end, start + RANGE_CHUNK - 1)
            body = await asyncio.to_thread(_read_range, path, start, end - start + 1)
            self.served[rel] = 206
            await route.fulfill(status=206, body=body,
                                headers={**headers, "Content-Range": f"bytes {start}-{end}/{size}"})
            return
        if size > self.limits.max_file_bytes:
            self.served[rel] = 413
            self.fault("oversize", f"{rel} is {size} bytes, above the {self.limits.max_file_bytes}-byte limit")
            await route.fulfill(status=413, body=b"")
            return
        body = await asyncio.to_thread(path.read_bytes)
        self.served[rel] = 200
        await route.fulfill(status=200, body=body, headers=headers)

    async def _websocket(self, ws) -> None:
        self._block(ws.url, "websocket")
        try:
            await ws.close(code=1008, reason="no network in the evaluator")
        except PlaywrightError:
            pass

    # ---------------------------------------------------------------- life cycle

    async def open(self) -> None:
        """Create the context and load the report; a load that hangs or fails is recorded, not raised."""
        self.context = await self.browser.new_context()
        await self.context.add_init_script(INIT_SCRIPT)
        await self.context.clock.set_fixed_time(FIXED_TIME)
        await self.context.route("**/*", self._route)
        await self.context.route_web_socket("**/*", self._websocket)
        self.context.on("page", self._popup_if_new)
        self.page = await self.context.new_page()
        page = self.page
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self._error(f"uncaught: {exc}"))
        page.on("dialog", self._dialog)
        page.on("crash", self._crash)
        page.set_default_timeout(self.limits.step_timeout_s * 1000)
        load_s = self.limits.load_timeout_s
        try:
            # Wait for the commit only: Playwright's own load wait can be held up by navigations the
            # report starts (which are refused); the load event is awaited from the isolated world.
            await asyncio.wait_for(page.goto(self.entry_url, wait_until="commit", timeout=load_s * 1000), load_s + 5)
        except (TimeoutError, PlaywrightTimeout):
            self.fault("timeout", f"the page was not served within {load_s:g} s")
            self._unusable("the report page could not be opened")
            return
        except PlaywrightError as exc:
            self.fault("crash" if "crash" in str(exc).lower() else "timeout", f"loading failed: {_first_line(exc)}")
            self._unusable(f"the report page could not be opened: {_first_line(exc)}")
            return
        try:
            await self._open_world()
            wait = f"""new Promise((r) => {{
              if (document.readyState === 'complete') return r(true);
              window.addEventListener('load', () => r(true), {{once: true}});
              setTimeout(() => r(document.readyState === 'complete'), {int(load_s * 1000)});
            }})"""
            self.loaded = bool(await self.iso(wait, "waiting for the load event", load_s + self.limits.step_timeout_s))
            if not self.loaded:
                self.fault("timeout", f"the page did not finish loading within {load_s:g} s")
        except PageCallError as exc:
            self.fault("timeout", f"the load event could not be awaited: {exc}")
        except PageUnusable:
            pass

    def _popup_if_new(self, page) -> None:
        if self.page is not None and page is not self.page:
            self._popup(page)

    async def _open_world(self) -> None:
        assert self.context is not None and self.page is not None
        t = self.limits.step_timeout_s
        try:
            self._cdp = await asyncio.wait_for(self.context.new_cdp_session(self.page), t)
            tree = await asyncio.wait_for(self._cdp.send("Page.getFrameTree"), t)
            frame_id = tree["frameTree"]["frame"]["id"]
            world = await asyncio.wait_for(
                self._cdp.send("Page.createIsolatedWorld", {"frameId": frame_id, "worldName": "omnidr-probes"}), t
            )
            self._world = world["executionContextId"]
            await self.iso("1", what="a first call into the page")
        except (TimeoutError, PlaywrightTimeout):
            self.fault("unresponsive", "the page did not answer after loading")
            self._unusable("the page stopped answering after load (a script that never yields?)")
            raise PageUnusable(self.unusable_reason) from None
        except PlaywrightError as exc:
            self._unusable(f"the page could not be inspected: {_first_line(exc)}")
            raise PageUnusable(self.unusable_reason) from None

    async def close(self) -> None:
        if self.context is None:
            return
        try:
            await asyncio.wait_for(self.context.unroute_all(behavior="ignoreErrors"), 5)
        except (TimeoutError, PlaywrightError):
            pass
        try:
            await asyncio.wait_for(self.context.close(), 10)
        except (TimeoutError, PlaywrightError):
            await self.browser.restart()  # the context would not close: start a clean browser
        self.context = None

    # ---------------------------------------------------------------- bounded calls

    def check(self) -> None:
        if not self.responsive:
            raise PageUnusable(self.unusable_reason or "the page is not usable")

    async def bounded(self, what: str, awaitable: Awaitable[T], timeout_s: float | None = None) -> T:
        """Await a call into the page; a timeout marks the page unresponsive."""
        self.check()
        limit = timeout_s if timeout_s is not None else self.limits.step_timeout_s
        try:
            return await asyncio.wait_for(awaitable, limit)
        except (TimeoutError, PlaywrightTimeout):
            if await self._alive():
                raise PageCallError(f"{what} did not finish within {limit:g} s") from None
            self.fault("unresponsive", f"{what} timed out after {limit:g} s and the page stopped answering")
            self._unusable(f"the page stopped answering during {what}")
            raise PageUnusable(self.unusable_reason) from None
        except PlaywrightError as exc:
            if not self.responsive:
                raise PageUnusable(self.unusable_reason) from None
            raise PageCallError(f"{what}: {_first_line(exc)}") from None

    async def _alive(self) -> bool:
        if self._cdp is None or self._world is None or not self.responsive:
            return False
        try:
            r = await asyncio.wait_for(
                self._cdp.send("Runtime.evaluate", {"expression": "1", "contextId": self._world, "returnByValue": True}), 2
            )
            return r.get("result", {}).get("value") == 1
        except (TimeoutError, PlaywrightError):
            return False

    async def iso(self, expression: str, what: str = "an inspection", timeout_s: float | None = None) -> Any:
        """Evaluate an expression (awaiting a returned promise) in the isolated world; JSON value back."""
        self.check()
        if self._cdp is None or self._world is None:
            raise PageUnusable(self.unusable_reason or "the page could not be inspected")
        params = {"expression": expression, "contextId": self._world, "returnByValue": True, "awaitPromise": True}
        result = await self.bounded(what, self._cdp.send("Runtime.evaluate", params), timeout_s)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text", "exception")
            raise PageCallError(f"{what}: {text.splitlines()[0][:200]}")
        return result.get("result", {}).get("value")

    async def call(self, function: str, arg: Any = None, what: str = "an inspection", timeout_s: float | None = None) -> Any:
        """Call a JavaScript function source with one JSON argument in the isolated world."""
        return await self.iso(f"({function})({json.dumps(arg)})", what, timeout_s)

    async def page_data(self) -> tuple[str | None, str | None]:
        """`JSON.stringify(window.DATA)` from the page's own world: (json, problem)."""
        assert self.page is not None
        script = """(limit) => {
          if (typeof window.DATA === 'undefined') return {missing: true};
          let s;
          try { s = JSON.stringify(window.DATA); } catch (e) { return {error: String(e).slice(0, 200)}; }
          if (typeof s !== 'string') return {error: 'window.DATA is not serialisable'};
          if (s.length > limit) return {tooLarge: s.length};
          return {json: s};
        }"""
        value = await self.bounded("reading window.DATA", self.page.evaluate(script, self.limits.max_data_chars))
        if not isinstance(value, dict):
            return None, "window.DATA could not be read"
        if value.get("missing"):
            return None, "window.DATA is not defined"
        if "error" in value:
            return None, f"window.DATA cannot be serialised: {value['error']}"
        if "tooLarge" in value:
            return None, f"window.DATA is {value['tooLarge']} characters of JSON, above {self.limits.max_data_chars}"
        return value.get("json"), None


def _parse_range(spec: str, size: int) -> tuple[int | None, int]:
    first = spec.split(",")[0].strip()
    a, _, b = first.partition("-")
    try:
        if a == "":
            n = int(b)
            if n <= 0:
                return None, 0
            return max(0, size - n), size - 1
        start = int(a)
        end = int(b) if b else size - 1
    except ValueError:
        return None, 0
    if start >= size or end < start:
        return None, 0
    return start, min(end, size - 1)


def _read_range(path: Path, start: int, length: int) -> bytes:
    with path.open("rb") as f:
        f.seek(start)
        return f.read(length)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:200]
