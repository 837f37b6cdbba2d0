"""A multiple-choice task (task kind `mcq`): VideoOdyssey's question on a long video (paper 004).

Each question has four options, one of them correct (Sec. 3.2), and is labelled with its subset (V, visual; AV,
audio-visual), task type, dimension (perception, cognition, summarization, temporal grounding), the video's domain
and subcategory, for AV its audio type (speech, sound, music), and its continuous certificate length (CCL): the
shortest stretch of video a person must watch without a break to answer it (Sec. 3.2, App. E.1), stored as the
window (start, end) and binned from it, never typed by hand.

The paper names its 14 V and 18 AV task types and its 11 domains (54 subcategories) only in figures that are not
in its text, so task types, domains and subcategories are lowercase labels here, checked for form but not against
a closed list; the subsets, dimensions and audio types are closed.

Layout: `videos.json` lists the snapshot's videos (a question names one by id), `tasks/<id>/task.json` holds one
question, `hyperparameters.json` the input protocol (`McqProtocol`).
"""

import re
from enum import Enum
from typing import Literal

from pydantic import Field, field_validator, model_validator

from sandbox.models import MODALITIES, OPTION_LETTERS, WINDOW_MODES, Budget, InputProtocol, McqModality, WindowMode

from ._base import Record

VIDEOS_FILE = "videos.json"
LABEL = r"^[a-z0-9][a-z0-9_-]*$"


class Subset(str, Enum):
    """VideoOdyssey-V (pure visual, 14 task types) and VideoOdyssey-AV (audio-visual, 18 task types)."""

    V = "V"
    AV = "AV"


class QuestionDimension(str, Enum):
    """The four dimensions the questions evaluate (Sec. 3.2, Fig. 3)."""

    perception = "perception"
    cognition = "cognition"
    summarization = "summarization"
    temporal_grounding = "temporal_grounding"


class AudioType(str, Enum):
    """The three audio types of the AV subset (Sec. 1, Fig. 4)."""

    speech = "speech"
    sound = "sound"
    music = "music"


CCL_BINS: tuple[tuple[str, float], ...] = (
    ("[0, 0.5)", 0.5), ("[0.5, 3)", 3.0), ("[3, 15)", 15.0), ("[15, 60)", 60.0), ("[60, inf)", float("inf")))
"""The five CCL levels as the paper's figures draw them (Fig. 4, 5; App. F.1): intervals in minutes, as (label,
upper bound in minutes, exclusive)."""

CHANCE_ACCURACY = 25.0
"""The chance level of a four-option question, in percent (App. D.4: "the 25% chance level")."""


def ccl_bin(minutes: float) -> str:
    """The CCL bin of a certificate `minutes` long."""
    return next(label for label, upper in CCL_BINS if minutes < upper)


DURATION_BINS: tuple[tuple[str, float, float], ...] = (
    ("[60, 90)", 60.0, 90.0), ("[90, 120)", 90.0, 120.0), ("[120, 180)", 120.0, 180.0), ("[180, 270)", 180.0, 270.0))
"""The video-duration bins of the authors' scorer (`scripts/test_acc.py` of the VideoOdyssey release), in minutes,
as (label, lower bound inclusive, upper bound exclusive); a video outside them is `OTHER_DURATION`."""
OTHER_DURATION = "Other/Short"


def duration_bin(minutes: float) -> str:
    """The authors' scorer's duration bin of a video `minutes` long."""
    return next((label for label, low, high in DURATION_BINS if low <= minutes < high), OTHER_DURATION)


def parse_clock(text: str) -> float:
    """Seconds of `SS`, `MM:SS` or `HH:MM:SS` (fractions allowed in the last field); ValueError otherwise."""
    parts = text.strip().split(":")
    if not 1 <= len(parts) <= 3 or not all(re.fullmatch(r"\d+(\.\d+)?", p) for p in parts):
        raise ValueError(f"{text.strip()!r} is not HH:MM:SS")
    seconds = 0.0
    for p in parts:
        seconds = seconds * 60 + float(p)
    return seconds


