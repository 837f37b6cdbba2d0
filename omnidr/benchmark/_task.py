"""One benchmark task: source video, user request, taxonomy labels (`tasks/<id>/task.json`)."""

from enum import Enum

from pydantic import Field

from ._base import Record
from ._taxonomy import Family


class Language(str, Enum):
    en = "en"
    zh = "zh"


class QueryForm(str, Enum):
    """The three query forms (App. C.1)."""

    general = "general"
    video_view = "video_view"
    user_demand = "user_demand"


class Captions(Record):
    """A caption track of the source video, fetched with yt-dlp when the video is acquired and stored beside it
    (issue 13: one of the three sources of speech the video skill reads, with subtitle tracks and speech-to-text)."""

    file: str = Field(pattern=r"^[^/\\]+$", description="File name of the track, in the task folder beside the video.")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the file, lowercase hex.")
    language: str = Field(min_length=1, description="Language code as the source labels it (en, zh-Hans, en-orig).")
    automatic: bool = Field(False, description="Made by the platform's speech recognition, not by the uploader.")


class SourceVideo(Record):
    url: str = Field(description="Public URL the video was taken from (YouTube, Bilibili, or a mirror).")
    file: str = Field(description="File name of the local copy, relative to the task folder.")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the local file, lowercase hex.")
    duration_s: float = Field(gt=0, description="Duration of the video in seconds, as probed by ffprobe.")
    captions: list[Captions] = Field(default_factory=list, description="Caption tracks stored beside the video "
                                     "(`omnidr snapshot fetch-videos --add-captions` fetches and records them).")


class Task(Record):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", description="Task identifier, equal to its folder name.")
    title: str = Field(description="Short human title of the task.")
    language: Language = Field(description="Language of the video, the query and the expected report.")
    family: Family = Field(description="Task family (one of the paper's four).")
    subcategory: str = Field(description="Subcategory id from the taxonomy; must belong to `family`.")
    query_form: QueryForm = Field(description="How the user request was formed: general, video view or user demand.")
    query: str = Field(min_length=1, description="The user request the report must answer, in the task language.")
    video: SourceVideo = Field(description="The source video.")
    contract: str = Field(description="Path of the report contract file, relative to the snapshot root.")
