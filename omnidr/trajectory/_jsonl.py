"""Reading JSON-lines logs that a killed run may have cut short, and the parse error."""

import json
from pathlib import Path
from typing import Any

from omnidr.errors import UserError


class TrajectoryFormatError(UserError):
    """A log could not be read as a trajectory; the message names the file and line."""

    def __init__(self, path: Path | str, line: int | None, problem: str):
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {problem}")
        self.path = str(path)
        self.line = line


def read_jsonl(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """Every JSON object line of `path` with its line number, and warnings.

    Blank lines are skipped. A last line that is not valid JSON is taken as cut short by a kill
    and dropped with a warning; an invalid line anywhere else, a line that is not an object, or
    a file with no lines raises `TrajectoryFormatError` naming the file and line.
    """
    try:
        text = path.read_text("utf-8", errors="replace")
    except OSError as exc:
        raise TrajectoryFormatError(path, None, f"cannot read the log ({exc.strerror})") from None
    lines = text.splitlines()
    numbered = [(n, line) for n, line in enumerate(lines, start=1) if line.strip()]
    if not numbered:
        raise TrajectoryFormatError(path, None, "the log is empty; the agent wrote no events")
    records: list[tuple[int, dict[str, Any]]] = []
    warnings: list[str] = []
    last = numbered[-1][0]
    for number, line in numbered:
        try:
            value = json.loads(line)
        except ValueError:
            if number == last and records:
                warnings.append(f"{path}:{number}: last line is cut short (run killed mid-write); ignored")
                break
            raise TrajectoryFormatError(path, number, "not a JSON line; expected one JSON object per line") from None
        if not isinstance(value, dict):
            raise TrajectoryFormatError(path, number, f"expected a JSON object, found {type(value).__name__}")
        records.append((number, value))
    return records, warnings


def decode_arguments(value: Any) -> Any:
    """Tool arguments: a JSON string is decoded, anything else kept."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def content_text(content: Any) -> str:
    """Text of a message or tool-result content: a string, or a list of typed parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                kind = part.get("type")
                if kind in ("text", "input_text", "output_text", "summary_text"):
                    parts.append(str(part.get("text", "")))
                elif kind in ("image", "input_image"):
                    parts.append("[image]")
                elif "text" in part:
                    parts.append(str(part["text"]))
        return "\n".join(p for p in parts if p)
    if isinstance(content, dict):
        return content_text([content])
    return str(content)
