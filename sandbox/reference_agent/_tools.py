"""The reference agent's tools: JSON schemas for the model and their implementations, over one shared
research state (probe, fetched pages, evidence records, report)."""

import hashlib
import json
import mimetypes

from dataclasses import dataclass, field
from pathlib import Path

from . import _media, _report, _web
from ._capability import Capability


def _fn(name: str, description: str, properties: dict, required: list[str] | None = None) -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required or [], "additionalProperties": False}}}


SCHEMAS = {
    "probe_video": _fn("probe_video", "Duration, frame rate, resolution, audio and subtitle tracks of the source "
                       "video, and how many reading windows it has.", {}),
    "read_window": _fn("read_window", "Read one window of the source video: frames sampled uniformly (saved "
                       "under the report's assets/ folder, usable as timeline media) and the transcript of that "
                       "window from the subtitle track, with absolute times.",
                       {"index": {"type": "integer", "description": "Window number from 0."},
                        "frames": {"type": "integer", "description": "Frames to sample (1 to 24, default 6)."}},
                       ["index"]),
    "search_web": _fn("search_web", "Search the web. Returns URLs and titles only; open a result with fetch_url "
                      "to read it.", {"query": {"type": "string"}}, ["query"]),
    "fetch_url": _fn("fetch_url", "Open a URL (web page or PDF) and return its text.",
                     {"url": {"type": "string"},
                      "offset": {"type": "integer", "description": "Character offset to continue from."},
                      "max_chars": {"type": "integer", "description": "At most this many characters (default 6000)."}},
                     ["url"]),
    "record_evidence": _fn("record_evidence", "Record one piece of evidence with provenance and its relation to "
                           "the video. The excerpt must be copied verbatim from an opened source (or be the "
                           "transcript/frame observation for video evidence).",
                           {"claim": {"type": "string"},
                            "modality": {"type": "string", "enum": ["video", "web", "document", "image"]},
                            "source_url": {"type": "string", "description": "Opened URL (omit for video evidence)."},
                            "excerpt": {"type": "string"},
                            "relation": {"type": "string", "enum": sorted(_report.RELATIONS)},
                            "video_time_s": {"type": "number"},
                            "anchor": {"type": "string", "description": "Research anchor id it answers."},
                            "date": {"type": "string", "description": "Publication date of the source, if known."}},
                           ["claim", "modality", "excerpt"]),
    "download_media": _fn("download_media", "Download an image or video file into the report's assets/ folder "
                          "(so it can be shown as finding media); videos are probed.",
                          {"url": {"type": "string"}}, ["url"]),
    "write_report": _fn("write_report", "Write the report: window.DATA to data.js, the contract template to "
                        "index.html and the source video next to them. `data` is the window.DATA object "
                        "(title, language, query, video, overview, timeline, anchors, findings, sources); with "
                        "merge=true its top-level keys replace those of the data already written.",
                        {"data": {"type": "object"}, "merge": {"type": "boolean"}}, ["data"]),
    "check_report": _fn("check_report", "Check the written report: data shape, local assets, times within the "
                        "video, citations that resolve to opened sources whose text contains the quotes.", {}),
}


class ToolError(Exception):
    """A tool call the agent can learn from: bad arguments, missing prerequisite, failed fetch."""


PHASES = {"probe_video": "video", "read_window": "video", "search_web": "search", "fetch_url": "read",
          "download_media": "read", "record_evidence": "synthesis", "write_report": "write", "check_report": "check"}


