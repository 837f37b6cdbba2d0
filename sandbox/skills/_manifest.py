"""The skill manifests: the one description of every research skill, from which the command line
(`omnidr-skill`), the Claude Code and Codex skill files (SKILL.md), the AGENTS.md section and the
reference agent's tool schemas are all generated.

Capability levels (paper App. F.5, Table 5) are cumulative; an action belongs to the lowest level that
installs it:

    interface_only  report render|check                      (the contract only)
    video           + video probe|windows|frames|transcript|read
    text_web        + search web, fetch, evidence add|list
    multimodal      + search images|videos|documents, doc read, media download (and fetch of documents
                      and video pages); the OpenDS-World environment's tools: download get, artifact
                      list|read, video sample|subtitles, browser open|click|fill|submit|read|back|close
    full            + research status and the video-research orchestration skill (workflow, reader
                      subagents, repair rounds)

The OpenDS-World tools sit at `multimodal`, the lowest rung whose paper 000 definition (App. F.5) holds
"download and inspection" of sources beyond web pages: they fetch and read files of any format, drive an
interactive browser and sample the source video at will, which is the unified environment OpenDS-World
gives every model at once (paper 002, App. C.1.1). The `video` rung keeps its window reader.

Task kinds. Each action says which task kinds it serves (`Action.kinds`): `report` (OmniDR-Bench) or
`short_answer` (OpenDS-World). The generated forms take the kind and default to `report`. The report
skill and the report's helpers (frames into the report's assets, media download into them, evidence
records for citations, the orchestration skill) serve reports only; `answer submit`, the short-answer
delivery, serves short answers only; reading the video, search, fetch, documents and the OpenDS-World tools
serve both. The host names the kind in OMNIDR_TASK_KIND.
"""

from dataclasses import dataclass
from typing import Literal

from sandbox.models import SHORT_ANSWER_KIND

LEVELS = ("interface_only", "video", "text_web", "multimodal", "full")

TASK_KINDS = ("report", "short_answer")
"""The task kinds the skills serve: the values of `omnidr.benchmark.TaskKind` the sandbox runs (its
BUILT_KINDS; the sandbox imports nothing from omnidr, a test keeps the two equal)."""
DEFAULT_KIND = "report"
REPORT_ONLY = ("report",)
BOTH_KINDS = TASK_KINDS


def level_index(level: str) -> int:
    if level not in LEVELS:
        raise ValueError(f"unknown capability {level!r}; choose one of {', '.join(LEVELS)}")
    return LEVELS.index(level)


def installed(level: str, needed: str) -> bool:
    """Whether something that needs capability `needed` is installed at `level`."""
    return level_index(needed) <= level_index(level)


def check_kind(kind: str) -> str:
    if kind not in TASK_KINDS:
        raise ValueError(f"unknown task kind {kind!r}; choose one of {', '.join(TASK_KINDS)}")
    return kind


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # JSON schema type: string, integer, number, boolean, object
    description: str
    required: bool = False
    positional: bool = False  # on the command line, a positional argument
    enum: tuple[str, ...] = ()


@dataclass(frozen=True)
class Action:
    name: str
    level: str
    phase: Literal["video", "search", "read", "write", "verify", "other"]  # omnidr.trajectory phase
    description: str
    params: tuple[Param, ...] = ()
    tool: str | None = None  # the reference agent's tool name (None: command line only)
    kinds: tuple[str, ...] = BOTH_KINDS  # the task kinds it serves (TASK_KINDS)

    def serves(self, level: str, kind: str = DEFAULT_KIND) -> bool:
        """Installed at capability `level` for a task of `kind`."""
        return installed(level, self.level) and check_kind(kind) in self.kinds


@dataclass(frozen=True)
class Skill:
    name: str  # command word: `omnidr-skill NAME ACTION`
    title: str  # skill name in SKILL.md
    summary: str  # SKILL.md description: what it does and when to use it
    actions: tuple[Action, ...]
    guide: str = ""  # SKILL.md body before the usage lines

    @property
    def level(self) -> str:
        return min((a.level for a in self.actions), key=level_index)

    def actions_at(self, level: str, kind: str = DEFAULT_KIND) -> list[Action]:
        return [a for a in self.actions if a.serves(level, kind)]


