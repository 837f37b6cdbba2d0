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


OFFICIAL_GIVEN = {"video": "the video", "video+audio": "the video and its audio", "video+subtitles":
                  "the video and its subtitles"}
OFFICIAL_SUBTITLES_NOTE = (
    "The subtitles below go with the sampled frames, in order: one line per frame, each a quoted string; an empty "
    "string means that frame has no subtitle.")


def official_prompt(question: McqQuestion, inputs: MediaInputs, media_dir: Path) -> str:
    """The text of the official request, in the structure of the authors' runner (`scripts/run_eval.py`): what is
    given, choose one of A-D, guess when unsure, reply with the letter; then the question and its options (and for
    subtitles, first the frame-aligned lines). The wording is ours unless the snapshot gives its template (the
    authors print theirs in their README)."""
    modality = "video+subtitles" if inputs.subtitles else "video+audio" if inputs.audio else "video"
    options = "\n".join(f"{letter}. {text}" for letter, text in zip(OPTION_LETTERS, question.options, strict=True))
    lines = (media_dir / inputs.subtitles).read_text("utf-8") if inputs.subtitles else ""
    if question.template is not None:  # the snapshot's wording (`McqProtocol.official_prompt`)
        return question.template.format(question=question.question, options=options, subtitles=lines)
    ask = (f"Using {OFFICIAL_GIVEN[modality]} only, answer the multiple-choice question. Pick the single best option "
           "(A, B, C or D). If you are not sure, still pick the most likely one. Reply with the option letter alone.")
    body = f"Question: {question.question}\nOptions:\n{options}"
    if inputs.subtitles:
        return f"{OFFICIAL_SUBTITLES_NOTE}\n\n{lines}\n\n{ask}\n\n{body}"
    return f"{ask}\n\n{body}"


def build_official_messages(question: McqQuestion, inputs: MediaInputs, media_dir: Path) -> list[dict]:
    """The authors' runner's request layout: one user message and no system message; the prompt text first, then
    every frame as a JPEG image part with `detail: low`, then (audio) the MP3 montage as one `input_audio` part."""
    parts: list[dict] = [{"type": "text", "text": official_prompt(question, inputs, media_dir)}]
    for frame in inputs.frames:
        data = base64.b64encode((media_dir / frame.file).read_bytes()).decode("ascii")
        parts.append({"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{data}", "detail": "low"}})
    if inputs.audio is not None:
        data = base64.b64encode((media_dir / inputs.audio).read_bytes()).decode("ascii")
        parts.append({"type": "input_audio", "input_audio": {"data": data, "format": inputs.audio_format}})
    return [{"role": "user", "content": parts}]


def build_messages(question: McqQuestion, inputs: MediaInputs, media_dir: Path) -> list[dict]:
    """The request's messages for `question` from the inputs prepared in `media_dir` (the official layout when the
    inputs were prepared by the authors' protocol)."""
    if inputs.protocol == "official":
        return build_official_messages(question, inputs, media_dir)
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
        parts.append({"type": "input_audio", "input_audio": {"data": data, "format": inputs.audio_format}})
    parts.append({"type": "text", "text": question_text(question)})
    return [{"role": "system", "content": MCQ_PROMPT}, {"role": "user", "content": parts}]
