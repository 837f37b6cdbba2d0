"""The deterministic (M) probes: named, parameterised checks of the rendered report.

`probe_report` opens one browser context for a report, loads it once, reads what it renders
(from an isolated world, see `_browser`), takes the screenshots, then runs every requested
probe in a fixed order: static and read-only probes first, then the interactions (timestamp
clicks, playback, citation clicks) in the order the atoms list them, and `no_console_errors`
last so that it sees errors the interactions caused. The same report gives the same results.

Two rules apply to every probe:

* a page that did not load, stopped answering or crashed fails every probe, with the reason;
* a content-free report (no timeline segment, finding or source record, neither rendered nor in
  window.DATA) fails every probe: the unfilled interface earns no credit from any M atom. This is
  what the empty-report check of `omnidr snapshot validate` verifies.
"""

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from playwright.async_api import FloatRect
from pydantic import ValidationError

from omnidr.benchmark import EXTERNAL, ReferenceBudgets, probe_catalog
from sandbox.models import CONTRACT_VERSION, ReportData

from . import _page_js as js
from ._browser import ORIGIN, ChromiumBrowser, PageCallError, PageUnusable, ProbeLimits, ReportPage
from ._material import MAX_SECTION_CHARS, Figure, MaterialUnit, ReportMaterial
from ._models import ProbeResult, ProbeSession

DEFAULT_SECTIONS = ("source-video", "timeline", "overview", "anchors", "findings", "sources")
INTERACTIVE = ("timestamp_seeks", "video_plays", "citations_resolve")
SEEK_TOLERANCE_S = 0.5
PLAY_ADVANCE_S = 0.25
MAX_ENTRY_BYTES = 32 << 20
ISO_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


class ProbeCall(Protocol):
    """A probe reference as atoms carry it (`Atom.probe`): a catalog name and its arguments."""

    @property
    def name(self) -> str: ...

    @property
    def params(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Call:
    """A probe reference made outside a rubric tree (the `omnidr probe` command, tests)."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ProbeContext:
    """What the probes know besides the report: the task's source video and the contract."""

    duration_s: float | None = None  # true duration of the task's source video, seconds
    sections: tuple[str, ...] = DEFAULT_SECTIONS  # element ids the contract requires
    screenshots_dir: Path | None = None  # where to write screenshots; None: take none
    screenshots_rel: str = "screenshots"  # how the folder is named in records
    # the snapshot's evidence budgets (App. D.3): the min_count of a budget probe that leaves it out
    budgets: ReferenceBudgets = field(default_factory=ReferenceBudgets)


@dataclass
class ProbeOutcome:
    """Every probe result of one report, the session record and the material for the judge."""

    results: dict[str, ProbeResult]
    session: ProbeSession
    material: ReportMaterial

    def result(self, call: ProbeCall) -> ProbeResult:
        return self.results[call_key(call)]


def call_key(call: ProbeCall) -> str:
    return f"{call.name}:{json.dumps(call.params, sort_keys=True)}"


# ------------------------------------------------------------------------------------------------
# static reading of the entry page


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags = 0

    def handle_starttag(self, tag, attrs) -> None:
        self.tags += 1


def entry_problem(report_dir: Path, entry: str = "index.html") -> str | None:
    """Why the entry page cannot be read as HTML (None when it can): missing, not a file, empty,
    too large, not UTF-8, or without any markup."""
    path = Path(report_dir) / entry
    if not path.exists() and not path.is_symlink():
        return f"missing report: {entry} does not exist"
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        return f"unreadable report: {entry}: {exc.__class__.__name__}"
    if Path(report_dir).resolve() not in resolved.parents:
        return f"unreadable report: {entry} points outside the report folder"
    if not resolved.is_file():
        return f"unreadable report: {entry} is not a regular file"
    try:
        size = resolved.stat().st_size
        if size == 0:
            return f"unreadable report: {entry} is empty"
        if size > MAX_ENTRY_BYTES:
            return f"unreadable report: {entry} is {size} bytes, above {MAX_ENTRY_BYTES}"
        raw = resolved.read_bytes()
    except OSError as exc:
        return f"unreadable report: {entry}: {exc.strerror or exc.__class__.__name__}"
    if b"\x00" in raw[:65536]:
        return f"unreadable report: {entry} is binary, not HTML text"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"unreadable report: {entry} is not UTF-8 text (byte {exc.start})"
    parser = _Tags()
    try:
        parser.feed(text)
        parser.close()
    except Exception as exc:  # HTMLParser is lenient; anything it raises means unusable markup
        return f"unreadable report: {entry}: {exc}"
    if parser.tags == 0:
        return f"unreadable report: {entry} holds no HTML markup"
    return None


# ------------------------------------------------------------------------------------------------
# one run of the probes on one report


@dataclass
class _Run:
    page: ReportPage
    context: ProbeContext
    limits: ProbeLimits
    static_problem: str | None = None
    facts: dict | None = None
    facts_problem: str | None = None
    data: dict | None = None  # window.DATA as the page holds it (raw JSON object)
    data_problem: str | None = None
    model: ReportData | None = None
    model_problem: str | None = None
    content_free: bool = False
    screenshots: dict[str, str] = field(default_factory=dict)
    screenshot_problem: str | None = None

    # ----- helpers over window.DATA, joined with what is rendered

    def data_list(self, key: str) -> list[dict]:
        value = (self.data or {}).get(key)
        return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []

    def rendered(self, kind: str, prefix: str) -> list[str]:
        """Ids of rendered elements of a kind (segments, anchors, sources) with the template's id prefix."""
        assert self.facts is not None
        return [e["id"][len(prefix):] for e in self.facts[kind] if e.get("id", "").startswith(prefix)]

    def duration(self) -> float | None:
        if self.context.duration_s:
            return self.context.duration_s
        video = (self.facts or {}).get("video") or {}
        d = video.get("duration")
        return float(d) if isinstance(d, (int, float)) and d > 0 else None


Probe = Callable[[_Run, dict], Awaitable[tuple[bool, str]]]
PROBES: dict[str, Probe] = {}


def probe(name: str) -> Callable[[Probe], Probe]:
    def register(fn: Probe) -> Probe:
        PROBES[name] = fn
        return fn

    return register


def _frac(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f}%)" if d else "0/0"