_WINDOW = Param("window", "integer", "Window number from 0 (windows of 300 s).", required=True)
_URL = Param("url", "string", "An http(s) URL.", required=True, positional=True)
_QUERY = Param("query", "string", "What to search for.", required=True, positional=True)
_START = Param("start", "number", "Start of the interval in seconds (default 0).")
_END = Param("end", "number", "End of the interval in seconds (default the end of the video).")
_PAGING = (Param("offset", "integer", "Character offset to continue from."),
           Param("max_chars", "integer", "At most this many characters (default 6000)."))

SKILLS: tuple[Skill, ...] = (
    # A short answer's delivery (`answer submit`, writing /output/answer.json; paper 002 App. C.2.3) belongs
    # here, beside the report it stands for: Skill("answer", ...) whose actions have kinds=("short_answer",).
    Skill("report", "omnidr-report", "Write the interactive HTML report (window.DATA into the contract's "
          "template) and check it. Use to deliver and validate the report.", (
              Action("render", "interface_only", "write", "Write the report: the window.DATA object from a JSON "
                     "file to data.js, the contract's template to index.html and the source video beside them; "
                     "video.duration_s is filled from the video when absent.",
                     (Param("data", "object", "The window.DATA object (on the command line: a JSON file, - for "
                            "stdin).", required=True),
                      Param("merge", "boolean", "Replace only the given top-level keys of the data already written.")),
                     tool="write_report", kinds=REPORT_ONLY),
              Action("check", "interface_only", "verify", "Check the written report: data shape, template copy, "
                     "local assets, times within the video, citations that resolve to opened sources whose text "
                     "holds the quotes.", tool="check_report", kinds=REPORT_ONLY),
          )),
    Skill("answer", "omnidr-answer", "Deliver the short answer of a question-answering task: write it to "
          "/output/answer.json. Use once, when the evidence settles the question (or the budget is spent).", (
              Action("submit", "interface_only", "write", "Write the final answer to /output/answer.json (a later "
                     "submission replaces it). Unless the question asks for another form: one direct English "
                     "paragraph of one to three sentences, at most 80 words. An empty answer is refused.",
                     (Param("text", "string", "The answer.", required=True, positional=True),),
                     kinds=(SHORT_ANSWER_KIND,)),
          )),
    Skill("video", "omnidr-video", "Read the source video: probe it, cut it into 300 s windows, sample frames "
          "uniformly as JPEG files you can open, and read the transcript with absolute times.", (
              Action("probe", "video", "video", "Duration, frame rate, resolution, audio and subtitle tracks, "
                     "and the number of reading windows.", tool="probe_video"),
              Action("windows", "video", "video", "The reading windows: index, start and end in seconds."),
              Action("frames", "video", "video", "Frames sampled uniformly (slice centres) in one window, written "
                     "as JPEG under the report's assets/ folder (usable as timeline media).",
                     (_WINDOW, Param("count", "integer", "Frames to sample (1 to 24, default 6).")), kinds=REPORT_ONLY),
              Action("transcript", "video", "video", "The speech of one window (all windows when omitted) with "
                     "absolute times: from the video's subtitle track, from the caption track fetched with the "
                     "video, or speech-to-text of its audio through the model gateway (counted against the budget).",
                     (Param("window", "integer", "Window number from 0."),
                      Param("source", "string", "auto (the first of subtitles, captions, speech the sandbox has), "
                            "subtitles, captions or speech.", enum=("auto", "subtitles", "captions", "speech")))),
              Action("read", "video", "video", "Frames and transcript of one window together.",
                     (Param("index", "integer", "Window number from 0.", required=True),
                      Param("frames", "integer", "Frames to sample (1 to 24, default 6).")), tool="read_window",
                     kinds=REPORT_ONLY),
              Action("sample", "multimodal", "video", "Frames of the whole video or of [start, end]: COUNT frames "
                     "(default 10, 1 to 100) at the midpoints of COUNT equal intervals, written as JPEG files "
                     "under the artifacts folder, each with its time.",
                     (_START, _END, Param("count", "integer", "Frames to sample (default 10, 1 to 100).")),
                     tool="sample_video"),
              Action("subtitles", "multimodal", "video", "Timestamped subtitle lines of the whole video or of "
                     "[start, end]: from its subtitle track, else the caption track fetched with it, else "
                     "speech-to-text of its audio through the model gateway (counted against the budget).",
                     (_START, _END), tool="read_subtitles"),
          )),
    Skill("search", "omnidr-search", "Search the web through the sandbox's search door. Results are URLs and "
          "titles only: open a result to read it.", (
              Action("web", "text_web", "search", "Search web pages.", (_QUERY,), tool="search_web"),
              Action("images", "multimodal", "search", "Search images.", (_QUERY,)),
              Action("videos", "multimodal", "search", "Search videos related to the topic.", (_QUERY,)),
              Action("documents", "multimodal", "search", "Search documents (PDF data sheets, papers, manuals).",
                     (_QUERY,)),
          )),
    Skill("fetch", "omnidr-fetch", "Open a web page through the sandbox's proxy and return its text. Documents "
          "and video pages need multimodal retrieval.", (
              Action("url", "text_web", "read", "Open a URL and return its text (HTML converted).",
                     (_URL, Param("offset", "integer", "Character offset to continue from."),
                      Param("max_chars", "integer", "At most this many characters (default 6000).")),
                     tool="fetch_url"),
          )),
    Skill("doc", "omnidr-doc", "Read a document (PDF) from the web as text.", (
        Action("read", "multimodal", "read", "Download a document through the proxy and return its text.",
               (_URL, Param("offset", "integer", "Character offset to continue from."),
                Param("max_chars", "integer", "At most this many characters (default 6000)."))),
    )),
    Skill("media", "omnidr-media", "Download an image or a related video into the report's assets/ folder.", (
        Action("download", "multimodal", "read", "Download an image or video file into assets/media/ (videos "
               "are probed).", (_URL,), tool="download_media", kinds=REPORT_ONLY),
    )),
    Skill("download", "omnidr-download", "Download a file of any kind (PDF, CSV, ZIP, audio, video, image, "
          "HTML) from the web into the artifacts folder, to read it with omnidr-artifact.", (
              Action("get", "multimodal", "read", "Download a URL through the sandbox's proxy into the artifacts "
                     "folder (/output/artifacts/) under a safe, unique file name, up to the size cap; returns "
                     "its path, content type, size and sha256.", (_URL,), tool="download_file"),
          )),
    Skill("artifact", "omnidr-artifact", "Read downloaded files by format: PDF text page by page, CSV rows with "
          "a column filter, ZIP members, audio and video facts and frames, images, HTML and text.", (
              Action("list", "multimodal", "read", "The files downloaded so far: path, URL, content type, size."),
              Action("read", "multimodal", "read", "Read a downloaded file (a path in the artifacts folder, or "
                     "absolute): PDF text with page numbers; CSV header, row count and rows (--where COL=VALUE "
                     "keeps matching rows); ZIP member list (--member NAME reads one member the same way); audio "
                     "and video facts, and frames of a video; an image's size and a JPEG view of it; HTML and "
                     "plain text.",
                     (Param("path", "string", "The file: as `download get` returned it, or its name in the "
                            "artifacts folder.", required=True, positional=True),
                      Param("member", "string", "In a ZIP: the member to read."),
                      Param("where", "string", "In a CSV: COL=VALUE keeps the rows whose column COL equals VALUE "
                            "(case and surrounding spaces ignored)."),
                      *_PAGING), tool="read_artifact"),
          )),
    Skill("browser", "omnidr-browser", "A persistent browser (Chromium) for pages that need interaction: "
          "follow links, fill and submit forms (parameterized queries), go back. Cookies, the current page "
          "and form state persist from one command to the next until `browser close`.", (
              Action("open", "multimodal", "read", "Open a URL in the browser (started by the first open) and "
                     "return the page: its text, links and form fields.", (_URL,), tool="browser_open"),
              Action("click", "multimodal", "read", "Click a link or button by its visible text (or its URL), "
                     "or any element by CSS selector, and return the page it leads to.",
                     (Param("target", "string", "Link or button text, a link's URL, or a CSS selector.",
                            required=True, positional=True),), tool="browser_click"),
              Action("fill", "multimodal", "read", "Type a value into a form field (a select takes an option's "
                     "value or text, a checkbox on/off); the field is named by CSS selector, name or label.",
                     (Param("selector", "string", "The field: CSS selector (as `browser read` lists it), name or "
                            "label.", required=True, positional=True),
                      Param("value", "string", "The value.", required=True, positional=True)),
                     tool="browser_fill"),
              Action("submit", "multimodal", "read", "Submit a form (default: the one last filled, else the "
                     "page's first) and return the resulting page; a GET form makes a parameterized query.",
                     (Param("selector", "string", "A form, a field in it, or its submit button.",
                            positional=True),), tool="browser_submit"),
              Action("read", "multimodal", "read", "The current page: URL, title, text, links and form fields.",
                     _PAGING, tool="browser_read"),
              Action("back", "multimodal", "read", "Go back to the previous page and return it.",
                     tool="browser_back"),
              Action("close", "multimodal", "other", "Close the browser; its cookies and pages are gone."),
          )),
    Skill("evidence", "omnidr-evidence", "Keep evidence records with provenance: claim, source, verbatim "
          "excerpt, relation to the video, time, anchor and date.", (
              Action("add", "text_web", "other", "Record one piece of evidence. The excerpt must be copied "
                     "verbatim from an opened source (or be the transcript or frame observation for video "
                     "evidence); it is checked against the fetched text.",
                     (Param("claim", "string", "What the evidence says.", required=True),
                      Param("modality", "string", "Where it comes from.", required=True,
                            enum=("video", "web", "document", "image")),
                      Param("source_url", "string", "Opened URL (omit for video evidence)."),
                      Param("excerpt", "string", "Verbatim excerpt.", required=True),
                      Param("relation", "string", "Its relation to the video.",
                            enum=("application", "comparison", "contradiction", "explanation", "support", "update")),
                      Param("video_time_s", "number", "The video moment it relates to."),
                      Param("anchor", "string", "Research anchor id it answers."),
                      Param("date", "string", "Publication date of the source, if known.")),
                     tool="record_evidence", kinds=REPORT_ONLY),
              Action("list", "text_web", "read", "Every evidence record so far, with its id and verification.",
                     kinds=REPORT_ONLY),
          )),
    Skill("research", "video-research", "Orchestrate video-centered deep research: the seven-stage workflow "
          "with video-reader and doc-reader subagents, source budgets and repair rounds.", (
              Action("status", "full", "other", "Progress against the workflow's budgets: sources by kind, "
                     "records per anchor, windows read, report checks and repair rounds left.", kinds=REPORT_ONLY),
          ), guide=(
              "Follow the workflow stage by stage and carry your notes across stages:\n"
              "1. Intake: `omnidr-skill video probe`; plan against the request.\n"
              "2. Timeline: give each window to a video-reader subagent (your harness's subagent or task "
              "tool) with `omnidr-skill video read --index N`; merge their time-aligned notes.\n"
              "3. Anchors: the claims, entities, steps and parameters the request depends on, each with its "
              "time and goal (explain, verify, compare, update, apply).\n"
              "4. Research: per anchor, search web pages, related videos and documents; hand documents to a "
              "doc-reader subagent (`omnidr-skill doc read URL`); record every piece of evidence with "
              "`omnidr-skill evidence add`.\n"
              "5. Synthesis: relate each record to the video; a correction or comparison needs independent "
              "support.\n"
              "6. Write: `omnidr-skill report render --data FILE`.\n"
              "7. Validate and repair: `omnidr-skill report check`; fix every problem, at most the repair "
              "rounds `research status` shows, then deliver.\n"
              "Budgets (hyperparameters.json): web sources, related videos, documents and records per anchor; "
              "`omnidr-skill research status` shows where you stand.")),
)

