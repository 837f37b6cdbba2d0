"""The report contract: the interface template the agent fills and the schema of its `window.DATA`.

The agent writes `report/data.js` (``window.DATA = {...};``) next to a copy of the template
`report/index.html`; the template renders the two-pane report from that object. The JSON
schema of `window.DATA` is generated from :class:`ReportData`; there is no hand-written copy.
"""

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._base import Record
from ._facts import RelationType

CONTRACT_VERSION = "omnidr-report-1"


class _Data(BaseModel):
    """Report data is agent output: unknown keys are tolerated, known keys are checked."""

    model_config = ConfigDict(extra="allow")


class ReportVideo(_Data):
    src: str = Field(description="Path of the source video relative to the report folder.")
    duration_s: float = Field(ge=0, description="Duration of the source video, seconds.")
    source_url: str = Field("", description="Public URL of the source video.")


class ReportMedia(_Data):
    type: str = Field(description="'image' or 'video'.")
    src: str = Field(description="Path relative to the report folder, or an absolute URL.")
    caption: str = Field("", description="What the media shows.")
    source_id: str | None = Field(None, description="Source record the media comes from, if external.")


class TimelineSegment(_Data):
    id: str = Field(description="Segment id.")
    start_s: float = Field(ge=0, description="Absolute start in the source video, seconds.")
    end_s: float = Field(ge=0, description="Absolute end in the source video, seconds.")
    title: str = Field(description="Short heading of the segment.")
    note: str = Field(description="Audiovisual note: what is shown and said.")
    media: list[ReportMedia] = Field(default_factory=list, description="Representative frames or clips.")


class Anchor(_Data):
    id: str = Field(description="Anchor id.")
    time_s: float = Field(ge=0, description="Moment in the source video the anchor refers to, seconds.")
    label: str = Field(description="The claim, entity, step or parameter researched.")
    goal: str = Field(description="explain, verify, compare, update or apply.")


class Claim(_Data):
    text: str = Field(description="One claim of the finding.")
    citations: list[str] = Field(default_factory=list, description="Ids of the source records that support it.")
    video_times_s: list[float] = Field(default_factory=list, description="Source-video moments the claim relates to.")
    relation: RelationType | None = Field(None, description="How the evidence relates to the video.")


class Finding(_Data):
    id: str = Field(description="Finding id.")
    title: str = Field(description="Heading of the finding.")
    summary: str = Field("", description="One-paragraph summary.")
    anchor_ids: list[str] = Field(default_factory=list, description="Anchors this finding answers.")
    claims: list[Claim] = Field(default_factory=list, description="Claims with their citations.")
    media: list[ReportMedia] = Field(default_factory=list, description="External images or clips used as evidence.")


class SourceRecord(_Data):
    id: str = Field(description="Source id that claims cite.")
    type: str = Field(description="web, video, document or image.")
    title: str = Field(description="Title of the source.")
    url: str = Field(description="Canonical URL.")
    publisher: str = Field("", description="Site, organisation or author.")
    date: str = Field("", description="Publication date (ISO 8601) if known.")
    quote: str = Field("", description="Verbatim quote supporting the claims that cite it.")
    anchor_ids: list[str] = Field(default_factory=list, description="Anchors this source informs.")


class ReportData(_Data):
    """`window.DATA`: everything the template renders."""

    contract: str = Field(CONTRACT_VERSION, description="Contract version the data follows.")
    title: str = Field(description="Report title.")
    language: str = Field(description="'en' or 'zh'.")
    query: str = Field(description="The user request the report answers.")
    video: ReportVideo = Field(description="The source video.")
    overview: str = Field(description="Answer to the user's need in a few paragraphs.")
    timeline: list[TimelineSegment] = Field(default_factory=list, description="Time-aligned audiovisual notes.")
    anchors: list[Anchor] = Field(default_factory=list, description="Research anchors.")
    findings: list[Finding] = Field(default_factory=list, description="Research findings with claim-level citations.")
    sources: list[SourceRecord] = Field(default_factory=list, description="Source records.")


class ReportContract(Record):
    """`contract/contract.json` in a snapshot: what every report must be."""

    version: str = Field(description="Contract version; window.DATA.contract must equal it.")
    template: str = Field(description="Interface template (HTML), relative to the contract file.")
    data_file: str = Field("data.js", description="File in the report folder that assigns window.DATA.")
    entry: str = Field("index.html", description="Report entry page in the report folder.")
    required_sections: list[str] = Field(description="Element ids the rendered report must contain.")
    description: str = Field(description="What the report must contain, in words, for agents.")


def data_schema() -> dict:
    """JSON schema of `window.DATA`, generated from :class:`ReportData`."""
    return ReportData.model_json_schema()


_ASSIGNMENT = re.compile(r"^\s*window\.DATA\s*=\s*(?P<body>.*?)\s*;?\s*$", re.DOTALL)


class ReportDataError(ValueError):
    """A report's data file is missing, not a `window.DATA = {...};` assignment, or invalid."""


def read_report_data(report_dir: Path, data_file: str = "data.js") -> ReportData:
    """Read `window.DATA` from a report folder without a browser (the file must be a plain
    JSON assignment, as the contract asks) and validate it against :class:`ReportData`."""
    path = report_dir / data_file
    if not path.is_file():
        raise ReportDataError(f"{path}: missing")
    match = _ASSIGNMENT.match(path.read_text("utf-8", "replace"))
    if not match:
        raise ReportDataError(f"{path}: expected `window.DATA = {{...}};`")
    try:
        return ReportData.model_validate_json(match.group("body"))
    except ValidationError as exc:
        e = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in e["loc"]) or "window.DATA"
        raise ReportDataError(f"{path}: {where}: {e['msg']} ({exc.error_count()} problem(s))") from None


def is_skeleton(data: ReportData) -> bool:
    """An unfilled interface: no timeline note, no finding and no source record."""
    return not (data.timeline or data.findings or data.sources)


def report_problem(report_dir: Path, data_file: str = "data.js") -> str | None:
    """Why a delivered report folder does not count as a report, or None.

    Paper App. F: a run succeeds "only when its final HTML report is recoverable and can be parsed
    by the evaluator", and unfilled interface skeletons "are counted as failures". So the data must
    read and validate against the contract, and the interface must be filled."""
    try:
        data = read_report_data(report_dir, data_file)
    except ReportDataError as exc:
        return f"not a valid report: {str(exc).replace(str(report_dir / data_file), data_file)}"
    if is_skeleton(data):
        return "an unfilled interface skeleton (no timeline note, finding or source record)"
    return None
