"""gateway.jsonl: the record of every exchange between the agent and the gateway.

Each line is the JSON dump of one `GatewayExchange`, written when the exchange ends and flushed at
once, so a killed attempt keeps every finished exchange. Secrets (real keys, the agent's dummy
token, the admin token) are replaced by `[REDACTED]` wherever they occur in a line. Inline media the agent
sent (base64 images and audio: a multiple-choice request carries up to 256 frames and a video's audio) are logged
as their sha256 and size, not their bytes (`elide_media`); the upstream got them whole.
"""

import base64
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from sandbox.models import GatewayExchange

REDACTED = "[REDACTED]"

class ExchangeLog:
    """Appends `GatewayExchange` lines to gateway.jsonl, redacted and flushed one by one."""

    def __init__(self, path: Path, secrets: list[str]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the gateway's life
        self._redact = Redactor(secrets)

    def write(self, exchange: GatewayExchange) -> None:
        exchange = exchange.model_copy(update={"request_body": elide_media(exchange.request_body),
                                               "client_request_body": elide_media(exchange.client_request_body)})
        self._file.write(one_line(self._redact.text(exchange.model_dump_json())) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


_LINE_BREAKS = {"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def one_line(text: str) -> str:
    """A JSON text with the characters that JSON leaves raw but `str.splitlines` breaks at (NEL, the line and
    paragraph separators) escaped: the same value, and one line for every reader of the JSONL file."""
    for char, escaped in _LINE_BREAKS.items():
        if char in text:
            text = text.replace(char, escaped)
    return text


MEDIA_KEEP = 1024
"""Inline media up to this many characters stay in the log as they are."""

_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+);base64,")


def _omitted(data: str, mime: str | None = None) -> str:
    raw = data.encode("ascii", "replace")
    try:
        raw = base64.b64decode(raw, validate=False)
    except ValueError:
        pass
    head = f"data:{mime};" if mime else ""
    return f"{head}omitted;sha256={hashlib.sha256(raw).hexdigest()};bytes={len(raw)}"


def elide_media(value: Any) -> Any:
    """`value` (a request body) with each large inline medium replaced by `[data:MIME;]omitted;sha256=...;bytes=N`:
    data URLs (Chat Completions and Responses images), `input_audio.data`, and base64 `source.data` (Anthropic
    images and documents)."""
    if isinstance(value, str):
        match = _DATA_URL.match(value)
        if match and len(value) > MEDIA_KEEP:
            return _omitted(value[match.end():], match.group(1))
        return value
    if isinstance(value, list):
        return [elide_media(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: elide_media(v) for k, v in value.items()}
    data = value.get("data")
    base64_source = value.get("type") == "base64" or "format" in value  # Anthropic source, input_audio
    if base64_source and isinstance(data, str) and len(data) > MEDIA_KEEP:
        out["data"] = _omitted(data, value.get("media_type"))
    return out


class Redactor:
    """Replaces each secret, raw or JSON-escaped, by `[REDACTED]`."""

    def __init__(self, secrets: list[str]) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if secret:
                forms.add(secret)
                forms.add(json.dumps(secret)[1:-1])
        # Longest first, so that a secret containing another is replaced whole.
        self._texts = sorted(forms, key=len, reverse=True)
        self._bytes = [s.encode() for s in self._texts]

    def text(self, value: str) -> str:
        for secret in self._texts:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value

    def bytes(self, value: bytes) -> bytes:
        for secret in self._bytes:
            if secret in value:
                value = value.replace(secret, REDACTED.encode())
        return value