BY_NAME = {s.name: s for s in SKILLS}


def skills_at(level: str, kind: str = DEFAULT_KIND) -> list[Skill]:
    """The skills installed at `level` for a task of `kind` (at least one action)."""
    return [s for s in SKILLS if s.actions_at(level, kind)]


def find_action(skill: str, action: str) -> Action:
    if skill not in BY_NAME:
        raise KeyError(f"no skill {skill!r}; the skills are {', '.join(BY_NAME)}")
    match = [a for a in BY_NAME[skill].actions if a.name == action]
    if not match:
        raise KeyError(f"the {skill} skill has no action {action!r}; its actions are "
                       f"{', '.join(a.name for a in BY_NAME[skill].actions)}")
    return match[0]


def phase_of_command(skill: str, action: str) -> Literal["video", "search", "read", "write", "verify", "other"] | None:
    """The phase of `omnidr-skill SKILL ACTION`, None when it names no action."""
    try:
        return find_action(skill, action).phase
    except KeyError:
        return None


# ---- generated forms ----------------------------------------------------------------------------------

def _usage(skill: Skill, a: Action) -> str:
    words = ["omnidr-skill", skill.name, a.name]
    for p in a.params:
        flag = p.name.upper() if p.positional else f"--{p.name.replace('_', '-')}" + (
            "" if p.type == "boolean" else f" {p.name.upper()}")
        words.append(flag if p.required else f"[{flag}]")
    return " ".join(words)