def _norm_url(url: str) -> str:
    parts = urlsplit(url.strip())
    return f"{parts.scheme.lower()}://{(parts.hostname or '').lower()}{parts.path.rstrip('/')}" + (f"?{parts.query}" if parts.query else "")


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


@probe("report_present")
async def _report_present(run: _Run, params: dict) -> tuple[bool, str]:
    if not run.page.loaded:
        return False, "the browser did not finish loading the page"
    return True, "the entry page is HTML text and the browser loaded it"


@probe("no_console_errors")
async def _no_console_errors(run: _Run, params: dict) -> tuple[bool, str]:
    page = run.page
    problems = [f"{f.kind}: {f.detail}" for f in page.faults] + page.console_errors
    if not problems:
        return True, "no JavaScript error, uncaught exception or forbidden behaviour while loading and probing"
    count = len(page.faults) + page.console_total
    return False, f"{count} problem(s), first: " + "; ".join(p[:150] for p in problems[:2])


@probe("data_valid")
async def _data_valid(run: _Run, params: dict) -> tuple[bool, str]:
    if run.data_problem:
        return False, run.data_problem
    if run.model_problem:
        return False, run.model_problem
    assert run.model is not None
    if run.model.contract != CONTRACT_VERSION:
        return False, f"window.DATA.contract is '{run.model.contract}', not '{CONTRACT_VERSION}'"
    return True, f"window.DATA validates against the {CONTRACT_VERSION} schema"


