"""The reference agent's tools: JSON schemas for the model and their implementations, over one shared
research state (probe, fetched pages, evidence records, report)."""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.skills import PHASES, TOOL_ACTIONS, WINDOW_S, SearchIndex, SkillError, Workspace, tool_schemas

from ._capability import Capability

ToolError = SkillError  # a tool call the agent can learn from: bad arguments, missing prerequisite, failed fetch


@dataclass(frozen=True)
class ToolSettings:
    """How the reference agent's research workspace is set up (see `sandbox.skills.Workspace`)."""

    search: SearchIndex | None = None
    """The offline search index; None: none (or the search door)."""
    window_s: float = WINDOW_S
    """The length of one video reading window, seconds."""
    frames_per_window: int = 6
    budgets: Mapping[str, int] = field(default_factory=dict)
    """App. D.3's minimum counts (web, video, document sources, records per anchor)."""
    max_repairs: int = 3
    """The most repairs of the report after a failed check."""
    state_dir: Path | None = None
    speech_url: str | None = None
    """The gateway's OpenAI-compatible base URL (/v1) for speech-to-text."""
    speech_key: str | None = None
    captions: Sequence[str] = ()
    """Caption files fetched with the video."""
    door: str | None = None
    """The search door, PROVIDER@BASE_URL; None: the offline index."""
    denylist: Sequence[str] = ()
    """Hosts whose results the door leaves out."""
    artifacts_dir: Path | None = None
    """Downloads, sampled frames and views of files; None: the workspace's default."""


class ToolBox:
    """The reference agent's tools: the research skills (`sandbox.skills`) called by their tool names, over
    one in-memory workspace. The schemas come from the skill manifests."""

    def __init__(self, cap: Capability, video: str, report_dir: Path, contract_dir: Path,
                 settings: ToolSettings = ToolSettings()):
        self.cap = cap
        s = settings
        self.ws = Workspace(cap.name, video, report_dir, contract_dir, search=s.search, window_s=s.window_s,
                            frames_per_window=s.frames_per_window, budgets=dict(s.budgets or {}),
                            max_repairs=s.max_repairs, workflow=cap.workflow, state_dir=s.state_dir,
                            speech_url=s.speech_url, speech_key=s.speech_key, captions=list(s.captions), door=s.door,
                            denylist=list(s.denylist), kind=cap.kind)
        if s.artifacts_dir is not None:
            self.ws.artifacts_dir = s.artifacts_dir

    report_dir = property(lambda self: self.ws.report_dir)
    fetched = property(lambda self: self.ws.fetched)
    evidence = property(lambda self: self.ws.evidence)
    probe = property(lambda self: self.ws.probe)
    budgets = property(lambda self: self.ws.budgets, lambda self, value: setattr(self.ws, "budgets", value))
    max_repairs = property(lambda self: self.ws.max_repairs)

    def schemas(self) -> list[dict]:
        return [s for s in tool_schemas(self.cap.name, self.cap.media_search, self.cap.kind)
                if s["function"]["name"] in self.cap.tools]

    def close(self) -> None:
        """Stop what outlives a call: the browser daemon, when one was started."""
        self.ws.close()

    def call(self, name: str, arguments: dict) -> dict:
        if name not in self.cap.tools or name not in TOOL_ACTIONS:
            raise ToolError(f"no tool {name!r} at capability {self.cap.name}")
        if not isinstance(arguments, dict):
            raise ToolError("arguments must be a JSON object")
        skill, action = TOOL_ACTIONS[name]
        with self.ws.locked():
            if name == "search_web":  # one tool for every kind; the kind filter from the multimodal level on
                args = dict(arguments)
                kind = args.pop("kind", None) if self.cap.media_search else "web"
                self.ws.need("text_web", "search_web")
                return self.ws.search_kind(args.pop("query"), None if kind == "any" else kind, **args)
            return self.ws.run(skill, action, arguments)


def tool_result_text(result: dict | None, limit: int = 20_000) -> str:
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
    """The phase a tool's native-log line carries (its skill action's)."""
    return PHASES.get(name, "other")


