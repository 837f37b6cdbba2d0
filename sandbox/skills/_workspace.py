"""The research skills' implementation, shared by the `omnidr-skill` command and the reference agent.

A `Workspace` is the research state of one attempt: the video's probe, the pages opened, the evidence
records and the report data. The reference agent keeps one in memory for its whole run; the command
line loads it from a state folder (`OMNIDR_SKILL_STATE`) before each call and saves it after, under a
file lock, so that a CLI harness's shell calls share it. Every action is gated by the capability level:
an action of a higher level fails as a missing command would (`NotInstalled`).
"""

import contextlib
import fcntl
import hashlib
import json
import mimetypes
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.models import ARTIFACTS_DIR

from . import _answer, _artifacts, _browser, _media, _report, _speech, _web
from ._manifest import DEFAULT_KIND, check_kind, installed

FETCH_KINDS_BELOW_MULTIMODAL = ("web",)


class SkillError(Exception):
    """A call the agent can learn from: bad arguments, missing prerequisite, failed fetch."""


class NotInstalled(SkillError):
    """The action exists, but not at this capability level."""


TRANSCRIPT_SOURCES = ("auto", "subtitles", "captions", "speech")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass
class Workspace:
    level: str
    video: str
    report_dir: Path
    contract_dir: Path
    search: _web.SearchIndex | None = None
    window_s: float = _media.WINDOW_S
    frames_per_window: int = 6
    budgets: dict[str, int] = field(default_factory=dict)  # App. D.3 minimum counts
    max_repairs: int = 3
    max_tool_chars: int = 6000
    workflow: bool = False  # required-process checks (full workflow)
    state_dir: Path | None = None
    speech_url: str | None = None  # the gateway's OpenAI-compatible base URL (/v1) for speech-to-text
    speech_key: str | None = None  # the attempt's dummy token: the gateway holds the real key
    speech_model: str = _speech.DEFAULT_MODEL
    captions: list[str] = field(default_factory=list)  # caption files fetched with the video (OMNIDR_CAPTIONS)
    door: str | None = None  # the search door, PROVIDER@BASE_URL (OMNIDR_SEARCH_DOOR); None: the offline index
    denylist: list[str] = field(default_factory=list)  # hosts whose results the door leaves out
    output_dir: Path | None = None  # the agent's /output (answer.json of a short-answer task); None: OMNIDR_OUTPUT_DIR
    kind: str = DEFAULT_KIND  # the task kind (OMNIDR_TASK_KIND): which actions serve it
    artifacts_dir: Path = Path("/output") / ARTIFACTS_DIR  # downloads, sampled frames, views of files
    max_download_bytes: int = _artifacts.MAX_DOWNLOAD_BYTES
    sample_frames: int = _media.SAMPLE_FRAMES  # the video reader's default count (App. C.1.2) ...
    sample_frames_max: int = _media.SAMPLE_FRAMES_MAX  # ... and its most per call
    probe: dict | None = None
    fetched: dict[str, dict] = field(default_factory=dict)  # url -> {status, text, title, kind}
    evidence: list[dict] = field(default_factory=list)
    data: dict | None = None
    windows_read: list[int] = field(default_factory=list)
    checks: int = 0

    def __post_init__(self):
        check_kind(self.kind)
        path = self.contract_dir / "contract.json"
        self.contract = json.loads(path.read_text("utf-8")) if path.is_file() else {}
        self._browser: _browser.BrowserClient | None = None
        self._own_dir: Path | None = None

    # -- state on disk (command line) ---------------------------------------------------------------
    STATE_FILE = "state.json"

    @contextlib.contextmanager
    def locked(self):
        """Load the state, yield, save it: one call at a time per state folder."""
        if self.state_dir is None:
            yield
            return
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with open(self.state_dir / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._load()
            try:
                yield
            finally:
                self._save()

    def _load(self) -> None:
        if self.state_dir is None:
            raise RuntimeError("the workspace has no state folder to load its state from")
        path = self.state_dir / self.STATE_FILE
        if not path.is_file():
            return
        s = json.loads(path.read_text("utf-8"))
        # a probe is of one video file: another video (a reused state folder) is probed again
        self.probe = s.get("probe") if s.get("video") == self.video else None
        self.evidence, self.data = s.get("evidence", []), s.get("data")
        self.windows_read, self.checks = s.get("windows_read", []), s.get("checks", 0)
        self.fetched = {}
        for url, page in s.get("fetched", {}).items():
            text_file = self.state_dir / "pages" / page.pop("text_file", "")
            page["text"] = text_file.read_text("utf-8") if text_file.is_file() else ""
            self.fetched[url] = page

    def _save(self) -> None:
        if self.state_dir is None:
            raise RuntimeError("the workspace has no state folder to save its state in")
        pages = self.state_dir / "pages"
        pages.mkdir(exist_ok=True)
        fetched = {}
        for url, page in self.fetched.items():
            name = _sha(url) + ".txt"
            (pages / name).write_text(page.get("text", ""), "utf-8")
            fetched[url] = {**{k: v for k, v in page.items() if k != "text"}, "text_file": name}
        state = {"level": self.level, "video": self.video, "probe": self.probe, "fetched": fetched, "evidence": self.evidence,
                 "data": self.data, "windows_read": self.windows_read, "checks": self.checks}
        tmp = self.state_dir / f".{self.STATE_FILE}.tmp"
        tmp.write_text(json.dumps(state, ensure_ascii=False, indent=1), "utf-8")
        os.replace(tmp, self.state_dir / self.STATE_FILE)

    def need(self, level: str, what: str) -> None:
        if not installed(self.level, level):
            raise NotInstalled(f"{what} is not installed at capability {self.level} (it needs {level})")

    # -- video --------------------------------------------------------------------------------------
    def ensure_probe(self) -> dict:
        if self.probe is None:
            try:
                self.probe = _media.probe_video(self.video)
            except _media.MediaError as exc:
                raise SkillError(str(exc)) from None
        return self.probe

    def video_probe(self) -> dict:
        p = dict(self.ensure_probe())
        p["window_s"] = self.window_s
        p["windows"] = len(_media.windows(p["duration_s"], self.window_s))
        return p

    def video_windows(self) -> dict:
        wins = _media.windows(self.ensure_probe()["duration_s"], self.window_s)
        return {"window_s": self.window_s, "windows": [{"index": w.index, "start_s": w.start_s, "end_s": w.end_s}
                                                       for w in wins]}

    def video_frames(self, window: int, count: int | None = None) -> dict:
        n = max(1, min(24, int(count or self.frames_per_window)))
        try:
            out = _media.window_frames(self.video, self.ensure_probe(), int(window), self.report_dir / "assets", n,
                                       self.window_s, rel_to=self.report_dir)
        except _media.MediaError as exc:
            raise SkillError(str(exc)) from None
        if int(window) not in self.windows_read:
            self.windows_read.append(int(window))
        return out

    def video_transcript(self, window: int | None = None, source: str = "auto") -> dict:
        """The speech of one window (all windows when None), with absolute times. `source`: `subtitles` (the
        video's first subtitle track), `captions` (the caption track fetched with the video), `speech`
        (speech-to-text through the gateway), or `auto`: the first of these the sandbox has, else none."""
        probe = self.ensure_probe()
        if source not in TRANSCRIPT_SOURCES:
            raise SkillError(f"source must be {', '.join(TRANSCRIPT_SOURCES[:-1])} or {TRANSCRIPT_SOURCES[-1]}")
        wins = _media.windows(probe["duration_s"], self.window_s)
        if window is not None and not 0 <= int(window) < len(wins):
            raise SkillError(f"window {window} does not exist; the video has {len(wins)} window(s) "
                             f"of {self.window_s:g} s")
        chosen = wins if window is None else [wins[int(window)]]
        kind, cues = self._cues([(w.start_s, w.end_s) for w in chosen], source)
        out: dict[str, object] = {"transcript_source": kind, "transcript": cues}
        if window is not None:
            out = {"window": int(window), "start_s": chosen[0].start_s, "end_s": chosen[0].end_s, **out}
        return out

    def _cues(self, spans: list[tuple[float, float]], source: str) -> tuple[str, list[dict]]:
        """(transcript source, cues) of the speech within `spans` (seconds), from `source` (see video_transcript):
        speech-to-text reads each span; the other sources keep the cues that overlap a span."""
        probe = self.ensure_probe()
        if source == "auto":
            source = ("subtitles" if probe.get("subtitles") else "captions" if self.captions
                      else "speech" if self.speech_url else "none")
        if source == "speech":
            if not self.speech_url:
                raise SkillError("no speech-to-text endpoint is configured in this sandbox")
            cues = []
            for start_s, end_s in spans:
                try:
                    cues += _speech.transcribe(self.video, start_s, end_s, self.speech_url,
                                               self.speech_key or "", self.speech_model)
                except (RuntimeError, _media.MediaError) as exc:
                    raise SkillError(str(exc)) from None
            return "speech_to_text", cues
        if source == "captions" and not self.captions:
            raise SkillError("no caption track was fetched with this video; use --source subtitles or speech")
        try:
            if source == "captions":
                kind, cues = "captions", _media.caption_cues(self.captions[0])
            else:
                kind, cues = _media.transcript(self.video, probe.get("subtitles", []) if source == "subtitles" else [])
        except _media.MediaError as exc:
            raise SkillError(str(exc)) from None
        if source == "subtitles" and kind == "none":
            raise SkillError(f"the video has no subtitle track; use --source {'captions' if self.captions else 'speech'}")
        return kind, [c for c in cues if any(c["end_s"] > a and c["start_s"] < b for a, b in spans)]

    def _interval(self, start: float | None, end: float | None) -> tuple[float, float, str | None]:
        """[start, end] of the video in seconds (default the whole video): refused when it is empty or starts
        outside the video; an end past the video is cut to its end (the note says so)."""
        duration = float(self.ensure_probe()["duration_s"])
        start_s = 0.0 if start is None else float(start)
        end_s = duration if end is None else float(end)
        if not 0 <= start_s < duration:
            raise SkillError(f"--start {start_s:g} is outside the video, which lasts {duration:g} s")
        if end_s <= start_s:
            raise SkillError(f"--end {end_s:g} must be after --start {start_s:g}")
        note = None
        if end_s > duration:
            note, end_s = f"--end {end_s:g} is past the end of the video; cut to {duration:g} s", duration
        return round(start_s, 3), round(end_s, 3), note

    def video_sample(self, start: float | None = None, end: float | None = None, count: int | None = None) -> dict:
        """OpenDS-World's video reader (paper 002, App. C.1.2): `count` frames (default 10, 1 to 100) at the
        midpoints of `count` equal intervals of [start, end] (default the whole video), as JPEG files under the
        artifact folder's frames/, each with its time."""
        n = self.sample_frames if count is None else int(count)
        if not 1 <= n <= self.sample_frames_max:
            raise SkillError(f"--count {n} is outside 1 to {self.sample_frames_max}: the video reader samples "
                             f"between 1 and {self.sample_frames_max} frames a call")
        start_s, end_s, note = self._interval(start, end)
        try:
            frames = _media.sample_frames(self.video, start_s, end_s, n, self.artifacts_dir / "frames")
        except _media.MediaError as exc:
            raise SkillError(str(exc)) from None
        out: dict = {"start_s": start_s, "end_s": end_s, "count": n, "frames": frames}
        if note:
            out["note"] = note
        return out

    def video_subtitles(self, start: float | None = None, end: float | None = None) -> dict:
        """Timestamped lines of speech within [start, end] (default the whole video), from the first source the
        sandbox has: the video's subtitle track, the caption track fetched with it, speech-to-text (in spans of
        at most one reading window)."""
        start_s, end_s, note = self._interval(start, end)
        spans, t = [], start_s
        while t < end_s - 1e-6:
            spans.append((t, min(end_s, t + self.window_s)))
            t = spans[-1][1]
        kind, cues = self._cues(spans, "auto")
        lines = [{**c, "timestamp": _media.clock(c["start_s"])} for c in cues]
        out: dict = {"start_s": start_s, "end_s": end_s, "source": kind, "lines": lines}
        if kind == "none":
            out["note"] = "the video has no subtitle track, no caption track and no speech-to-text endpoint here"
        if note:
            out["note"] = note
        return out

    def video_read(self, index: int, frames: int | None = None) -> dict:
        shots = self.video_frames(index, frames)
        speech = self.video_transcript(index)
        return {**shots, "transcript_source": speech["transcript_source"], "transcript": speech["transcript"]}

    # -- web ----------------------------------------------------------------------------------------
    def search_kind(self, query: str, kind: str | None) -> dict:
        if self.door:
            try:
                results = _web.door_search(self.door, query, kind, self.denylist)
            except (OSError, ValueError) as exc:
                raise SkillError(f"search failed: {exc}") from None
            return {"query": query, "kind": kind or "any", "backend": self.door.partition("@")[0], "results": results}
        if self.search is None:
            raise SkillError("no search backend is configured in this sandbox; open known URLs directly")
        return {"query": query, "kind": kind or "any", "backend": "offline index",
                "results": self.search.search(query, kind)}

    def fetch_url(self, url: str, offset: int = 0, max_chars: int | None = None, document: bool = False) -> dict:
        try:
            page = _web.fetch(url)
        except (ValueError, OSError) as exc:
            self.fetched.setdefault(url, {"status": None, "text": "", "error": str(exc)})
            raise SkillError(f"fetch failed: {exc}") from None
        kind = _web.classify({"url": url, "content_type": page["content_type"]})
        if kind not in FETCH_KINDS_BELOW_MULTIMODAL and not installed(self.level, "multimodal"):
            raise NotInstalled(f"{url} is a {kind}: reading documents, images and video pages needs multimodal "
                               f"retrieval, not installed at capability {self.level}")
        if document and kind != "document":
            raise SkillError(f"{url} is not a document ({page['content_type'] or 'no content type'}); use fetch")
        self.fetched[url] = {"status": page["status"], "text": page["text"], "title": page["title"], "kind": kind}
        limit = max(200, min(int(max_chars or self.max_tool_chars), 50_000))
        start = int(offset or 0)
        return {"url": url, "status": page["status"], "kind": kind, "content_type": page["content_type"],
                "title": page["title"], "total_chars": len(page["text"]), "offset": start,
                "text": page["text"][start:start + limit]}

    def media_download(self, url: str) -> dict:
        try:
            page = _web.fetch(url)
        except (ValueError, OSError) as exc:
            raise SkillError(f"download failed: {exc}") from None
        if page["status"] != 200 or not page["raw"]:
            raise SkillError(f"download failed: status {page['status']}")
        ctype = page["content_type"].split(";")[0].strip()
        ext = mimetypes.guess_extension(ctype) or Path(url.split("?")[0]).suffix or ".bin"
        dest = self.report_dir / "assets" / "media" / (_sha(url)[:12] + ext)
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

    # -- artifacts (OpenDS-World, paper 002 App. C.1.1) ------------------------------------------------
    def download_get(self, url: str) -> dict:
        try:
            record = _artifacts.download(url, self.artifacts_dir, self.max_download_bytes)
        except _artifacts.ArtifactError as exc:
            raise SkillError(f"download failed: {exc}") from None
        return record.model_dump(include={"path", "url", "content_type", "bytes", "sha256"})

    def artifact_list(self) -> dict:
        return _artifacts.listing(self.artifacts_dir)

    def artifact_read(self, path: str, member: str | None = None, where: str | None = None,
                      offset: int | None = None, max_chars: int | None = None) -> dict:
        file = Path(path)
        if not file.is_absolute():
            file = self.artifacts_dir / file
        if not file.is_file():
            raise SkillError(f"no file {path}: give a path as `download get` returned it (`artifact list` shows them)")
        record = next((r for r in _artifacts.read_index(self.artifacts_dir) if Path(r.path) == file), None)
        try:
            limits = _artifacts.ReadLimits(self.artifacts_dir / "views", self.max_download_bytes, self.max_tool_chars)
            return _artifacts.read_artifact(file, record.content_type if record else "", member, where, offset,
                                            max_chars, limits)
        except _artifacts.ArtifactError as exc:
            raise SkillError(str(exc)) from None

    # -- the persistent browser (paper 002 App. C.1.1) -------------------------------------------------
    def browser(self) -> _browser.BrowserClient:
        if self._browser is None:
            home = self.state_dir
            if home is None:  # an in-memory workspace (the reference agent): a folder of its own for the socket
                home = self._own_dir = Path(tempfile.mkdtemp(prefix="omnidr-skills-"))
            self._browser = _browser.BrowserClient(home, self.artifacts_dir, self.max_download_bytes)
        return self._browser

    def close(self) -> None:
        """Stop what outlives a call (the browser daemon) and remove the workspace's own temporary folder."""
        if self._browser is not None:
            with contextlib.suppress(_browser.BrowserError):
                self._browser.call("close")
            self._browser = None
        if self._own_dir is not None:
            shutil.rmtree(self._own_dir, ignore_errors=True)
            self._own_dir = None

    def _browse(self, op: str, **args) -> dict:
        try:
            return self.browser().call(op, **{k: v for k, v in args.items() if v is not None})
        except _browser.BrowserError as exc:
            raise SkillError(str(exc)) from None

    def browser_open(self, url: str) -> dict:
        return self._browse("open", url=url)

    def browser_click(self, target: str) -> dict:
        return self._browse("click", target=target)

    def browser_fill(self, selector: str, value: str) -> dict:
        return self._browse("fill", selector=selector, value=value)

    def browser_submit(self, selector: str | None = None) -> dict:
        return self._browse("submit", selector=selector)

    def browser_read(self, offset: int | None = None, max_chars: int | None = None) -> dict:
        return self._browse("read", offset=offset, max_chars=max_chars)

    def browser_back(self) -> dict:
        return self._browse("back")

    def browser_close(self) -> dict:
        return self._browse("close")

    # -- evidence -----------------------------------------------------------------------------------
    def evidence_add(self, claim: str, modality: str, excerpt: str, source_url: str | None = None,
                     relation: str | None = None, video_time_s: float | None = None, anchor: str | None = None,
                     date: str | None = None) -> dict:
        if relation is not None and relation not in _report.RELATIONS:
            raise SkillError(f"relation must be one of {', '.join(_report.RELATIONS)}")
        if modality not in _report.SOURCE_TYPES:
            raise SkillError(f"modality must be one of {', '.join(_report.SOURCE_TYPES)}")
        verification = "observed"
        if source_url:
            page = self.fetched.get(source_url)
            if page is None or page.get("status") != 200:
                raise SkillError(f"{source_url} has not been opened successfully; fetch it first")
            verification = ("excerpt_verified" if _report.normalize(excerpt) in _report.normalize(page["text"])
                            else "excerpt_not_found")
        elif modality != "video":
            raise SkillError("evidence from outside the video needs a source_url")
        if video_time_s is not None and installed(self.level, "video"):
            dur = self.ensure_probe()["duration_s"]
            if not 0 <= float(video_time_s) <= dur:
                raise SkillError(f"video_time_s {video_time_s} is outside the video (0 to {dur} s)")
        record = {"id": f"E{len(self.evidence) + 1}", "claim": claim, "modality": modality, "source_url": source_url,
                  "title": (self.fetched.get(source_url) or {}).get("title") if source_url else None,
                  "excerpt": excerpt, "relation": relation, "video_time_s": video_time_s, "anchor": anchor,
                  "date": date, "verification": verification}
        self.evidence.append(record)
        return {"id": record["id"], "verification": verification, "evidence_count": len(self.evidence)}

    def evidence_list(self) -> dict:
        return {"evidence": self.evidence}

    # -- report -------------------------------------------------------------------------------------
    def report_render(self, data: dict, merge: bool = False) -> dict:
        if not isinstance(data, dict):
            raise SkillError("data must be a JSON object (window.DATA)")
        probe = self.ensure_probe()  # the renderer needs the video's duration when the data lacks it
        merged = {**(self.data or {}), **data} if merge else data
        written = _report.write_report(self.report_dir, self.contract_dir, self.video, merged, probe, self.contract)
        self.data = merged
        written["check"] = self.report_check()
        return written

    def report_check(self) -> dict:
        self.checks += 1
        dur = self.probe["duration_s"] if self.probe else None
        web = installed(self.level, "text_web")
        return _report.check_report(self.report_dir, self.contract_dir, self.contract, dur,
                                    self.fetched if web else None, self.workflow, self.budgets)

    # -- short answer -------------------------------------------------------------------------------
    def answer_submit(self, text: str) -> dict:
        """Deliver the short answer (`/output/answer.json`); an empty one raises `_answer.EmptyAnswer`."""
        return _answer.submit_answer(text, self.output_dir or _answer.output_dir())

    # -- orchestration ------------------------------------------------------------------------------
    def research_status(self) -> dict:
        opened = {u: p for u, p in self.fetched.items() if p.get("status") == 200}
        by_kind = {k: sum(1 for p in opened.values() if p.get("kind") == k) for k in ("web", "video", "document",
                                                                                       "image")}
        anchors: dict[str, int] = {}
        for r in self.evidence:
            if r.get("anchor") and r.get("source_url"):
                anchors[r["anchor"]] = anchors.get(r["anchor"], 0) + 1
        total = len(_media.windows(self.probe["duration_s"], self.window_s)) if self.probe else None
        # App. D.3: the budgets' `web` (B_web) is over external sources of every kind: `opened_external` is that count
        return {"windows_read": sorted(self.windows_read), "windows": total, "opened": by_kind,
                "opened_external": len(opened),
                "evidence": len(self.evidence), "records_per_anchor": anchors, "budgets": self.budgets,
                "checks": self.checks, "repair_rounds_left": max(0, self.max_repairs - max(0, self.checks - 1))}

    # -- dispatch -----------------------------------------------------------------------------------
    def run(self, skill: str, action: str, args: dict) -> dict:
        """One action by name, gated by the level. Raises SkillError (NotInstalled when not installed)."""
        from ._manifest import find_action

        try:
            a = find_action(skill, action)
        except KeyError as exc:
            raise SkillError(str(exc.args[0])) from None
        self.need(a.level, f"`{skill} {action}`")
        if self.kind not in a.kinds:
            raise NotInstalled(f"`{skill} {action}` is not installed for {self.kind} tasks (it serves "
                               f"{' and '.join(a.kinds)} tasks)")
        if skill == "search":
            kind = {"web": "web", "images": "image", "videos": "video", "documents": "document"}[action]
            return self.search_kind(args["query"], kind)
        if skill == "doc":
            return self.fetch_url(document=True, **args)
        method = {("fetch", "url"): self.fetch_url}.get((skill, action)) or getattr(self, f"{skill}_{action}")
        return method(**args)