@probe("assets_load")
async def _assets_load(run: _Run, params: dict) -> tuple[bool, str]:
    assert run.facts is not None
    served = run.page.served
    local = [a for a in run.facts["assets"] if a["local"]]
    if not local:
        return False, "the report references no local asset"
    bad: list[str] = []
    seen: set[str] = set()
    for a in local:
        rel = unquote(urlsplit(a["url"]).path).lstrip("/")
        key = f"{a['tag']}:{rel}"
        if key in seen:
            continue
        seen.add(key)
        status = served.get(rel)
        if run.page.local_path(a["url"]) is None:
            bad.append(f"{rel} (outside the report folder)")
        elif status is not None and status not in (200, 206):
            bad.append(f"{rel} (HTTP {status})")
        elif a["state"] not in (None, "ok"):
            bad.append(f"{rel} ({a['state']})")
        elif status is None and a["state"] is None:
            bad.append(f"{rel} (never loaded)")
    for rel in run.page.missing:
        if not any(rel in b for b in bad):
            bad.append(f"{rel} (requested, not in the report folder)")
    if bad:
        return False, f"{len(bad)} of {len(seen)} local asset(s) did not load: " + ", ".join(bad[:5])
    return True, f"all {len(seen)} local asset(s) loaded (images decoded, media metadata read)"


@probe("timestamp_seeks")
async def _timestamp_seeks(run: _Run, params: dict) -> tuple[bool, str]:
    t = float(params["time_s"])
    page = run.page
    found = await page.call(js.FIND_STAMP, t, "finding the timestamp")
    if found["index"] < 0:
        return False, f"no visible timestamp link for {t:g} s among {found['count']} timestamp(s)"
    armed = await page.call(js.ARM_SEEKS, None, "preparing the source video")
    if not armed.get("ok"):
        return False, armed.get("why", "no source video")
    assert page.page is not None
    target = page.page.locator(".ts").nth(found["index"])
    try:
        await page.bounded("clicking the timestamp", target.click(timeout=page.limits.step_timeout_s * 1000))
    except PageCallError as exc:
        return False, f"clicking timestamp '{found['label']}' failed: {exc}"
    waited = await page.call(js.AWAIT_SEEK, int(page.limits.seek_wait_s * 1000), "waiting for the seek",
                             timeout_s=page.limits.seek_wait_s + page.limits.step_timeout_s)
    seeks = [e for e in waited["log"] if e["type"] == "seeking"]
    if not seeks:
        return False, f"clicking '{found['label']}' did not seek the source video"
    landed = float(seeks[-1]["t"])
    done = any(e["type"] == "seeked" for e in waited["log"][waited["log"].index(seeks[-1]):])
    if not done:
        return False, f"clicking '{found['label']}' started a seek to {landed:.2f} s that did not complete"
    if abs(landed - t) > SEEK_TOLERANCE_S:
        return False, f"clicking '{found['label']}' seeked the source video to {landed:.2f} s, not {t:g} s (±{SEEK_TOLERANCE_S} s)"
    return True, f"clicking '{found['label']}' seeked the source video to {landed:.2f} s (target {t:g} s)"


@probe("video_plays")
async def _video_plays(run: _Run, params: dict) -> tuple[bool, str]:
    page = run.page
    r = await page.call(js.PLAY, int(page.limits.play_wait_s * 1000), "playing the source video",
                        timeout_s=3 * page.limits.play_wait_s + page.limits.step_timeout_s)
    if not r.get("ok"):
        return False, r.get("why", "no source video")
    if r.get("error"):
        return False, f"the source video has a media error (code {r['error']})"
    advanced = (r["t1"] or 0) - (r["t0"] or 0)
    if advanced >= PLAY_ADVANCE_S:
        return True, f"the source video played: its time advanced by at least {PLAY_ADVANCE_S} s from {r['t0']:.2f} s"
    why = f" (play() failed: {r['playError']})" if r.get("playError") else ""
    return False, f"the source video did not advance {PLAY_ADVANCE_S} s within {page.limits.play_wait_s:g} s{why}"


@probe("citations_resolve")
async def _citations_resolve(run: _Run, params: dict) -> tuple[bool, str]:
    page = run.page
    r = await page.call(js.CLICK_CITATIONS, page.limits.max_citations, "clicking the citations")
    if r["total"] == 0:
        return False, "the report has no inline citation"
    if r["total"] > page.limits.max_citations:
        return False, f"the report has {r['total']} inline citations, above the {page.limits.max_citations} the probe checks"
    if r["badCount"]:
        return False, f"{r['badCount']} of {r['total']} citation(s) do not jump to a source record: " + "; ".join(r["bad"][:3])
    return True, f"all {r['total']} inline citation(s) jump to an existing source record"


