"""The skill manifests: the one description of every research skill, from which the command line
(`omnidr-skill`), the Claude Code and Codex skill files (SKILL.md), the AGENTS.md section and the
reference agent's tool schemas are all generated.

Capability levels (paper App. F.5, Table 5) are cumulative; an action belongs to the lowest level that
installs it:

    interface_only  report render|check                      (the contract only)
    video           + video probe|windows|frames|transcript|read
    text_web        + search web, fetch, evidence add|list
    multimodal      + search images|videos|documents, doc read, media download (and fetch of documents
                      and video pages)
    full            + research status and the video-research orchestration skill (workflow, reader
                      subagents, repair rounds)

An action may also belong to some task kinds only (`Action.kinds`; empty: every kind): `answer submit`, the
short-answer delivery, is installed for `short_answer` tasks only, and every install and listing takes the
task kind (`OMNIDR_TASK_KIND`, default `report`).
"""

from dataclasses import dataclass
from typing import Literal

from sandbox.models import SHORT_ANSWER_KIND

LEVELS = ("interface_only", "video", "text_web", "multimodal", "full")
REPORT_KIND = "report"  # the task kind when OMNIDR_TASK_KIND is unset


def level_index(level: str) -> int:
    if level not in LEVELS:
        raise ValueError(f"unknown capability {level!r}; choose one of {', '.join(LEVELS)}")
    return LEVELS.index(level)


def installed(level: str, needed: str) -> bool:
    """Whether something that needs capability `needed` is installed at `level`."""
    return level_index(needed) <= level_index(level)


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
    kinds: tuple[str, ...] = ()  # the task kinds it is installed for (sandbox.models TASK_KIND_ENV values); (): all


def for_kind(action: Action, kind: str) -> bool:
    """Whether `action` is installed for tasks of `kind`."""
    return not action.kinds or kind in action.kinds


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

    def actions_at(self, level: str, kind: str = REPORT_KIND) -> list[Action]:
        return [a for a in self.actions if installed(level, a.level) and for_kind(a, kind)]


_WINDOW = Param("window", "integer", "Window number from 0 (windows of 300 s).", required=True)
_URL = Param("url", "string", "An http(s) URL.", required=True, positional=True)
_QUERY = Param("query", "string", "What to search for.", required=True, positional=True)

SKILLS: tuple[Skill, ...] = (
    Skill("report", "omnidr-report", "Write the interactive HTML report (window.DATA into the contract's "
          "template) and check it. Use to deliver and validate the report.", (
              Action("render", "interface_only", "write", "Write the report: the window.DATA object from a JSON "
                     "file to data.js, the contract's template to index.html and the source video beside them; "
                     "video.duration_s is filled from the video when absent.",
                     (Param("data", "object", "The window.DATA object (on the command line: a JSON file, - for "
                            "stdin).", required=True),
                      Param("merge", "boolean", "Replace only the given top-level keys of the data already written.")),
                     tool="write_report"),
              Action("check", "interface_only", "verify", "Check the written report: data shape, template copy, "
                     "local assets, times within the video, citations that resolve to opened sources whose text "
                     "holds the quotes.", tool="check_report"),
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
                     (_WINDOW, Param("count", "integer", "Frames to sample (1 to 24, default 6)."))),
              Action("transcript", "video", "video", "The speech of one window (all windows when omitted) with "
                     "absolute times: from the video's subtitle track, from the caption track fetched with the "
                     "video, or speech-to-text of its audio through the model gateway (counted against the budget).",
                     (Param("window", "integer", "Window number from 0."),
                      Param("source", "string", "auto (the first of subtitles, captions, speech the sandbox has), "
                            "subtitles, captions or speech.", enum=("auto", "subtitles", "captions", "speech")))),
              Action("read", "video", "video", "Frames and transcript of one window together.",
                     (Param("index", "integer", "Window number from 0.", required=True),
                      Param("frames", "integer", "Frames to sample (1 to 24, default 6).")), tool="read_window"),
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
               "are probed).", (_URL,), tool="download_media"),
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
                     tool="record_evidence"),
              Action("list", "text_web", "read", "Every evidence record so far, with its id and verification."),
          )),
    Skill("research", "video-research", "Orchestrate video-centered deep research: the seven-stage workflow "
          "with video-reader and doc-reader subagents, source budgets and repair rounds.", (
              Action("status", "full", "other", "Progress against the workflow's budgets: sources by kind, "
                     "records per anchor, windows read, report checks and repair rounds left."),
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


def skills_at(level: str, kind: str = REPORT_KIND) -> list[Skill]:
    """The skills installed at `level` for tasks of `kind` (at least one action)."""
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


def skill_md(skill: Skill, level: str, kind: str = REPORT_KIND) -> str:
    """SKILL.md (Agent Skills format, read by Claude Code and Codex) for the actions installed at `level`."""
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


def agents_md(level: str, kind: str = REPORT_KIND) -> str:
    """The AGENTS.md section naming every installed skill (for harnesses that read AGENTS.md)."""
    lines = ["# Research skills", "", f"Capability level `{level}`. These commands are installed in this sandbox:", ""]
    for s in skills_at(level, kind):
        lines.append(f"## {s.title}: {s.summary}")
        lines += [f"- `{_usage(s, a)}`: {a.description}" for a in s.actions_at(level, kind)]
        lines.append("")
    return "\n".join(lines)


def tool_schemas(level: str, media_search: bool | None = None) -> list[dict]:
    """The reference agent's tool schemas (Chat Completions `function` tools) at `level`."""
    media = installed(level, "multimodal") if media_search is None else media_search
    out = []
    for s in SKILLS:
        for a in s.actions_at(level):
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
