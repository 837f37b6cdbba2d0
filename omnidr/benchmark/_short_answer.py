"""A short-answer task (task kind `short_answer`): OpenDS-World's question on a video with one reference answer.

OpenDS-World (paper 002, Sec. 2 and App. B) gives the agent a question and a read-only local video; research on
the web ends in one short factual answer, checked against a unique reference answer. Each task is labelled with
its domain (8), the evidence modalities (4), the resource formats (42 in the paper, reported in 8 categories)
and the access types (7) its evidence path needs, and the video's duration. This module holds the task model and
that taxonomy. The execution protocol (`ShortAnswerProtocol`, `Compaction`) crosses into the agent container as
`/input/protocol.json`, so its models live in `sandbox.models` (re-exported by `omnidr.benchmark`).
"""

from enum import Enum
from typing import Literal

from pydantic import Field, field_validator

from ._base import Record
from ._task import SourceVideo


class Domain(str, Enum):
    """The eight task domains (App. B.1)."""

    science = "science"
    society = "society"
    daily_life = "daily_life"
    culture = "culture"
    nature = "nature"
    history = "history"
    economy = "economy"
    technology = "technology"


class Modality(str, Enum):
    """The four evidence modalities (App. B.2; the anchor video itself is not counted)."""

    text = "text"
    image = "image"
    video = "video"
    audio = "audio"


class AccessType(str, Enum):
    """The seven access types: the operations needed to obtain a piece of evidence (App. B.4, Table 3)."""

    observation = "observation"
    hypermedia_transitions = "hypermedia_transitions"
    parameterized_updates = "parameterized_updates"
    temporal_indexing = "temporal_indexing"
    graphical_manipulation = "graphical_manipulation"
    declarative_queries = "declarative_queries"
    artifact_transfer = "artifact_transfer"


FORMAT_CATEGORIES = ("html", "mp4", "pdf", "mp3", "jpg", "csv", "zip", "other")
"""The eight format categories the paper reports accuracy by (App. D.2, Table 7); any other format is `other`."""

_FORMAT_ALIASES = {"htm": "html", "jpeg": "jpg"}


def format_category(fmt: str) -> str:
    """The reporting category of a resource format (a file type such as `pdf`, `xlsx`, `jpeg`)."""
    name = _FORMAT_ALIASES.get(fmt.lower(), fmt.lower())
    return name if name in FORMAT_CATEGORIES else "other"


class ShortAnswerTask(Record):
    """`tasks/<id>/task.json` of a short-answer snapshot."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", description="Task identifier, equal to its folder name.")
    question: str = Field(min_length=1, description="The question the agent must answer, in English.")
    answer: str = Field(min_length=1, description="The unique reference answer the judge compares with.")
    video: SourceVideo = Field(description="The anchor video, given to the agent read-only.")
    domain: Domain = Field(description="One of the eight domains.")
    modalities: list[Modality] = Field(min_length=1, description="Evidence modalities the path needs (besides the "
                                                                 "anchor video).")
    formats: list[str] = Field(min_length=1, description="Resource formats the path needs, as lowercase file types "
                                                         "(html, pdf, csv, zip, mp3, xlsx, ...).")
    access_types: list[AccessType] = Field(min_length=1, description="Access types the path needs.")
    difficulty: Literal["low", "medium", "high"] | None = Field(
        None, description="Human-calibrated difficulty group (paper 002, Sec. 3.2 and App. B.5: defined by human "
        "solving success), when the release gives it; accuracy is broken down by it.")

    @field_validator("answer", "question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @property
    def choices(self) -> tuple[str, ...] | None:
        """None: a short answer is free text, compared with the reference (`McqTask` has its options here)."""
        return None

    @field_validator("modalities", "formats", "access_types")
    @classmethod
    def _distinct(cls, values: list) -> list:
        if len(set(values)) != len(values):
            raise ValueError("lists a label twice")
        return values

    @field_validator("formats")
    @classmethod
    def _file_types(cls, values: list[str]) -> list[str]:
        for value in values:
            if not value.isascii() or not value.isalnum() or value != value.lower():
                raise ValueError(f"{value!r} is not a lowercase file type such as pdf or csv")
        return values

    @property
    def format_categories(self) -> list[str]:
        """The task's formats by reporting category, each once, in the paper's order."""
        found = {format_category(f) for f in self.formats}
        return [c for c in FORMAT_CATEGORIES if c in found]


DURATION_GROUPS = (("<2 min", 120.0), ("2-5 min", 300.0), ("5-10 min", 600.0), ("10-20 min", 1200.0),
                   (">=20 min", float("inf")))
"""The five anchor-video duration groups the paper reports accuracy by (App. B.1, D.3: under two minutes, two to
five, five to ten, ten to twenty, twenty minutes or longer), as (label, upper bound in seconds, exclusive)."""


def duration_group(seconds: float) -> str:
    """The duration group of an anchor video of `seconds`."""
    return next(label for label, upper in DURATION_GROUPS if seconds < upper)