@probe("claim_cited")
async def _claim_cited(run: _Run, params: dict) -> tuple[bool, str]:
    assert run.facts is not None
    claims = run.facts["claims"]
    need = float(params["min_fraction"])
    if not claims:
        return False, "the report renders no finding claim"
    cited = sum(1 for c in claims if c["cites"])
    ok = cited / len(claims) >= need
    return ok, f"{_frac(cited, len(claims))} claims carry an inline citation (need {need:.0%})"


def _rendered_sources(run: _Run) -> list[dict]:
    ids = set(run.rendered("sources", "src-"))
    return [s for s in run.data_list("sources") if isinstance(s.get("id"), str) and s["id"] in ids]


@probe("source_budget")
async def _source_budget(run: _Run, params: dict) -> tuple[bool, str]:
    if run.data is None:
        return False, run.data_problem or "window.DATA is not readable"
    kind = str(params["source_type"])
    budget = run.context.budgets.minimum(kind)
    need = int(params["min_count"]) if "min_count" in params else budget
    if need is None:
        return False, f"no min_count given and the budgets set none for {kind} sources"
    # App. D.3: B_web counts external sources of every type; a type names its own records only
    urls = {_norm_url(s["url"]) for s in _rendered_sources(run)
            if (kind == EXTERNAL or s.get("type") == kind) and _text(s.get("url"))}
    return len(urls) >= need, f"{len(urls)} rendered {kind} source record(s) with distinct URLs (need {need})"


@probe("sources_per_anchor")
async def _sources_per_anchor(run: _Run, params: dict) -> tuple[bool, str]:
    if run.data is None:
        return False, run.data_problem or "window.DATA is not readable"
    need = int(params.get("min_count", run.context.budgets.records_per_anchor))
    anchors = run.rendered("anchors", "anchor-")
    if not anchors:
        return False, "the report renders no research anchor"
    sources = _rendered_sources(run)
    short = []
    for a in anchors:
        urls = {_norm_url(_text(s.get("url"))) for s in sources
                if isinstance(s.get("anchor_ids"), list) and a in s["anchor_ids"]}
        if len(urls) < need:
            short.append(f"{a} ({len(urls)})")
    if short:
        return False, f"{len(short)} of {len(anchors)} anchor(s) have fewer than {need} source records: " + ", ".join(short[:5])
    return True, f"each of the {len(anchors)} anchor(s) is linked by at least {need} source record(s)"


def _iso_date(value: str) -> bool:
    if not ISO_DATE.match(value):
        return False
    parts = [int(p) for p in value.split("-")] + [1, 1]
    try:
        date(parts[0], parts[1], parts[2])
    except ValueError:
        return False
    return True


@probe("source_fields_complete")
async def _source_fields_complete(run: _Run, params: dict) -> tuple[bool, str]:
    if run.data is None:
        return False, run.data_problem or "window.DATA is not readable"
    assert run.facts is not None
    rendered = {s["id"][4:]: s for s in run.facts["sources"] if s.get("id", "").startswith("src-")}
    sources = _rendered_sources(run)
    if not sources:
        return False, "the report renders no source record"
    bad = []
    for s in sources:
        missing = [f for f in ("title", "url", "date", "quote") if not _text(s.get(f))]
        url = _text(s.get("url"))
        if url and urlsplit(url).scheme not in ("http", "https"):
            missing.append("http(s) url")
        if _text(s.get("date")) and not _iso_date(_text(s.get("date"))):
            missing.append("ISO date")
        if _text(s.get("quote")) and not rendered[s["id"]]["hasQuote"]:
            missing.append("shown quote")
        if missing:
            bad.append(f"{s['id']}: {', '.join(missing)}")
    if bad:
        return False, f"{len(bad)} of {len(sources)} source record(s) are incomplete: " + "; ".join(bad[:4])
    return True, f"all {len(sources)} source record(s) have a URL, title, ISO date and a shown quote"


