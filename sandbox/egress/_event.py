"""network.jsonl: one line per request the agent sent through the egress proxy.

A line is the JSON dump of a `RequestEvent` (an HTTP request the proxy could read: plain HTTP in
every mode, HTTPS too where it intercepts TLS) or a `TunnelEvent` (an HTTP CONNECT tunnel the
proxy relayed without reading it, or refused, or that failed before any request went through it).
`NetworkEvent` is the union of the two, told apart by `type`. Lines are written when the request
or tunnel ends and flushed one by one, so a killed attempt keeps every finished line.
"""

from datetime import datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

ProxyMode = Literal["log", "intercept", "record", "replay", "deny"]
"""How the proxy treats traffic (see `sandbox/egress/README.md`)."""

BlockReason = Literal["deny_mode", "denylist"]
"""Why the proxy refused a request: the proxy runs in `deny` mode, or the target is on the denylist."""

Source = Literal["upstream", "replay", "proxy"]
"""Who produced the answer: the real server, the replay corpus, or the proxy itself (a refusal or a 404)."""


class _NetworkEventBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seq: int = Field(description="Order in which the line was written, from 1.")
    started_at: datetime = Field(description="When the proxy received the request or the CONNECT (UTC).")
    duration_s: float = Field(
        description="Seconds from started_at until the answer was complete (requests) or the tunnel closed (tunnels)."
    )
    mode: ProxyMode = Field(description="Mode the proxy was running in.")
    method: str = Field(description="HTTP method of the request; `CONNECT` for tunnels.")
    host: str = Field(description="Host the agent asked for (lower case), as a DNS name or an IP address.")
    port: int = Field(description="TCP port the agent asked for.")
    status: int | None = Field(
        description="HTTP status the agent received (for a tunnel: the answer to its CONNECT, 200 when the tunnel "
        "opened). None when the exchange failed before any answer (see `error`)."
    )
    sent_bytes: int = Field(
        0,
        description="Bytes from the agent toward the web: the request body, or everything the agent sent through "
        "the tunnel.",
    )
    received_bytes: int = Field(
        0,
        description="Bytes from the web to the agent: the response body as sent (still content-encoded), or everything "
        "the tunnel carried back to the agent.",
    )
    blocked: bool = Field(False, description="True when the proxy refused the request or tunnel with 403.")
    block_reason: BlockReason | None = Field(None, description="Why it was refused; None when not blocked.")
    error: str | None = Field(
        None,
        description="What went wrong, when something did: upstream unreachable, TLS handshake refused, cut "
        "connection, not in the replay corpus.",
    )


class RequestEvent(_NetworkEventBase):
    """An HTTP request the proxy could read, and its answer."""

    type: Literal["request"] = "request"
    scheme: Literal["http", "https"] = Field(description="URL scheme of the request.")
    url: str = Field(description="Full URL of the request (scheme, host, non-default port, path and query).")
    source: Source = Field(description="Who produced the answer.")
    content_type: str | None = Field(None, description="Content-Type of the answer, if it had one.")
    recorded_path: str | None = Field(
        None, description="`record` mode: the corpus file the answer was saved to, relative to the record folder."
    )


class TunnelEvent(_NetworkEventBase):
    """An HTTP CONNECT tunnel whose content the proxy did not read: relayed opaquely (`log` mode, or a non-HTTP
    protocol), refused, or failed before any request went through it (for example a TLS handshake the agent
    refused because it does not trust the run's CA)."""

    type: Literal["tunnel"] = "tunnel"


NetworkEvent = Annotated[RequestEvent | TunnelEvent, Field(discriminator="type")]
"""One line of network.jsonl."""

NETWORK_EVENT = TypeAdapter(NetworkEvent)


def read_network_log(path: Path) -> list[RequestEvent | TunnelEvent]:
    """Every line of a network.jsonl, parsed. A last line cut short by a kill is skipped."""
    events: list[RequestEvent | TunnelEvent] = []
    lines = path.read_text("utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            events.append(NETWORK_EVENT.validate_json(line))
        except ValueError:
            if number == len(lines):
                break  # a partial last line: the proxy was killed while writing it
            raise
    return events


class NetworkLog:
    """Appends events to network.jsonl, numbering them and flushing each line as it is written."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the proxy's life
        self._seq = 0

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def write(self, event: RequestEvent | TunnelEvent) -> None:
        self._file.write(event.model_dump_json() + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()
