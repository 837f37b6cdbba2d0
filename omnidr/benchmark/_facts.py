"""Fact library of one task: atomic evidence records (paper App. E.2, G.3) (`tasks/<id>/facts.json`)."""

from datetime import date
from enum import Enum

from pydantic import Field, model_validator

from sandbox.models import RelationType

from ._base import Record


class Origin(str, Enum):
    video = "video"
    web = "web"


class FactType(str, Enum):
    """What kind of atomic claim a record holds."""

    speech = "speech"
    visible_text = "visible_text"
    visual = "visual"
    entity = "entity"
    parameter = "parameter"
    procedure = "procedure"
    claim = "claim"
    statistic = "statistic"
    standard = "standard"
    event = "event"


class SourceKind(str, Enum):
    webpage = "webpage"
    document = "document"
    image = "image"
    video = "video"


class SourceTier(str, Enum):
    """How authoritative a source is for the claim it supports."""

    primary = "primary"
    secondary = "secondary"
    tertiary = "tertiary"


class Verification(str, Enum):
    """Confidence assigned by evidence structure (App. E.2)."""

    verified = "verified"
    single_source = "single_source"
    disputed = "disputed"
    unavailable = "unavailable"


class VideoRef(Record):
    start_s: float = Field(ge=0, description="Absolute start time in the source video, seconds.")
    end_s: float = Field(ge=0, description="Absolute end time in the source video, seconds.")

    @model_validator(mode="after")
    def _ordered(self) -> "VideoRef":
        if self.end_s < self.start_s:
            raise ValueError("end_s must not be before start_s")
        return self


class EvidenceSource(Record):
    url: str = Field(description="Canonical URL of the source.")
    kind: SourceKind = Field(description="Webpage, document, image or video.")
    tier: SourceTier = Field(description="Source tier: primary, secondary or tertiary.")
    published: date | None = Field(None, description="Publication date, if the source states one.")
    quote: str | None = Field(None, description="Verbatim supporting quotation from the source, when available.")
    corpus_path: str | None = Field(
        None, description="Path of the bundled copy in the snapshot's web corpus (relative to `web/`), if bundled."
    )


class Relation(Record):
    type: RelationType = Field(description="How this record relates to the target record.")
    target: str = Field(description="Fact id of the related record (usually a video fact).")


class EvidenceRecord(Record):
    id: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="Task-local fact id, referenced by atoms.")
    claim: str = Field(min_length=1, description="One checkable atomic claim, in the task language.")
    type: FactType = Field(description="Kind of claim.")
    origin: Origin = Field(description="Where the claim was observed: the source video or the web.")
    video_ref: VideoRef | None = Field(None, description="Absolute time span in the source video (required for video origin).")
    sources: list[EvidenceSource] = Field(default_factory=list, description="External sources (required for web origin).")
    relations: list[Relation] = Field(default_factory=list, description="Links to other records (support, contradiction, ...).")
    conflicts_with: list[str] = Field(default_factory=list, description="Fact ids whose claims this record contradicts.")
    verification: Verification = Field(description="verified, single_source, disputed or unavailable (App. E.2; "
                                       "`snapshot validate` derives it from the sources and conflicts and warns "
                                       "where it differs).")

    @model_validator(mode="after")
    def _provenance(self) -> "EvidenceRecord":
        if self.origin is Origin.video and self.video_ref is None:
            raise ValueError("a video fact needs video_ref")
        if self.origin is Origin.web and not self.sources and self.verification is not Verification.unavailable:
            raise ValueError("a web fact needs at least one source unless it is 'unavailable'")
        return self


class FactLibrary(Record):
    task_id: str = Field(description="Task this library belongs to.")
    facts: list[EvidenceRecord] = Field(description="The evidence records.")
