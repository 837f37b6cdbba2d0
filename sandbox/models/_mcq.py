"""The multiple-choice contract (task kind `mcq`, VideoOdyssey, paper 004): what the direct-model runner is given
in its container and what it hands back.

VideoOdyssey evaluates models directly, without an agent or tools (Sec. 4.1): each question goes to the model in one
request with the video's sampled frames, and optionally the subtitles and the audio, and the chosen option is
compared with the answer key. The host prepares the inputs (`omnidr.media`: deterministic uniform frame sampling,
App. D.5; the certificate-window clips, Sec. 4.3 and App. F.1) and mounts them read-only:

    /input/question.json      McqQuestion: the question and its four options
    /input/media/inputs.json  MediaInputs: the sampled frames (files and timestamps), subtitles and audio given
    /input/media/...          the files it names

The runner answers with `/output/answer.json` (`AnswerFile`, as a short answer: the model's text; the host parses
the option from it).
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

QUESTION_FILE = "question.json"
"""The question file in the runner's input folder (`/input/question.json`)."""

MEDIA_DIR = "media"
"""The prepared inputs' folder in the runner's input folder (`/input/media/`)."""

MEDIA_MANIFEST = "inputs.json"
"""The manifest of the prepared inputs (`/input/media/inputs.json`): a `MediaInputs` dump."""

OPTION_LETTERS = ("A", "B", "C", "D")
"""The letters of the four options, in order (paper 004, Sec. 3.2: one correct answer and three distractors)."""

MCQ_PROMPT = """\
You are shown material from one video: frames sampled from it at a fixed interval, each labelled with its time in \
the video, and, when given, the video's subtitles with their times and its audio track. Answer the multiple-choice \
question that follows from this material alone. Exactly one option is correct. Reply with the letter of that \
option (A, B, C or D) on the first line; you may add one sentence of reasoning after it."""
"""The direct runner's system message (VideoOdyssey, Sec. 4.1: "all model outputs were evaluated through direct
comparison with ground-truth answers"; the paper does not print its prompt, so this one is ours). The scripted
model recognises it to answer as a multiple-choice model."""

Modality = Literal["video", "video+subtitles", "video+audio", "video+subtitles+audio"]
"""What the model is given besides the question (App. D.2, Fig. 10): frames only, frames and subtitles, frames and
audio, or all three."""

MODALITIES: tuple[Modality, ...] = ("video", "video+subtitles", "video+audio", "video+subtitles+audio")

WindowMode = Literal["full", "cw-frames", "cw-rate"]
"""Which stretch of the video the frames come from (Sec. 4.3, App. F.1): the whole video; the certificate window
with the same number of frames (matched-frame); or the certificate window at the whole video's sampling rate
(matched-rate)."""

WINDOW_MODES: tuple[WindowMode, ...] = ("full", "cw-frames", "cw-rate")

InputProtocol = Literal["ours", "official"]
"""How the inputs are sampled and the request laid out: this sandbox's layout (frames at interval midpoints labelled
with their times, a system prompt, WAV audio, temperature 0), or the VideoOdyssey authors' runner's
(`scripts/run_eval.py` of their release: the first frame of each interval, JPEG at 512 px quality 70 sent with
`detail: low`, one user message with the prompt first, an MP3 montage of 64 clips of 10 s, temperature 1.0)."""

OFFICIAL_TEMPERATURE = 1.0
"""The authors' runner's sampling temperature (its `--temperature` default)."""


class McqQuestion(BaseModel):
    """`/input/question.json`: the question as the model sees it (no answer key, no labels)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    id: str
    question: str = Field(min_length=1)
    options: list[str] = Field(min_length=4, max_length=4, description="The four options, A to D in order.")
    template: str | None = Field(None, description="Under the authors' runner protocol, the snapshot's prompt "
                                 "template (`McqProtocol.official_prompt`: `{question}`, `{options}`, `{subtitles}`); "
                                 "None: the runner's own wording.")


class SampledFrame(BaseModel):
    """One sampled frame: its file in the media folder, its frame index in the video and its time."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    file: str = Field(pattern=r"^frames/[^/\\]+$")
    index: int = Field(ge=0, description="The frame's index among the video's frames (0-based).")
    timestamp_s: float = Field(ge=0, description="The frame's presentation time in the video, in seconds.")


class MediaInputs(BaseModel):
    """`/input/media/inputs.json`: what the prepared inputs hold and how they were made. The same video, frame
    budget, window and mode always give the same frames (paper 004, App. D.5)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    video_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    frame_count: int = Field(ge=1, description="F: the video's frame count.")
    fps: float = Field(gt=0, description="The video's frame rate.")
    duration_s: float = Field(gt=0)
    window_mode: WindowMode
    window: tuple[float, float] | None = Field(None, description="The certificate window the frames, subtitles "
                                               "and audio were cut to (start, end in seconds); None: the whole video.")
    frames: list[SampledFrame] = Field(min_length=1)
    frame_format: Literal["png", "jpeg"]
    subtitles: str | None = Field(None, description="File of the subtitle lines inside the window (`[mm:ss] text` "
                                  "per line), when the modality includes subtitles and the video has some.")
    audio: str | None = Field(None, description="Audio file (see `audio_format`), when the modality includes audio.")
    protocol: InputProtocol = Field("ours", description="Whose sampling and request layout (`InputProtocol`).")
    audio_format: Literal["wav", "mp3"] = Field("wav", description="wav: the window's audio, 16-bit mono; mp3: the "
                                                "official montage (mono, 16 kHz, 16 kbit/s).")
    audio_clips: list[tuple[float, float]] = Field(default_factory=list, description="The official montage's clips "
                                                   "(start, length in seconds), in order; empty for WAV audio.")

    @field_validator("frames")
    @classmethod
    def _in_order(cls, frames: list[SampledFrame]) -> list[SampledFrame]:
        if any(b.index <= a.index for a, b in zip(frames, frames[1:], strict=False)):
            raise ValueError("frames are not in strictly increasing index order")
        return frames
