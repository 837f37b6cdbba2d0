"""The one request the direct runner sends per question (paper 004, Sec. 4.1): the prepared inputs as a Chat
Completions conversation.

    system: MCQ_PROMPT
    user:   "Frames sampled from the video (N, ...):"
            per frame: "[mm:ss.s]" then the image (a data URL)
            with subtitles: "Subtitles (...):" and the lines
            with audio: "Audio track (...):" then an `input_audio` part (WAV, base64)
            "Question: ...", the options as "A. ...", and how to answer

The frames carry their times so that a model can place events; the paper leaves the exact layout open, this one is
ours. The scripted model (`sandbox/scripted_model/_mcq.py`) reads the same parts back.
"""

import base64
from pathlib import Path

from sandbox.models import MCQ_PROMPT, OPTION_LETTERS, McqQuestion, MediaInputs

FRAMES_HEADER = "Frames sampled from the video"
SUBTITLES_HEADER = "Subtitles"
AUDIO_HEADER = "Audio track"
QUESTION_HEADER = "Question:"
_MIME = {"png": "image/png", "jpeg": "image/jpeg"}


def clock(seconds: float) -> str:
    """`mm:ss.s` (or `h:mm:ss.s` past an hour) of a time in the video."""
    minutes, secs = divmod(max(0.0, seconds), 60.0)
    hours, minutes = divmod(int(minutes), 60)
    return f"{hours}:{minutes:02d}:{secs:04.1f}" if hours else f"{minutes:02d}:{secs:04.1f}"


def span(inputs: MediaInputs) -> str:
    if inputs.window is None:
        return f"the whole video, {clock(0)} to {clock(inputs.duration_s)}"
    return f"from {clock(inputs.window[0])} to {clock(inputs.window[1])} of a {clock(inputs.duration_s)} video"


def question_text(question: McqQuestion) -> str:
    options = "\n".join(f"{letter}. {text}" for letter, text in zip(OPTION_LETTERS, question.options, strict=True))
    return f"{QUESTION_HEADER} {question.question}\n{options}\nAnswer with the letter of the correct option."


def build_messages(question: McqQuestion, inputs: MediaInputs, media_dir: Path) -> list[dict]:
    """The request's messages for `question` from the inputs prepared in `media_dir`."""
    parts: list[dict] = [{"type": "text", "text": f"{FRAMES_HEADER} ({len(inputs.frames)}, {span(inputs)}):"}]
    mime = _MIME[inputs.frame_format]
    for frame in inputs.frames:
        data = base64.b64encode((media_dir / frame.file).read_bytes()).decode("ascii")
        parts.append({"type": "text", "text": f"[{clock(frame.timestamp_s)}]"})
        parts.append({"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}})
    if inputs.subtitles is not None:
        lines = (media_dir / inputs.subtitles).read_text("utf-8").strip()
        parts.append({"type": "text", "text": f"{SUBTITLES_HEADER} ({span(inputs)}):\n{lines or '(none)'}"})
    if inputs.audio is not None:
        data = base64.b64encode((media_dir / inputs.audio).read_bytes()).decode("ascii")
        parts.append({"type": "text", "text": f"{AUDIO_HEADER} ({span(inputs)}):"})
        parts.append({"type": "input_audio", "input_audio": {"data": data, "format": "wav"}})
    parts.append({"type": "text", "text": question_text(question)})
    return [{"role": "system", "content": MCQ_PROMPT}, {"role": "user", "content": parts}]
