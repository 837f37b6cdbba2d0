"""Server-sent events, read incrementally: cut a byte stream into whole events without waiting for its end."""

import re

# An event ends at a blank line; the spec allows CRLF, LF and CR line ends.
_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_LINE_END = re.compile(r"\r\n|\r|\n")


class EventSplitter:
    """Feed it chunks as they arrive; it returns each complete event's raw bytes (blank line included)."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        buffer = self._pending + chunk if self._pending else chunk
        events = []
        start = 0
        while (end := _EVENT_END.search(buffer, start)) is not None:
            events.append(buffer[start : end.end()])
            start = end.end()
        self._pending = buffer[start:]
        return events

    def rest(self) -> bytes:
        """Bytes after the last complete event (a stream that ended without a blank line)."""
        rest, self._pending = self._pending, b""
        return rest


def parse_event(raw: bytes) -> tuple[str | None, str | None]:
    """The `event:` name and the joined `data:` lines of one raw event (None where absent)."""
    name = None
    data: list[str] = []
    for line in _LINE_END.split(raw.decode("utf-8", "replace")):
        if not line or line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    return name, ("\n".join(data) if data else None)