@probe("not_skeleton")
async def _not_skeleton(run: _Run, params: dict) -> tuple[bool, str]:
    assert run.facts is not None
    counts = {"timeline": len(run.facts["segments"]), "findings": len(run.facts["findings"]), "sources": len(run.facts["sources"])}
    empty = [k for k, v in counts.items() if v == 0]
    summary = ", ".join(f"{v} {k}" for k, v in counts.items())
    if empty:
        return False, f"empty: {', '.join(empty)} ({summary})"
    return True, f"rendered {summary}"


@probe("timeline_covers")
async def _timeline_covers(run: _Run, params: dict) -> tuple[bool, str]:
    if run.data is None:
        return False, run.data_problem or "window.DATA is not readable"
    need = float(params["min_fraction"])
    total = run.duration()
    if not total:
        return False, "the source video's duration is unknown"
    shown = set(run.rendered("segments", "seg-"))
    spans = []
    for s in run.data_list("timeline"):
        a, b = s.get("start_s"), s.get("end_s")
        if isinstance(s.get("id"), str) and s["id"] in shown and isinstance(a, (int, float)) and isinstance(b, (int, float)) and b > a:
            spans.append((max(0.0, float(a)), min(total, float(b))))
    covered, reach = 0.0, 0.0
    for a, b in sorted(spans):
        if b > reach:
            covered += b - max(a, reach)
            reach = b
    frac = covered / total
    return frac + 1e-9 >= need, f"{len(spans)} rendered segment(s) cover {covered:.1f} of {total:.1f} s ({frac:.0%}; need {need:.0%})"


@probe("findings_linked_to_video")
async def _findings_linked(run: _Run, params: dict) -> tuple[bool, str]:
    assert run.facts is not None
    need = float(params["min_fraction"])
    findings = run.facts["findings"]
    if not findings:
        return False, "the report renders no finding"
    total = run.duration()
    linked = sum(1 for f in findings if any(t >= 0 and (total is None or t <= total + SEEK_TOLERANCE_S) for t in f["stamps"]))
    return linked / len(findings) >= need, f"{_frac(linked, len(findings))} findings link a source-video moment (need {need:.0%})"


@probe("media_present")
async def _media_present(run: _Run, params: dict) -> tuple[bool, str]:
    assert run.facts is not None
    kind, need = str(params["media_type"]), int(params["min_count"])
    tag = {"image": "img", "video": "video"}.get(kind)
    if tag is None:
        return False, f"unknown media type '{kind}' (image or video)"
    shown = {m["src"] for m in run.facts["media"] if m["tag"] == tag and m["shown"]}
    listed = sum(1 for m in run.facts["media"] if m["tag"] == tag)
    return len(shown) >= need, f"{len(shown)} distinct {kind}(s) shown of {listed} in the page (need {need})"


@probe("screenshot")
async def _screenshot(run: _Run, params: dict) -> tuple[bool, str]:
    if run.screenshot_problem:
        return False, run.screenshot_problem
    if "page" not in run.screenshots:
        return False, "no screenshot was taken"
    return True, f"captured {len(run.screenshots)} screenshot(s): " + ", ".join(sorted(run.screenshots))


# ------------------------------------------------------------------------------------------------


def _missing_probes() -> list[str]:
    return sorted(set(probe_catalog().by_name()) - set(PROBES))


assert not _missing_probes(), f"probes without an implementation: {_missing_probes()}"


