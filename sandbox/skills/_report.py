"""Writing the report folder (contract: index.html = template, data.js = window.DATA) and the agent's own
checks of it (App. D stage 7): data shape, local assets, times within the video, citations that resolve
to opened sources whose text holds the quoted words."""

import json
import os
import re
import shutil
import unicodedata
from pathlib import Path

from sandbox.models import CONTRACT_VERSION, GOALS, SOURCE_TYPES, RelationType, data_js_body

RELATIONS = tuple(r.value for r in RelationType)


def normalize(text: str) -> str:
    """For verbatim matching: NFKC, lower case, no whitespace, straight quotes."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    return re.sub(r"\s+", "", text)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def read_data(report_dir: Path, data_file: str = "data.js") -> dict:
    body = data_js_body((report_dir / data_file).read_text("utf-8"))
    if body is None:
        raise ValueError("data.js is not a `window.DATA = {...};` assignment")
    return json.loads(body)


def write_report(report_dir: Path, contract_dir: Path, video: str, data: dict, probe: dict | None,
                 contract: dict) -> dict:
    """Write index.html (an unmodified template copy), data.js and the source video. Returns what was written."""
    report_dir.mkdir(parents=True, exist_ok=True)
    data = dict(data)
    data["contract"] = contract.get("version", CONTRACT_VERSION)
    v = dict(data.get("video") or {})
    src = v.get("src") or "video" + (Path(video).suffix or ".mp4")
    if "/" in src or src.startswith("."):
        src = Path(src).name
    target = report_dir / src
    if not target.is_file():
        shutil.copyfile(video, target)
    v["src"] = src
    if probe and not v.get("duration_s"):
        v["duration_s"] = probe["duration_s"]
    data["video"] = v
    body = "window.DATA = " + json.dumps(data, ensure_ascii=False, indent=2) + ";\n"
    _write_atomic(report_dir / contract.get("data_file", "data.js"), body.encode("utf-8"))
    template = contract_dir / contract.get("template", "template.html")
    _write_atomic(report_dir / contract.get("entry", "index.html"), template.read_bytes())
    return {"entry": contract.get("entry", "index.html"), "data_bytes": len(body.encode("utf-8")),
            "timeline": len(data.get("timeline") or []), "findings": len(data.get("findings") or []),
            "sources": len(data.get("sources") or []), "video_src": src}


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


class _Findings:
    """The problems (must be fixed) and warnings one report check collects, in the order it finds them."""

    def __init__(self, report_dir: Path, duration_s: float | None) -> None:
        self.report_dir = report_dir
        self.duration_s = duration_s
        self.problems: list[str] = []
        self.warnings: list[str] = []

    def in_video(self, t, where: str) -> None:
        dur = self.duration_s
        if not _num(t) or t < 0 or (dur is not None and t > dur + 0.5):
            self.problems.append(f"{where}: time {t!r} is outside the video (0 to {dur} s)")

    def media_ok(self, items, where: str) -> None:
        for j, m in enumerate(items or []):
            src = str((m or {}).get("src", ""))
            if re.match(r"^https?://", src):
                continue
            if not src or src.startswith("/") or ".." in Path(src).parts or not (self.report_dir / src).is_file():
                self.problems.append(f"{where}.media[{j}]: local file {src!r} does not exist in the report folder")

    def result(self) -> dict:
        return {"ok": not self.problems, "problems": self.problems, "warnings": self.warnings}


def _entry_problems(report_dir: Path, contract_dir: Path, contract: dict) -> list[str]:
    entry = report_dir / contract.get("entry", "index.html")
    template = contract_dir / contract.get("template", "template.html")
    if not entry.is_file():
        return [f"{entry.name} is missing: call write_report"]
    if template.is_file() and entry.read_bytes() != template.read_bytes():
        return [f"{entry.name} is not an unmodified copy of the contract template"]
    return []


def _shape_problems(data: dict) -> list[str]:
    """What the contract's model rejects in `window.DATA` (empty: the shape is right)."""
    from pydantic import ValidationError  # here, not at the top: only a report check needs the model

    from sandbox.models import ReportData

    try:
        ReportData.model_validate(data)
    except ValidationError as exc:
        return [f"{'.'.join(str(p) for p in e['loc']) or 'window.DATA'}: {e['msg']}" for e in exc.errors(include_url=False)]
    return []


