"""Tool use of one trajectory for the short-answer analysis: calls by category, the latency spent on failed calls,
and category-to-category transitions (paper 002, Sec. 3.4-3.5, App. E).

Categories come from the tool's name (the reference agent's tools) or from the research skill a shell command ran
(`omnidr-skill GROUP ACTION`, kept as the call's `skill`): search (`search_web`), browse (the persistent browser,
`browser_*`), read (`fetch_url`, `read_artifact`, documents), download (`download_file`, `download_*`), video (`sample_video`,
`read_subtitles`) and other. `TOOL_CATEGORIES` is the one table.

Latency: the calls of one model turn are taken to run one after another, as the reference agent runs them. A
call's latency is the time from the turn (for its first call) or the previous call's result to its own result;
a call without both timestamps is not timed. A call failed when its result is an error.
"""

import json
import re
from typing import TYPE_CHECKING

from ._answer_models import TOOL_CATEGORY_ORDER, ToolCategory, ToolUse

if TYPE_CHECKING:
    from datetime import datetime

    from omnidr.trajectory import Observation, Trajectory

TOOL_CATEGORIES: dict[str, ToolCategory] = {
    # reference-agent tools
    "search_web": "search", "fetch_url": "read", "read_artifact": "read", "download_file": "download",
    "sample_video": "video", "read_subtitles": "video", "browser_*": "browse", "download_*": "download",
    # `omnidr-skill GROUP ...` command groups (a call's `skill` is "GROUP ACTION")
    "search": "search", "browser": "browse", "fetch": "read", "artifact": "read", "doc": "read",
    "download": "download", "video": "video",
    # the harnesses' own web tools
    "WebSearch": "search", "web_search": "search", "WebFetch": "read", "web_fetch": "read",
}
"""Tool name, `prefix_*` of tool names, or skill group -> category; anything else is `other`."""

_SKILL_COMMAND = re.compile(r"omnidr-skill\s+([a-z]+)")


def tool_category(name: str, skill: str | None = None, arguments: object = None) -> ToolCategory:
    """The category of one call: by its research skill when it ran one, else by its tool name; a shell call whose
    skill was not recognised is looked up by the first `omnidr-skill GROUP` its arguments name."""
    if skill:
        found = TOOL_CATEGORIES.get(skill.split()[0])
        if found:
            return found
    found = TOOL_CATEGORIES.get(name) or TOOL_CATEGORIES.get(name.partition("_")[0] + "_*")
    if found:
        return found
    if arguments is not None:
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, default=str)
        match = _SKILL_COMMAND.search(text)
        if match:
            return TOOL_CATEGORIES.get(match.group(1), "other")
    return "other"


def _seconds(start: "datetime | None", end: "datetime | None") -> float | None:
    if start is None or end is None:
        return None
    delta = (end - start).total_seconds()
    return delta if delta >= 0 else None


def tool_use(trajectory: "Trajectory") -> ToolUse:
    """Calls, failures, latency and transitions of one trajectory (see the module docstring)."""
    categories: list[ToolCategory] = []
    failed = timed = 0
    latency = failed_latency = 0.0
    for step in trajectory.agent_steps():
        by_id = {o.tool_call_id: o for o in step.observations if o.tool_call_id is not None}
        since = step.timestamp
        for i, call in enumerate(step.tool_calls):
            categories.append(tool_category(call.name, call.skill, call.arguments))
            obs: Observation | None = by_id.get(call.id)
            if obs is None and not by_id and i < len(step.observations):
                obs = step.observations[i]  # a log without call ids: results in call order
            if obs is None:
                obs = trajectory.observation_for(call.id)
            if obs is None:
                continue
            took = _seconds(since, obs.timestamp)
            if obs.is_error:
                failed += 1
            if took is not None:
                timed += 1
                latency += took
                if obs.is_error:
                    failed_latency += took
            if obs.timestamp is not None:
                since = obs.timestamp
    counts = {c: categories.count(c) for c in TOOL_CATEGORY_ORDER if c in categories}
    transitions: dict[str, int] = {}
    for a, b in zip(categories, categories[1:], strict=False):
        transitions[f"{a}->{b}"] = transitions.get(f"{a}->{b}", 0) + 1
    return ToolUse(calls=len(categories), failed_calls=failed, timed_calls=timed, latency_s=round(latency, 3),
                   failed_latency_s=round(failed_latency, 3), categories=counts, transitions=transitions)