async def _take_screenshots(run: _Run) -> None:
    folder = run.context.screenshots_dir
    page = run.page
    if folder is None or page.page is None or run.facts is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    limit = page.limits.max_screenshot_px
    height = max(1, min(int(run.facts.get("pageHeight") or 800), limit))
    shot: dict[str, Any] = dict(type="jpeg", quality=80, animations="disabled", caret="hide",
                                timeout=page.limits.step_timeout_s * 1000)
    try:
        await page.bounded("a full-page screenshot", page.page.screenshot(
            path=folder / "page.jpg", full_page=True, clip={"x": 0, "y": 0, "width": 1280, "height": height}, **shot))
        run.screenshots["page"] = f"{run.context.screenshots_rel}/page.jpg"
        for sid in run.context.sections:
            if sid == "source-video" or not run.facts["sections"].get(sid):
                continue
            try:
                box = await page.call(js.SECTION_BOX, sid, f"measuring section {sid}")
                if box and box["width"] >= 1 and box["height"] >= 1:
                    clip: FloatRect = {"x": max(0, box["x"]), "y": max(0, box["y"]), "width": box["width"], "height": min(box["height"], limit)}
                    await page.bounded(f"a screenshot of section {sid}",
                                       page.page.screenshot(path=folder / f"{sid}.jpg", full_page=True, clip=clip, **shot))
                    run.screenshots[sid] = f"{run.context.screenshots_rel}/{sid}.jpg"
            finally:
                await page.call(js.RESTORE_STYLES, None, "restoring styles")
    except PageCallError as exc:
        run.screenshot_problem = f"screenshot failed: {exc}"


def _material(run: _Run) -> ReportMaterial:
    f = run.facts
    if f is None:
        return ReportMaterial(screenshots=run.screenshots)
    figures, seen = [], set()
    for m in f["media"]:
        if m["tag"] == "img" and m["local"] and m["shown"]:
            rel = unquote(urlsplit(m["src"]).path).lstrip("/")
            if rel not in seen:
                seen.add(rel)
                figures.append(Figure(path=rel, caption=m["caption"]))
    units = [MaterialUnit(section=u["section"], kind=u["kind"], text=u["text"], cited=bool(u.get("cited")),
                          cites=[c for c in u.get("cites", []) if isinstance(c, str)]) for u in f["units"]]
    cut = {sid: n for sid, n in (f.get("sectionLength") or {}).items() if n > MAX_SECTION_CHARS}
    return ReportMaterial(title=f["title"], query=f["query"], sections=f["sectionText"], units=units,
                          figures=figures, screenshots=run.screenshots, cut_sections=cut,
                          moments=sorted({round(float(t), 1) for t in f.get("moments") or [] if t >= 0}))


def _read_data(run: _Run, raw: str | None, problem: str | None) -> None:
    if problem is not None:
        run.data_problem = problem
        return
    try:
        value = json.loads(raw) if raw is not None else None
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        run.data_problem = "window.DATA is not a JSON object"
        return
    run.data = value
    try:
        run.model = ReportData.model_validate(value)
    except ValidationError as exc:
        e = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in e["loc"]) or "window.DATA"
        run.model_problem = f"window.DATA.{where}: {e['msg']} ({exc.error_count()} problem(s))"


def _content_free(run: _Run) -> bool:
    f = run.facts or {}
    rendered = bool(f.get("segments") or f.get("findings") or f.get("sources"))
    in_data = bool(run.data_list("timeline") or run.data_list("findings") or run.data_list("sources"))
    return not rendered and not in_data


async def _inspect(run: _Run) -> None:
    """Load, settle and read the page; failures are recorded on `run`, never raised."""
    page = run.page
    await page.open()
    try:
        await page.call(js.SETTLE, int(run.limits.media_wait_s * 1000), "waiting for media",
                        timeout_s=run.limits.media_wait_s + run.limits.step_timeout_s)
    except PageCallError:
        pass
    except PageUnusable:
        return
    opts = {"origin": ORIGIN, "maxNodes": run.limits.max_dom_nodes, "sections": list(run.context.sections), "maxText": MAX_SECTION_CHARS}
    try:
        facts = await page.call(js.FACTS, opts, "reading the rendered report")
    except PageCallError as exc:
        run.facts_problem = f"the rendered report could not be read: {exc}"
        return
    except PageUnusable:
        return
    if facts.get("tooLarge"):
        page.fault("dom_size", f"the document has {facts['domNodes']} elements (limit {run.limits.max_dom_nodes})")
        run.facts_problem = f"the document has {facts['domNodes']} elements, above the {run.limits.max_dom_nodes} limit"
        return
    run.facts = facts
    try:
        raw, problem = await page.page_data()
    except PageCallError as exc:
        raw, problem = None, f"window.DATA could not be read: {exc}"
    except PageUnusable:
        return
    _read_data(run, raw, problem)
    run.content_free = _content_free(run)
    if not run.content_free:
        await _take_screenshots(run)