@dataclass
class ToolBox:
    cap: Capability
    video: str
    report_dir: Path
    contract_dir: Path
    search: _web.SearchIndex | None = None
    window_s: float = _media.WINDOW_S
    frames_per_window: int = 6
    budgets: dict[str, int] = field(default_factory=dict)  # App. D.3 minimum counts (--budgets)
    max_tool_chars: int = 6000
    probe: dict | None = None
    fetched: dict[str, dict] = field(default_factory=dict)
    evidence: list[dict] = field(default_factory=list)
    data: dict | None = None

    def __post_init__(self):
        path = self.contract_dir / "contract.json"
        self.contract = json.loads(path.read_text("utf-8")) if path.is_file() else {}

    def schemas(self) -> list[dict]:
        out = []
        for name in self.cap.tools:
            schema = json.loads(json.dumps(SCHEMAS[name]))
            if name == "search_web" and self.cap.media_search:
                schema["function"]["parameters"]["properties"]["kind"] = {
                    "type": "string", "enum": ["any", "web", "video", "document", "image"]}
            out.append(schema)
        return out

    def call(self, name: str, arguments: dict) -> dict:
        if name not in self.cap.tools:
            raise ToolError(f"no tool {name!r} at capability {self.cap.name}")
        if not isinstance(arguments, dict):
            raise ToolError("arguments must be a JSON object")
        return getattr(self, "_" + name)(**arguments)

    # -- video ------------------------------------------------------------------------------------
    def _ensure_probe(self) -> dict:
        if self.probe is None:
            self.probe = _media.probe_video(self.video)
        return self.probe

    def _probe_video(self) -> dict:
        p = dict(self._ensure_probe())
        p["window_s"] = self.window_s
        p["windows"] = len(_media.windows(p["duration_s"], self.window_s))
        return p

    def _read_window(self, index: int, frames: int | None = None) -> dict:
        n = max(1, min(24, int(frames or self.frames_per_window)))
        try:
            return _media.read_window(self.video, self._ensure_probe(), int(index), self.report_dir / "assets",
                                      n, self.window_s, rel_to=self.report_dir)
        except _media.MediaError as exc:
            raise ToolError(str(exc)) from None

    # -- web --------------------------------------------------------------------------------------
    def _search_web(self, query: str, kind: str | None = None) -> dict:
        if self.search is None:
            raise ToolError("no search backend is configured in this sandbox; open known URLs with fetch_url")
        return {"query": query, "results": self.search.search(query, kind if self.cap.media_search else None)}

    def _fetch_url(self, url: str, offset: int = 0, max_chars: int | None = None) -> dict:
        try:
            page = _web.fetch(url)
        except (ValueError, OSError) as exc:
            self.fetched.setdefault(url, {"status": None, "text": "", "error": str(exc)})
            raise ToolError(f"fetch failed: {exc}") from None
        kind = _web.classify({"url": url, "content_type": page["content_type"]})
        self.fetched[url] = {"status": page["status"], "text": page["text"], "title": page["title"], "kind": kind}
        limit = max(200, min(int(max_chars or self.max_tool_chars), 50_000))
        text = page["text"][int(offset or 0):int(offset or 0) + limit]
        return {"url": url, "status": page["status"], "kind": kind, "content_type": page["content_type"],
                "title": page["title"], "total_chars": len(page["text"]), "offset": int(offset or 0), "text": text}

    def _download_media(self, url: str) -> dict:
        try:
            page = _web.fetch(url)
        except (ValueError, OSError) as exc:
            raise ToolError(f"download failed: {exc}") from None
        if page["status"] != 200 or not page["raw"]:
            raise ToolError(f"download failed: status {page['status']}")
        ctype = page["content_type"].split(";")[0].strip()
        ext = mimetypes.guess_extension(ctype) or Path(url.split("?")[0]).suffix or ".bin"
        name = hashlib.sha256(url.encode()).hexdigest()[:12] + ext
        dest = self.report_dir / "assets" / "media" / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(page["raw"])
        out = {"url": url, "src": dest.relative_to(self.report_dir).as_posix(), "content_type": ctype,
               "bytes": len(page["raw"])}
        if ctype.startswith("video/"):
            try:
                out["probe"] = _media.probe_video(str(dest))
            except _media.MediaError as exc:
                out["probe_error"] = str(exc)
        return out

    # -- evidence ---------------------------------------------------------------------------------
    def _record_evidence(self, claim: str, modality: str, excerpt: str, source_url: str | None = None,
                         relation: str | None = None, video_time_s: float | None = None, anchor: str | None = None,
                         date: str | None = None) -> dict:
        if relation is not None and relation not in _report.RELATIONS:
            raise ToolError(f"relation must be one of {', '.join(sorted(_report.RELATIONS))}")
        verification = "observed"
        if source_url:
            page = self.fetched.get(source_url)
            if page is None or page.get("status") != 200:
                raise ToolError(f"{source_url} has not been opened successfully; fetch it first")
            verification = ("excerpt_verified" if _report.normalize(excerpt) in _report.normalize(page["text"])
                            else "excerpt_not_found")
        elif modality != "video":
            raise ToolError("evidence from outside the video needs a source_url")
        if video_time_s is not None:
            dur = self._ensure_probe()["duration_s"] if "probe_video" in self.cap.tools else None
            if dur is not None and not 0 <= float(video_time_s) <= dur:
                raise ToolError(f"video_time_s {video_time_s} is outside the video (0 to {dur} s)")
        record = {"id": f"E{len(self.evidence) + 1}", "claim": claim, "modality": modality, "source_url": source_url,
                  "excerpt": excerpt, "relation": relation, "video_time_s": video_time_s, "anchor": anchor,
                  "date": date, "verification": verification}
        self.evidence.append(record)
        return {"id": record["id"], "verification": verification, "evidence_count": len(self.evidence)}

    # -- report -----------------------------------------------------------------------------------
    def _write_report(self, data: dict, merge: bool = False) -> dict:
        if not isinstance(data, dict):
            raise ToolError("data must be a JSON object (window.DATA)")
        # the renderer needs the video's duration: writing the report probes it when the data lacks it
        probe = self._ensure_probe()
        merged = {**(self.data or {}), **data} if merge else data
        written = _report.write_report(self.report_dir, self.contract_dir, self.video, merged, probe, self.contract)
        self.data = merged
        written["check"] = self._check_report()
        return written

    def _check_report(self) -> dict:
        dur = self.probe["duration_s"] if self.probe else None
        web = "fetch_url" in self.cap.tools
        return _report.check_report(self.report_dir, self.contract_dir, self.contract, dur,
                                    self.fetched if web else None, self.cap.workflow, self.budgets)


def tool_result_text(result: dict, limit: int = 20_000) -> str:
    text = json.dumps(result, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "...(truncated)"


def safe_arguments(raw: str | None) -> dict:
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        raise ToolError(f"arguments are not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ToolError("arguments must be a JSON object")
    return value


def phase(name: str) -> str:
    return PHASES.get(name, "other")


