"""network.jsonl: one line per request the agent sent through the egress proxy; provider_web.jsonl: one line
per web search or fetch a model provider ran for the agent, as the model gateway saw it.

A line is the JSON dump of a `RequestEvent` (an HTTP request the proxy could read: plain HTTP in
every mode, HTTPS too where it intercepts TLS) or a `TunnelEvent` (an HTTP CONNECT tunnel the
proxy relayed without reading it, or refused, or that failed before any request went through it).
`NetworkEvent` is the union of these and `ProviderEvent` (a provider-side search or fetch, written by the
gateway, `via: provider`), told apart by `type`. Lines are written when the request or tunnel (or model
exchange) ends and flushed one by one, so a killed attempt keeps every finished line. `read_web_log` reads
both files of an attempt as one web log.
"""

from datetime import datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

ProxyMode = Literal["log", "intercept", "record", "replay", "deny"]
"""How the proxy treats traffic (see `sandbox/egress/README.md`)."""

ModelPolicy = Literal["refuse", "rewrite", "allow"]
"""What the gateway does with a model request naming another model than the system's (sandbox/gateway/_model_policy)."""

BlockReason = Literal["deny_mode", "denylist", "control", "sandbox_network", "private_network", "not_the_agent"]
"""Why the proxy refused a request: the proxy runs in `deny` mode; the target is on the denylist; the request
went to the proxy's control address (`omnidr-egress.control`) without the host's admin token; or the target
is an address in one of the project's own Docker networks (`--refuse-net`); or the target is not on the public
internet (loopback, link-local, private, ...; see `sandbox/egress/_networks.py`) and no `--allow-net` opens it."""

Source = Literal["upstream", "replay", "proxy"]
"""Who produced the answer: the real server, the replay corpus, or the proxy itself (a refusal or a 404)."""


class _NetworkEventBase(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

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
    via: Literal["proxy"] = Field("proxy", description="Which door the traffic went through: the egress proxy.")
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
    via: Literal["proxy"] = Field("proxy", description="Which door the traffic went through: the egress proxy.")


ProviderAction = Literal["search", "fetch", "open_page", "find", "refused"]
"""What a provider-side tool did: a search (query and results), a fetch or page open of one URL, a find in a
page (Responses), or nothing because the gateway refused the request under the run's policy."""


class ProviderResult(BaseModel):
    """One result a provider-side search returned (or one page it read)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    url: str = Field(description="URL of the result.")
    title: str | None = Field(None, description="Title the provider gave, if any.")
    blocked: bool = Field(False, description="True when the URL is on the run's denylist and the gateway removed it "
                                             "from the answer before the agent got it.")


class ProviderEvent(BaseModel):
    """A web search or fetch that ran at the model provider (Anthropic `web_search`/`web_fetch` server tools,
    Responses `web_search_call`, a Chat Completions search model), taken from the model's answer by the
    gateway, streamed answers included. It never passed the egress proxy."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    type: Literal["provider"] = "provider"
    via: Literal["provider"] = Field("provider", description="Which door the traffic went through: the model "
                                                             "provider, behind the gateway.")
    seq: int = Field(description="Order in which the line was written, from 1 (provider_web.jsonl's own count).")
    started_at: datetime = Field(description="When the gateway received the model request that carried it (UTC).")
    duration_s: float = Field(description="Seconds the whole model exchange took (the search is part of it).")
    exchange_seq: int = Field(description="`seq` of the gateway.jsonl exchange whose answer holds it.")
    route: str = Field(description="Model API of the exchange: messages, responses or chat_completions.")
    tool: str = Field(description="The provider tool as named in the answer (web_search, web_fetch, "
                                  "web_search_call, web_search_options).")
    kind: str = Field(description="ProviderToolKind of the tool: web_search, web_fetch or hosted.")
    policy: str = Field(description="The run's policy for that kind when it ran: allow, deny or denylist.")
    action: ProviderAction = Field(description="What the tool did.")
    query: str | None = Field(None, description="Search query, when the action is a search.")
    url: str | None = Field(None, description="URL fetched, opened or searched in, for fetch, open_page and find.")
    host: str | None = Field(None, description="Host of `url`, lower case.")
    results: list[ProviderResult] = Field(default_factory=list, description="Results of a search, in order, the "
                                                                            "ones the gateway removed included.")
    status: Literal["ok", "error", "refused"] = Field(description="ok, an error the provider reported for the "
                                                                  "tool, or refused by the gateway.")
    blocked: bool = Field(False, description="True when the gateway refused the request or removed denylisted "
                                             "content from this tool's answer.")
    block_reason: Literal["provider_tools_policy", "denylist"] | None = Field(
        None, description="Why: the run's policy denies the tool, or results or a page were on the denylist.")
    error: str | None = Field(None, description="The provider's error code, or the gateway's refusal.")

    @property
    def blocked_results(self) -> int:
        return sum(1 for r in self.results if r.blocked)


NetworkEvent = Annotated[RequestEvent | TunnelEvent | ProviderEvent, Field(discriminator="type")]
"""One line of network.jsonl (requests and tunnels) or of provider_web.jsonl (provider events)."""

NETWORK_EVENT = TypeAdapter(NetworkEvent)

NETWORK_LOG = "network.jsonl"
PROVIDER_WEB_LOG = "provider_web.jsonl"


WebEvent = RequestEvent | TunnelEvent | ProviderEvent


def read_network_log(path: Path, warnings: list[str] | None = None) -> list[WebEvent]:
    """Every line of a network.jsonl (or provider_web.jsonl), parsed. A last line cut short by a kill is skipped.
    Another unreadable line raises, or, given a `warnings` list, is skipped with a warning appended to it."""
    events: list[WebEvent] = []
    lines = path.read_text("utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            events.append(NETWORK_EVENT.validate_json(line))
        except ValueError:
            if number == len(lines):
                break  # a partial last line: the proxy was killed while writing it
            if warnings is None:
                raise
            warnings.append(f"{path}:{number}: not a network event; skipped")
    return events


def read_web_log(logs_dir: Path, warnings: list[str] | None = None) -> list[WebEvent]:
    """The attempt's one web log: the proxy's network.jsonl and the gateway's provider_web.jsonl in a logs
    folder, merged in time order (each file keeps its own order for equal times). Missing files are empty;
    unreadable lines as in `read_network_log`."""
    events: list[WebEvent] = []
    for name in (NETWORK_LOG, PROVIDER_WEB_LOG):
        if (logs_dir / name).is_file():
            events += read_network_log(logs_dir / name, warnings)
    return sorted(events, key=lambda e: e.started_at)


class NetworkLog:
    """Appends events to network.jsonl, numbering them and flushing each line as it is written."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the proxy's life
        self._seq = 0
        self.written = 0
        """Events written so far."""

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def write(self, event: WebEvent) -> None:
        self._file.write(event.model_dump_json() + "\n")
        self._file.flush()
        self.written += 1

    def close(self) -> None:
        self._file.close()
