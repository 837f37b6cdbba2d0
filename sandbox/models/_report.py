"""The report an agent delivers: the schema of its `window.DATA` (`report/data.js`), read by the reference
agent's report check, by the template, and by the evaluator. Report data is agent output: unknown keys are
tolerated, known keys are checked."""

from pydantic import BaseModel, ConfigDict, Field

from ._plain import CONTRACT_VERSION, RelationType


class _Data(BaseModel):
    """Report data is agent output: unknown keys are tolerated, known keys are checked."""

    model_config = ConfigDict(defer_build=True, extra="allow")


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
