"""gateway.jsonl: the record of every exchange between the agent and the gateway.

Each line is the JSON dump of one `GatewayExchange`, written when the exchange ends and flushed at
once, so a killed attempt keeps every finished exchange. Secrets (real keys, the agent's dummy
token, the admin token) are replaced by `[REDACTED]` wherever they occur in a line.
"""

import json
from pathlib import Path

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
        self._file.write(self._redact.text(exchange.model_dump_json()) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


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