def _precondition(run: _Run) -> str | None:
    """The reason every probe fails, if there is one."""
    if run.static_problem:
        return run.static_problem
    if not run.page.responsive:
        return run.page.unusable_reason or "the page is not usable"
    if run.page.page is not None and run.page.page.url.split("#")[0] != run.page.entry_url:
        return f"the page left the report for {run.page.page.url[:120]}"
    if run.facts is None:
        return run.facts_problem or "the rendered report could not be read"
    if run.content_free:
        return "content-free report: no timeline segment, finding or source record; the unfilled interface earns no credit"
    return None


async def _one(run: _Run, call: ProbeCall) -> ProbeResult:
    started = time.monotonic()
    params = dict(call.params)

    def result(status: str, reason: str) -> ProbeResult:
        return ProbeResult(name=call.name, params=params, status=status, reason=reason,
                           elapsed_s=round(time.monotonic() - started, 3))

    fn = PROBES.get(call.name)
    if fn is None:
        return result("error", f"unknown probe '{call.name}'")
    blocked = _precondition(run)
    if blocked:
        return result("fail", blocked)
    try:
        ok, reason = await fn(run, params)
    except PageUnusable as exc:
        return result("fail", str(exc))
    except PageCallError as exc:
        return result("fail", str(exc))
    except Exception as exc:  # noqa: BLE001 - report data we did not foresee must not earn a skip
        return result("fail", f"the probe could not interpret the report: {type(exc).__name__}: {str(exc)[:150]}")
    return result("pass" if ok else "fail", reason)


def _session(run: _Run, started: float, browser: ChromiumBrowser) -> ProbeSession:
    page = run.page
    return ProbeSession(
        entry_url=page.entry_url, browser_version=browser.version, chromium_sandbox=browser.sandboxed, loaded=page.loaded, responsive=page.responsive,
        content_free=run.content_free, dom_nodes=(run.facts or {}).get("domNodes"), console_errors=page.console_errors,
        faults=page.faults, blocked_requests=page.blocked, blocked_total=page.blocked_total, served=len(page.served),
        screenshots=run.screenshots, elapsed_s=round(time.monotonic() - started, 3),
    )


def _ordered(calls: Sequence[ProbeCall]) -> list[ProbeCall]:
    unique: dict[str, ProbeCall] = {}
    for c in calls:
        unique.setdefault(call_key(c), c)
    items = list(unique.values())
    static = [c for c in items if c.name not in INTERACTIVE and c.name != "no_console_errors"]
    interactive = [c for c in items if c.name in INTERACTIVE]
    last = [c for c in items if c.name == "no_console_errors"]
    return static + interactive + last


async def probe_report(
    browser: ChromiumBrowser,
    report_dir: Path,
    calls: Sequence[ProbeCall],
    context: ProbeContext = ProbeContext(),
    limits: ProbeLimits = ProbeLimits(),
    entry: str = "index.html",
) -> ProbeOutcome:
    """Run `calls` on the report in `report_dir` in one browser context. Never raises for anything
    the report does; every call gets a result."""
    started = time.monotonic()
    run = _Run(ReportPage(browser, report_dir, entry, limits), context, limits)
    run.static_problem = entry_problem(report_dir, entry)
    results: dict[str, ProbeResult] = {}

    async def body() -> None:
        if run.static_problem is None:
            await _inspect(run)
        for call in _ordered(calls):
            results[call_key(call)] = await _one(run, call)

    try:
        await asyncio.wait_for(body(), limits.report_timeout_s)
    except TimeoutError:
        run.page.fault("timeout", f"probing exceeded the {limits.report_timeout_s:g} s budget of one report")
        run.page._unusable(f"probing the report exceeded its {limits.report_timeout_s:g} s budget")
    finally:
        await run.page.close()
    for call in calls:
        results.setdefault(call_key(call), ProbeResult(
            name=call.name, params=dict(call.params), status="fail",
            reason=run.page.unusable_reason or "the report's probe budget ran out"))
    return ProbeOutcome(results=results, session=_session(run, started, browser), material=_material(run))
