"""The research skills every harness gets (paper Sec. 2.2, App. D): video reading, the search door,
page and document reading, media download, evidence records, report rendering and checking, and the
video-research orchestration skill.

One implementation (`Workspace`), described once (`_manifest.SKILLS`), reached three ways: the
`omnidr-skill` command in every agent image (CLI harnesses call it from their shell), the skill files
generated from the manifests (SKILL.md for Claude Code and Codex, an AGENTS.md section), and the
reference agent's tools. The capability level (App. F.5) decides which actions are installed, and the task kind
(report or short_answer) which of them serve the task: the report skill delivers a report, `answer submit` a short
answer (OpenDS-World). OpenDS-World's environment (paper 002, App. C.1) adds the downloads and their readers
(`_artifacts`), the persistent browser (`_browser`) and the interval video reader.
Standard library and the shared report models (pydantic, in every agent image's venv), besides ffmpeg.
"""

from ._answer import OUTPUT_DIR_ENV, EmptyAnswer, output_dir, submit_answer, write_answer_file
from ._manifest import (
    BY_NAME,
    DEFAULT_KIND,
    LEVELS,
    SKILLS,
    TASK_KINDS,
    TOOL_ACTIONS,
    Action,
    Skill,
    agents_md,
    installed,
    phase_of_command,
    skill_md,
    skills_at,
    tool_schemas,
)
from ._media import WINDOW_S, MediaError, caption_cues, parse_srt, probe_video, sample_times, transcript
from ._web import SearchIndex, classify
from ._workspace import NotInstalled, SkillError, Workspace

PHASES = {tool: next(a.phase for a in BY_NAME[s].actions if a.name == act) for tool, (s, act) in TOOL_ACTIONS.items()}
"""The reference agent's tool name -> phase of its skill action."""

__all__ = ["OUTPUT_DIR_ENV", "EmptyAnswer", "output_dir", "submit_answer", "write_answer_file",
           "BY_NAME", "DEFAULT_KIND", "LEVELS", "TASK_KINDS", "PHASES", "SKILLS", "TOOL_ACTIONS", "Action", "NotInstalled",
           "Skill", "SkillError",
           "MediaError", "caption_cues", "parse_srt", "WINDOW_S", "SearchIndex", "Workspace", "agents_md", "classify", "installed", "phase_of_command", "probe_video",
           "sample_times", "skill_md", "skills_at", "tool_schemas", "transcript"]