def _check_header(out: _Findings, data: dict, contract: dict) -> None:
    for key in ("title", "language", "query", "overview"):
        if not data[key].strip():
            out.problems.append(f"{key}: a non-empty text is required")
    if data.get("contract") != contract.get("version", CONTRACT_VERSION):
        out.problems.append(f"contract must be {contract.get('version', CONTRACT_VERSION)!r}")
    if not (out.report_dir / str(data["video"]["src"])).is_file():
        out.problems.append("video.src must name the source video copied into the report folder")


def _check_timeline(out: _Findings, timeline: list) -> None:
    covered = 0.0
    for i, seg in enumerate(timeline):
        where = f"timeline[{i}]"
        for k in ("id", "title", "note"):
            if not seg[k]:
                out.problems.append(f"{where}.{k} must not be empty")
        out.in_video(seg.get("start_s"), where + ".start_s")
        out.in_video(seg.get("end_s"), where + ".end_s")
        if _num(seg.get("start_s")) and _num(seg.get("end_s")):
            if seg["end_s"] < seg["start_s"]:
                out.problems.append(f"{where}: end_s is before start_s")
            covered += max(0.0, seg["end_s"] - seg["start_s"])
        out.media_ok(seg.get("media"), where)
    dur = out.duration_s
    if dur and timeline and covered < 0.8 * dur:
        out.warnings.append(f"timeline covers {covered:.0f} s of {dur:.0f} s; segments should cover the whole video")


def _check_anchors(out: _Findings, anchors: list) -> set:
    """Checks the anchors; returns their ids."""
    anchor_ids = set()
    for i, a in enumerate(anchors):
        anchor_ids.add(a.get("id"))
        out.in_video(a.get("time_s"), f"anchors[{i}].time_s")
        if a.get("goal") not in GOALS:
            out.problems.append(f"anchors[{i}].goal must be one of {', '.join(GOALS)}")
    return anchor_ids


def _check_findings(out: _Findings, findings: list, anchor_ids: set, source_ids: list) -> set[str]:
    """Checks the findings and their claims; returns the source ids the claims cite."""
    cited: set[str] = set()
    for i, f in enumerate(findings):
        for aid in f.get("anchor_ids") or []:
            if aid not in anchor_ids:
                out.problems.append(f"findings[{i}].anchor_ids: unknown anchor {aid!r}")
        out.media_ok(f.get("media"), f"findings[{i}]")
        for j, c in enumerate(f.get("claims") or []):
            where = f"findings[{i}].claims[{j}]"
            for sid in c.get("citations") or []:
                cited.add(sid)
                if sid not in source_ids:
                    out.problems.append(f"{where}: citation {sid!r} is not a source id")
            for t in c.get("video_times_s") or []:
                out.in_video(t, where + ".video_times_s")
            if not c.get("citations") and not c.get("video_times_s"):
                out.warnings.append(f"{where}: a claim with neither a citation nor a video moment")
    return cited


def _check_sources(out: _Findings, sources: list, cited: set[str], fetched: dict[str, dict] | None) -> None:
    for i, s in enumerate(sources):
        where = f"sources[{i}] ({s.get('id')})"
        if s.get("type") not in SOURCE_TYPES:
            out.problems.append(f"{where}.type must be one of {', '.join(SOURCE_TYPES)}")
        if s.get("id") not in cited:
            out.warnings.append(f"{where} is cited by no claim")
        if fetched is None:
            continue
        page = fetched.get(s.get("url", ""))
        if page is None or page.get("status") != 200:
            out.problems.append(f"{where}: {s.get('url')!r} was not opened successfully in this run; fetch it or drop it")
        elif s.get("quote") and normalize(s["quote"]) not in normalize(page.get("text", "")):
            out.problems.append(f"{where}: the quote is not found verbatim in the fetched page")