def parse_time_reference(text: str) -> tuple[float, float]:
    """(start_s, end_s) of a release `time_reference` (`HH:MM:SS-HH:MM:SS`, split at the first `-`)."""
    start, sep, end = text.partition("-")
    if not sep:
        raise ValueError(f"{text!r} is not START-END (HH:MM:SS-HH:MM:SS)")
    a, b = parse_clock(start), parse_clock(end)
    if b < a:
        raise ValueError(f"{text!r} ends before it starts")
    return a, b


def certificate_bin(time_reference: str) -> str:
    """The authors' scorer's certificate-length bin of a release `time_reference`: its span in whole seconds, in
    minutes, binned as `CCL_BINS`; an unreadable reference counts as 0 minutes, as that scorer reads it."""
    try:
        start, end = parse_time_reference(time_reference)
    except ValueError:
        start = end = 0.0
    return ccl_bin(max(0, int(end) - int(start)) / 60.0)


class CclWindow(Record):
    """The certificate window: the shortest continuous stretch holding all the evidence (App. E.1), in seconds."""

    start_s: float = Field(ge=0)
    end_s: float = Field(gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> "CclWindow":
        if self.end_s <= self.start_s:
            raise ValueError(f"end_s {self.end_s:g} is not after start_s {self.start_s:g}")
        return self

    @property
    def minutes(self) -> float:
        return (self.end_s - self.start_s) / 60.0

    @property
    def bin(self) -> str:
        return ccl_bin(self.minutes)


class McqSubtitles(Record):
    """The subtitle track of a video (SRT or WebVTT), downloaded with it or made by speech recognition (Sec. 3.1:
    downloaded where available, else Whisper-large-v3)."""

    file: str = Field(description="Path relative to the snapshot root.")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    source: Literal["downloaded", "speech_recognition", "release"] = Field(
        description="downloaded with the video, made by speech recognition, or taken from a release's subtitle folder "
        "(`snapshot import-videoodyssey`), which does not say which of the two it is")


class ReleaseVideoRef(Record):
    """A video's entry in the authors' release annotation (`VideoOdyssey_V.json`, `VideoOdyssey_AV.json`), as it
    stands there: the official scorer breaks accuracy down by `video_category` and by `duration_minutes`."""

    video_id: str = Field(min_length=1)
    video_category: str
    duration_minutes: float = Field(ge=0)


class ReleaseQuestionRef(Record):
    """A question's entry in the release annotation, as it stands there: the official scorer's labels."""

    question_id: str = Field(min_length=1)
    question_type: list[str] = Field(description="The release's question types (a question may have several).")
    time_reference: str = Field(description="The certificate window as the release writes it (HH:MM:SS-HH:MM:SS).")
    audio_type: list[str] = Field(default_factory=list, description="The release's audio types (AV questions).")


class McqVideo(Record):
    """One video of `videos.json`."""

    id: str = Field(pattern=LABEL)
    url: str | None = Field(None, description="Public URL the video was taken from (None where a release does not "
                            "state it).")
    file: str = Field(description="Path of the local copy, relative to the snapshot root.")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    duration_s: float = Field(gt=0, description="Duration as probed by ffprobe.")
    domain: str = Field(pattern=LABEL, description="One of the benchmark's 11 domains, as a lowercase label.")
    subcategory: str | None = Field(None, pattern=LABEL, description="The domain's fine-grained subcategory (54 in "
                                    "all); None where a release does not label it.")
    subtitles: McqSubtitles | None = Field(None, description="None for a video without speech (11 of the 100).")
    release: ReleaseVideoRef | None = Field(None, description="Where the video comes from in the authors' release "
                                              "annotation (`snapshot import-videoodyssey`).")


class McqVideos(Record):
    """`videos.json`."""

    videos: list[McqVideo] = Field(min_length=1)

    @field_validator("videos")
    @classmethod
    def _distinct(cls, videos: list[McqVideo]) -> list[McqVideo]:
        ids = [v.id for v in videos]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ValueError(f"video id(s) listed twice: {', '.join(twice)}")
        return videos


class McqTask(Record):
    """`tasks/<id>/task.json` of a multiple-choice snapshot."""

    id: str = Field(pattern=LABEL, description="Question id, equal to its folder name.")
    video: str = Field(pattern=LABEL, description="Id of the video in videos.json.")
    subset: Subset
    question: str = Field(min_length=1)
    options: list[str] = Field(min_length=4, max_length=4, description="The four options, A to D in order.")
    answer: Literal["A", "B", "C", "D"] = Field(description="The letter of the correct option.")
    task_type: str = Field(pattern=LABEL, description="One of the subset's task types (14 V, 18 AV), as a label.")
    dimension: QuestionDimension | None = Field(None, description="The dimension the question evaluates; None where "
                                                "a release does not label it (the authors' annotation has no such "
                                                "field).")
    audio_type: AudioType | None = Field(None, description="The audio the question needs: AV questions only.")
    ccl: CclWindow = Field(description="The continuous certificate window; its bin is computed from it.")
    release: ReleaseQuestionRef | None = Field(None, description="The question's entry in the authors' release "
                                               "annotation (`snapshot import-videoodyssey`).")

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("options")
    @classmethod
    def _four_distinct(cls, options: list[str]) -> list[str]:
        if any(not o.strip() for o in options):
            raise ValueError("an option is blank")
        folded = [" ".join(o.casefold().split()) for o in options]
        if len(set(folded)) != len(folded):
            raise ValueError("two options are the same; the four options must be distinct")
        return options

    @model_validator(mode="after")
    def _audio_type(self) -> "McqTask":
        if self.subset is Subset.AV and self.audio_type is None:
            raise ValueError("an AV question names its audio_type (speech, sound or music)")
        if self.subset is Subset.V and self.audio_type is not None:
            raise ValueError("a V question is purely visual and has no audio_type")
        return self

    @property
    def answer_index(self) -> int:
        return OPTION_LETTERS.index(self.answer)

    @property
    def choices(self) -> tuple[str, ...] | None:
        """The options an answer picks from, A to D in order: the checker reads a letter (`ShortAnswerTask` has
        none)."""
        return tuple(self.options)

    @property
    def ccl_bin(self) -> str:
        return self.ccl.bin


class McqProtocol(Record):
    """`hyperparameters.json` of a multiple-choice snapshot: how inputs are prepared (App. D.5: deterministic
    uniform sampling; Sec. 4.1: 128 frames for V with proprietary models, 64 for AV; budgets 64/128/256)."""

    frame_budgets: list[int] = Field([64, 128, 256], min_length=1, description="The frame budgets a system may use.")
    default_frames: int = Field(64, ge=1, description="The frame budget of the default system.")
    frame_format: Literal["png", "jpeg"] = Field("jpeg", description="Image format of the sampled frames: png is "
                                                 "lossless, jpeg smaller (the paper leaves it open).")
    frame_max_side: int = Field(768, ge=16, description="Frames larger than this on their longer side are scaled "
                                "down to it (the paper leaves the resolution open).")
    audio_sample_rate: int = Field(16000, ge=8000, description="Sample rate of the WAV audio given to the model.")
    attempts_per_task: int = Field(1, ge=1)
    request_timeout_s: float = Field(600.0, gt=0, description="The one request's wall-clock budget.")
    official_prompt: str | None = Field(None, description="The prompt of the `official-*` settings, as a template "
                                        "with `{question}`, `{options}` (one `A. ...` line each) and `{subtitles}` "
                                        "(the frame-aligned lines; empty without subtitles), e.g. the authors' own "
                                        "wording from their README; None: ours, in their structure.")

    @field_validator("official_prompt")
    @classmethod
    def _placeholders(cls, value: str | None) -> str | None:
        if value is None:
            return value
        import string

        try:
            names = {name for _, name, _, _ in string.Formatter().parse(value) if name is not None}
        except ValueError as exc:
            raise ValueError(f"the prompt template does not parse ({exc}); write a literal brace as {{{{ or }}}}") from None
        unknown = sorted(names - {"question", "options", "subtitles"})
        if unknown:
            raise ValueError(f"the prompt template names {', '.join('{' + n + '}' for n in unknown)}; it may use "
                             "{question}, {options} and {subtitles}")
        missing = sorted({"question", "options"} - names)
        if missing:
            raise ValueError(f"the prompt template lacks {', '.join('{' + n + '}' for n in missing)}")
        return value

    def budget(self) -> Budget:
        """One model request per question and no tool call (paper 004, Sec. 4.1), within `request_timeout_s`."""
        return Budget(max_iterations=1, max_tool_calls=0, wall_time_s=self.request_timeout_s,
                      attempts_per_task=self.attempts_per_task)

    @model_validator(mode="after")
    def _default_in_budgets(self) -> "McqProtocol":
        if self.default_frames not in self.frame_budgets:
            raise ValueError(f"default_frames {self.default_frames} is not one of frame_budgets {self.frame_budgets}")
        return self


OFFICIAL_MODES: dict[str, McqModality] = {"v": "video", "av": "video+audio", "video_subtitle": "video+subtitles"}
"""The VideoOdyssey authors' runner's input modes (`--input`) and what each gives the model."""
OFFICIAL_FRAMES = 64
"""The authors' runner's frame count (`--max_frames`)."""


class InputSetting(Record):
    """One system of the ablation matrix (App. D.2, D.5, F.1): the frame budget, the modalities and the window
    mode. Spelled `MODALITY-NNNf-WINDOW`, e.g. `video+subtitles-64f-full` or `video-128f-cw-rate`; `full` alone is
    every modality over the whole video at the protocol's default budget. `official-v`, `official-av` and
    `official-video_subtitle` (each with an optional `-cw`: only the certificate window) are the authors' runner's
    input modes and protocol (see `InputProtocol`)."""

    modality: McqModality
    frames: int = Field(ge=1)
    window: WindowMode
    protocol: InputProtocol = Field("ours", description="ours, or the VideoOdyssey authors' runner's (`official-*`).")

    @property
    def label(self) -> str:
        if self.protocol == "official":
            mode = next(m for m, modality in OFFICIAL_MODES.items() if modality == self.modality)
            return f"official-{mode}" + ("-cw" if self.window != "full" else "")
        return f"{self.modality}-{self.frames}f-{self.window}"

    @property
    def subtitles(self) -> bool:
        return "subtitles" in self.modality

    @property
    def audio(self) -> bool:
        return "audio" in self.modality

    @classmethod
    def parse(cls, text: str, protocol: McqProtocol | None = None) -> "InputSetting":
        """`full`, or `MODALITY-NNNf-WINDOW`; ValueError (one line) when it is neither, or (with `protocol`) when
        the budget is not one of the protocol's."""
        if text == "full":
            return cls(modality="video+subtitles+audio", frames=(protocol or McqProtocol()).default_frames,
                       window="full")
        if text.startswith("official-"):
            mode = text.removeprefix("official-").removesuffix("-cw")
            if mode not in OFFICIAL_MODES:
                raise ValueError(f"input setting {text!r}: the official input modes are "
                                 f"{', '.join(f'official-{m}' for m in OFFICIAL_MODES)}, each with an optional -cw")
            return cls(modality=OFFICIAL_MODES[mode], frames=OFFICIAL_FRAMES,
                       window="cw-frames" if text.endswith("-cw") else "full", protocol="official")
        example = "e.g. video+subtitles-64f-full or video-128f-cw-rate"
        head, sep, rest = text.partition("f-")
        modality, dash, frames = head.rpartition("-")
        if not sep or not dash or not frames.isdigit():
            raise ValueError(f"input setting {text!r} is not MODALITY-NNNf-WINDOW ({example})")
        if modality not in MODALITIES:
            raise ValueError(f"modality {modality!r} is not one of {', '.join(MODALITIES)}")
        if rest not in WINDOW_MODES:
            raise ValueError(f"window {rest!r} is not one of {', '.join(WINDOW_MODES)}")
        if protocol is not None and int(frames) not in protocol.frame_budgets:
            raise ValueError(f"{frames} frames is not a budget of this snapshot "
                             f"({', '.join(map(str, protocol.frame_budgets))})")
        return cls(modality=modality, frames=int(frames), window=rest)
