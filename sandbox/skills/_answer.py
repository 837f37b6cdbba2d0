"""The short-answer delivery (task kind `short_answer`, OpenDS-World): `omnidr-skill answer submit TEXT` writes
`/output/answer.json`, the way a CLI harness (Claude Code, Codex) hands in its answer. The reference agent answers
the paper's way instead, with a final message without tool calls, and writes the same file itself (App. C.2.3)."""

import os
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox.models import ANSWER_FILE

if TYPE_CHECKING:  # the model is loaded where an answer is written: a skill call that writes none skips pydantic
    from sandbox.models import AnswerFile

OUTPUT_DIR_ENV = "OMNIDR_OUTPUT_DIR"
"""The agent's output folder (default `/output`); `answer.json` goes there."""


class EmptyAnswer(ValueError):
    """An answer without text: refused, as the paper accepts only non-empty answers (App. C.2.3)."""


def output_dir() -> Path:
    return Path(os.environ.get(OUTPUT_DIR_ENV) or "/output")


def write_answer_file(answer: "AnswerFile", folder: Path) -> Path:
    """Write `answer.json` into `folder` atomically (temporary name, then rename): the host reads it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ANSWER_FILE
    temporary = path.with_name(f".{ANSWER_FILE}.tmp")
    temporary.write_text(answer.model_dump_json(indent=2), "utf-8")
    os.replace(temporary, path)
    return path


def submit_answer(text: str, folder: Path) -> dict:
    """Deliver `text` as the answer research produced; a later submission replaces an earlier one."""
    answer = text.strip()
    if not answer:
        raise EmptyAnswer("the answer is empty; give its text, e.g. omnidr-skill answer submit \"The bridge "
                          "crosses the Vltava.\"")
    from sandbox.models import AnswerFile

    path = write_answer_file(AnswerFile(answer=answer, termination="complete_answer", source="research"), folder)
    return {"written": str(path), "answer": answer, "words": len(answer.split())}