def _check_process(out: _Findings, timeline: list, sources: list, anchor_ids: set, fetched: dict[str, dict] | None,
                   budgets: dict[str, int] | None) -> None:
    """The required-process checks of the full workflow."""
    frames = [m for seg in timeline for m in (seg.get("media") or []) if str(m.get("src", "")).endswith(".jpg")]
    if not frames:
        out.problems.append("process: the timeline shows no frame of the video")
    if fetched is None:
        return
    if not sources:
        out.problems.append("process: no external source is cited")
    elif not any(s.get("type") == "video" for s in sources):
        out.warnings.append("process: no related video was inspected")
    if budgets:
        out.warnings.extend(_budget_shortfalls(sources, anchor_ids, budgets))


def check_report(report_dir: Path, contract_dir: Path, contract: dict, duration_s: float | None,
                 fetched: dict[str, dict] | None, workflow: bool, budgets: dict[str, int] | None = None) -> dict:
    """Problems (must be fixed) and warnings. `fetched` maps URL -> {status, text} of pages opened in this
    run (None: the agent has no web tools, citations are not checked against fetches). `budgets` are the
    minimum counts the full workflow aims for (App. D.3: web, video, document sources and records per
    anchor); falling short is a warning, because what the open web offers decides what is reachable."""
    problems = _entry_problems(report_dir, contract_dir, contract)
    try:
        data = read_data(report_dir, contract.get("data_file", "data.js"))
    except (OSError, ValueError) as exc:
        return {"ok": False, "problems": problems + [f"data.js: {exc}"], "warnings": []}
    shape = _shape_problems(data)  # the shape is the contract's model; what follows checks what a schema cannot
    if shape:
        return {"ok": False, "problems": problems + shape, "warnings": []}

    out = _Findings(report_dir, duration_s if duration_s else data["video"]["duration_s"])
    out.problems.extend(problems)
    _check_header(out, data, contract)
    timeline = data.get("timeline") or []
    _check_timeline(out, timeline)
    anchor_ids = _check_anchors(out, data.get("anchors") or [])
    sources = data.get("sources") or []
    source_ids = [s.get("id") for s in sources]
    if len(set(source_ids)) != len(source_ids):
        out.problems.append("sources: ids must be unique")
    cited = _check_findings(out, data.get("findings") or [], anchor_ids, source_ids)
    _check_sources(out, sources, cited, fetched)
    if workflow:
        _check_process(out, timeline, sources, anchor_ids, fetched, budgets)
    return out.result()


def _budget_shortfalls(sources: list, anchor_ids: set, budgets: dict[str, int]) -> list[str]:
    """App. D.3: B_web (`web` here) is the minimum number of external sources, of every type (pages, documents,
    images, related videos); B_video and B_doc count their own type."""
    out = []
    need = budgets.get("web", 0)
    have = len({s.get("url") for s in sources if s.get("url")})
    if have < need:
        out.append(f"budget: {have} external source(s) of any type, the reference budget B_web asks for at least {need}")
    for kind in ("video", "document"):
        need = budgets.get(kind, 0)
        have = len({s.get("url") for s in sources if s.get("type") == kind and s.get("url")})
        if have < need:
            out.append(f"budget: {have} {kind} source(s), the reference budget asks for at least {need}")
    need = budgets.get("anchor", 0)
    short = sorted(a for a in anchor_ids if a and len({s.get("url") for s in sources
                                                        if a in (s.get("anchor_ids") or [])}) < need)
    if short:
        out.append(f"budget: anchor(s) {', '.join(map(str, short))} have fewer than {need} source records each")
    return out