def skill_md(skill: Skill, level: str, kind: str = DEFAULT_KIND) -> str:
    """SKILL.md (Agent Skills format, read by Claude Code and Codex) for the actions installed at `level` for a
    task of `kind`."""
    lines = ["---", f"name: {skill.title}", f"description: {skill.summary}", "---", "", f"# {skill.title}", ""]
    if skill.guide:
        lines += [skill.guide, ""]
    lines += ["Run in the shell; every command prints JSON (exit 0), or an error on stderr (exit 1).", ""]
    for a in skill.actions_at(level, kind):
        lines.append(f"- `{_usage(skill, a)}`: {a.description}")
        for p in a.params:
            enum = f" One of: {', '.join(p.enum)}." if p.enum else ""
            lines.append(f"  - `{p.name}` ({p.type}{', required' if p.required else ''}): {p.description}{enum}")
    return "\n".join(lines) + "\n"


def agents_md(level: str, kind: str = DEFAULT_KIND) -> str:
    """The AGENTS.md section naming every skill installed for a task of `kind` (for harnesses that read
    AGENTS.md)."""
    lines = ["# Research skills", "", f"Capability level `{level}`. These commands are installed in this sandbox:", ""]
    for s in skills_at(level, kind):
        lines.append(f"## {s.title}: {s.summary}")
        lines += [f"- `{_usage(s, a)}`: {a.description}" for a in s.actions_at(level, kind)]
        lines.append("")
    return "\n".join(lines)


def tool_schemas(level: str, media_search: bool | None = None, kind: str = DEFAULT_KIND) -> list[dict]:
    """The reference agent's tool schemas (Chat Completions `function` tools) at `level` for a task of `kind`."""
    media = installed(level, "multimodal") if media_search is None else media_search
    out = []
    for s in SKILLS:
        for a in s.actions_at(level, kind):
            if not a.tool:
                continue
            props = {}
            for p in a.params:
                prop: dict = {"type": p.type, "description": p.description}
                if p.enum:
                    prop["enum"] = list(p.enum)
                props[p.name] = prop
            if a.tool == "search_web" and media:
                props["kind"] = {"type": "string", "enum": ["any", "web", "video", "document", "image"]}
            out.append({"type": "function", "function": {"name": a.tool, "description": a.description, "parameters": {
                "type": "object", "properties": props, "required": [p.name for p in a.params if p.required],
                "additionalProperties": False}}})
    return out


TOOL_ACTIONS = {a.tool: (s.name, a.name) for s in SKILLS for a in s.actions if a.tool}
