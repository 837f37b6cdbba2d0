"""A short-answer task (task kind `short_answer`): OpenDS-World's question on a video with one reference answer.

OpenDS-World (paper 002, Sec. 2 and App. B) gives the agent a question and a read-only local video; research on
the web ends in one short factual answer, checked against a unique reference answer. Each task is labelled with
its domain (8), the evidence modalities (4), the resource formats (42 in the paper, reported in 8 categories)
and the access types (7) its evidence path needs, and the video's duration. This module holds the task model and
that taxonomy; the snapshot, runner and evaluator wiring for the kind is issue 18's remaining work.
"""

from enum import Enum

from pydantic import Field, field_validator

from sandbox.models import Budget, FinalizeRequest

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

    @field_validator("answer", "question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

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


class Compaction(Record):
    """Deterministic context compaction before each model request (App. C.2.2, C.2.1)."""

    keep_observations: int = Field(4, ge=1, description="The most recent tool observations kept whole.")
    truncate_chars: int = Field(2000, ge=1, description="Older text content is cut to this many characters.")
    search_results_kept: int = Field(2, ge=0, description="Older search results keep only their first entries.")
    image_limit: int = Field(250, ge=0, description="Images kept in the context; older ones become omission markers "
                                                    "(250 in the paper's historical runs; a run setting).")


class ShortAnswerProtocol(Record):
    """`hyperparameters.json` of a short-answer snapshot: OpenDS-World's execution protocol (Sec. 3.1, App. C)."""

    version: str = Field("opends-world-released", description="Name of this parameter set.")
    research_wall_s: float = Field(3600.0, gt=0, description="Research ends at this many seconds (Sec. 3.1).")
    research_tool_calls: int = Field(100, ge=1, description="Research ends at this many tool calls (Sec. 3.1).")
    finalization_requests: int = Field(2, ge=1, description="At most this many finalization requests (App. C.2.3).")
    finalization_tokens: int = Field(5000, ge=1, description="Output tokens of the whole finalization stage.")
    finalization_first_tokens: int = Field(4000, ge=1, description="Output tokens of the first finalization request.")
    compaction: Compaction = Field(default_factory=Compaction, description="Context compaction (App. C.2.2).")
    video_frames: int = Field(10, ge=1, le=100, description="Frames the video reader samples by default (App. C.1.2).")
    video_frames_max: int = Field(100, ge=1, description="Most frames one video-reader call may ask for.")
    attempts_per_task: int = Field(1, ge=1, description="Attempts per task: the paper runs each task once; a failed "
                                                        "execution is scored, not retried (App. C.4).")

    def budget(self) -> Budget:
        """The attempt budget a run of this protocol gets unless the user names one: research ends at
        `research_wall_s` or `research_tool_calls` (Sec. 3.1); the finalization stage has its own budget."""
        return Budget(max_tool_calls=self.research_tool_calls, wall_time_s=self.research_wall_s,
                      attempts_per_task=self.attempts_per_task)

    def finalize_request(self, question: str, prompt: str) -> FinalizeRequest:
        """The gateway's finalization call for a task whose research ended without a complete answer."""
        return FinalizeRequest(prompt=prompt, question=question, max_requests=self.finalization_requests,
                               total_tokens=self.finalization_tokens, first_tokens=self.finalization_first_tokens)
