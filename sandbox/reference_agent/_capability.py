"""Capability levels of the reference agent (paper App. F.5, Table 5): five cumulative configurations.

    interface_only  only the report contract: write_report, check_report
    video           + video processing: probe_video, read_window (frames, subtitle transcript)
    text_web        + text web research: search_web, fetch_url, record_evidence
    multimodal      + multimodal retrieval: search_web(kind=image|video|document), download_media
    full            + the video-research workflow: the seven-stage instructions in the system prompt,
                      required-process checks in check_report, and an automatic check-and-repair turn
                      before the agent stops

Every level gets the same model, instruction, contract and limits; only tools and guidance differ.
"""

from dataclasses import dataclass

from sandbox.skills import DEFAULT_KIND, LEVELS, installed, tool_schemas


@dataclass(frozen=True)
class Capability:
    name: str
    tools: tuple[str, ...]
    media_search: bool  # search_web may filter by kind (image, video, document)
    workflow: bool  # seven-stage guidance, required-process checks, automatic repair turn
    kind: str = DEFAULT_KIND  # the task kind the tools serve (report, short_answer)

    def as_record(self) -> dict:
        return {"name": self.name, "tools": list(self.tools), "media_search": self.media_search,
                "workflow": self.workflow, "task_kind": self.kind}


def capability(name: str, kind: str = DEFAULT_KIND) -> Capability:
    if name not in LEVELS:
        raise ValueError(f"unknown capability {name!r}; choose one of {', '.join(LEVELS)}")
    tools = tuple(t["function"]["name"] for t in tool_schemas(name, kind=kind))  # the manifests' tools at this level
    return Capability(name, tools, media_search=installed(name, "multimodal"), workflow=name == "full", kind=kind)


BASE_PROMPT = """You are a research agent that writes an interactive, source-cited HTML report about a video.
You work only through the tools you are given. The report follows a fixed interface contract: you write its
data (window.DATA) with write_report; the template renders it. Use check_report before you finish and fix
every problem it reports. Cite only sources you have actually opened; quote them verbatim. Keep what the video
shows and says apart from what outside evidence adds. Write in the language of the task.
When the report is written and checked, answer with a short final message and no tool call."""

WORKFLOW_PROMPT = """Follow the video-research workflow, stage by stage, carrying your notes across stages:
1. Intake: probe the video (duration, frame rate, resolution, audio, subtitles) and plan against the request.
2. Timeline: read every window of the video (frames and transcript) and merge them into time-aligned notes
   with absolute timestamps.
3. Anchors: pick the claims, entities, steps and parameters the request depends on; keep each one's
   timestamp and frame or transcript evidence, and say whether to explain, verify, compare, update or apply it.
4. Research: for each anchor search the web, open the sources (pages, documents, related videos) beyond
   their titles, and record each piece of evidence with its source, excerpt and date.
5. Synthesis: relate each piece of evidence to the video (support, contradiction, update, explanation,
   comparison, application); a correction or comparison needs independent support.
6. Write: put overview, timeline (with frames), anchors, findings with claim-level citations and the source
   records into the report data.
7. Validate and repair: run check_report, fix unsupported claims, unreachable sources and broken times or
   assets, and check again before you deliver."""


def system_prompt(cap: Capability) -> str:
    return BASE_PROMPT + ("\n\n" + WORKFLOW_PROMPT if cap.workflow else "")
