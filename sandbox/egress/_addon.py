"""The mitmproxy addon: applies the mode and the denylist, serves `replay`, writes `record`, logs network.jsonl.

Hook order for one HTTPS request in `intercept` mode: `http_connect` (CONNECT host:port) ->
`http_connected` -> TLS with the agent using a certificate signed by the run's CA ->
`requestheaders` -> `request` -> `responseheaders` -> `response` (or `error`). In `log` mode the
tunnel is not decrypted: mitmproxy relays it as raw TCP (`tcp_start`, `tcp_message`, `tcp_end`), and the
tunnel is logged when it closes. Every answer the proxy produces itself (refusal, replayed page, 404) is
set in `requestheaders`, so no connection to the web is opened for it.
"""

import logging
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO
from urllib.parse import urljoin

from mitmproxy import connection, http, tcp, tls
from mitmproxy.proxy import server_hooks

from sandbox.egress._config import EgressConfig
from sandbox.egress._corpus import CorpusRecorder, ReplayCorpus
from sandbox.egress._denylist import Denylist
from sandbox.models import BlockReason, NetworkLog, RequestEvent, Source, TunnelEvent

logger = logging.getLogger("sandbox.egress")

_META = "omnidr"  # flow.metadata key of the addon's per-request state
_CONNECT_BLOCK = "omnidr.block"  # flow.metadata key: why a CONNECT was refused
_REFUSAL = {
    "deny_mode": "Blocked: this sandbox allows no web access.\n",
    "denylist": "Blocked: this host is on the sandbox's denylist.\n",
}
_NOT_RECORDED = "not in the replay corpus"
_TEXT = {"content-type": "text/plain; charset=utf-8"}


def _utc(timestamp: float | None) -> datetime:
    return datetime.fromtimestamp(timestamp if timestamp is not None else time.time(), UTC)


@dataclass
class _Exchange:
    """What the addon tracks for one HTTP request (kept in `flow.metadata`)."""

    local: bool = False  # the proxy produced the answer itself
    source: Source = "upstream"
    block_reason: BlockReason | None = None
    error: str | None = None
    streamed: bool = False
    received_bytes: int = 0
    record_file: IO[bytes] | None = None
    record_path: Path | None = None


@dataclass
class _Tunnel:
    """One CONNECT of one agent connection, until it is logged."""

    host: str
    port: int
    started: float
    status: int | None = None
    sent_bytes: int = 0
    received_bytes: int = 0
    requests: int = 0  # HTTP requests read inside the tunnel (each logged on its own)
    raw: bool = False  # relayed as raw TCP (log mode, or a non-HTTP protocol)
    errors: list[str] = field(default_factory=list)


class EgressAddon:
    def __init__(self, config: EgressConfig) -> None:
        self.config = config
        self.denylist = Denylist(list(config.denylist))
        self.corpus = ReplayCorpus(config.replay_dir) if config.replay_dir is not None else None
        self.recorder = CorpusRecorder(config.record_dir) if config.record_dir is not None else None
        self.log = NetworkLog(config.log_path)
        self.tunnels: dict[str, _Tunnel] = {}  # by agent connection id
        # headers set from the proxy's own environment (a search door's key); read once, never logged
        self.inject = {(host, header): os.environ[env] for host, header, env in config.inject}

    # ---- policy -----------------------------------------------------------------------------------

    def _host_refusal(self, host: str) -> BlockReason | None:
        if self.config.mode == "deny":
            return "deny_mode"
        return "denylist" if self.denylist.blocks_host(host) else None

    def _request_refusal(self, request: http.Request) -> BlockReason | None:
        if self.config.mode == "deny":
            return "deny_mode"
        path = request.path
        for host in {request.host, request.pretty_host}:
            if host and self.denylist.blocks_url(host, path):
                return "denylist"
        return None

    # ---- CONNECT tunnels ----------------------------------------------------------------------------

    def http_connect(self, flow: http.HTTPFlow) -> None:
        tunnel = _Tunnel(flow.request.host.lower(), flow.request.port, flow.request.timestamp_start)
        self.tunnels[flow.client_conn.id] = tunnel
        try:
            reason = self._host_refusal(flow.request.host)
        except Exception as exc:  # fail closed: a policy that cannot be applied lets nothing through
            logger.exception("egress policy failed for CONNECT %s", flow.request.host)
            flow.response = http.Response.make(502, "Egress proxy error.\n", _TEXT)
            tunnel.errors.append(f"egress proxy error: {exc!r}")
            return
        if reason is not None:
            flow.response = http.Response.make(403, _REFUSAL[reason], _TEXT)
            flow.metadata[_CONNECT_BLOCK] = reason

    def http_connected(self, flow: http.HTTPFlow) -> None:
        tunnel = self.tunnels.get(flow.client_conn.id)
        if tunnel is not None and flow.response is not None:
            tunnel.status = flow.response.status_code

    def http_connect_error(self, flow: http.HTTPFlow) -> None:
        tunnel = self.tunnels.pop(flow.client_conn.id, None)
        if tunnel is None:
            return
        reason: BlockReason | None = flow.metadata.get(_CONNECT_BLOCK)
        if flow.response is not None:
            tunnel.status = flow.response.status_code
            if reason is None:  # mitmproxy's own answer, e.g. 502 when the host cannot be reached
                tunnel.errors.append(flow.response.get_text(strict=False).split(" If you plan", 1)[0].strip())
        if flow.error is not None:
            tunnel.errors.append(flow.error.msg)
        self._write_tunnel(tunnel, blocked=reason)

    def tcp_start(self, flow: tcp.TCPFlow) -> None:
        tunnel = self._tunnel_of(flow)
        tunnel.raw = True

    def tcp_message(self, flow: tcp.TCPFlow) -> None:
        tunnel = self._tunnel_of(flow)
        for message in flow.messages:
            if message.from_client:
                tunnel.sent_bytes += len(message.content)
            else:
                tunnel.received_bytes += len(message.content)
        flow.messages.clear()  # counted; do not keep a long tunnel's content in memory

    def tcp_end(self, flow: tcp.TCPFlow) -> None:
        tunnel = self.tunnels.pop(flow.client_conn.id, None)
        if tunnel is not None:
            self._write_tunnel(tunnel)

    def tcp_error(self, flow: tcp.TCPFlow) -> None:
        tunnel = self.tunnels.pop(flow.client_conn.id, None)
        if tunnel is not None:
            if flow.error is not None:
                tunnel.errors.append(flow.error.msg)
            self._write_tunnel(tunnel)

    def tls_failed_client(self, data: tls.TlsData) -> None:
        tunnel = self.tunnels.get(data.context.client.id)
        if tunnel is not None:
            error = str(data.conn.error)
            hint = "" if "trust" in error else " (does the agent trust the run's CA?)"
            tunnel.errors.append(f"TLS handshake between the agent and the proxy failed: {error}{hint}")

    def tls_failed_server(self, data: tls.TlsData) -> None:
        tunnel = self.tunnels.get(data.context.client.id)
        if tunnel is not None:
            tunnel.errors.append(f"TLS handshake between the proxy and the server failed: {data.conn.error}")

    def client_disconnected(self, client: connection.Client) -> None:
        tunnel = self.tunnels.pop(client.id, None)
        if tunnel is not None and (tunnel.requests == 0 or tunnel.raw):
            self._write_tunnel(tunnel)

    def _tunnel_of(self, flow: tcp.TCPFlow) -> _Tunnel:
        tunnel = self.tunnels.get(flow.client_conn.id)
        if tunnel is None:  # not expected in regular proxy mode: every TCP flow follows a CONNECT
            host, port = flow.server_conn.address or ("unknown", 0)
            tunnel = self.tunnels[flow.client_conn.id] = _Tunnel(str(host), int(port), flow.timestamp_created, 200)
        return tunnel

    def _write_tunnel(self, tunnel: _Tunnel, blocked: BlockReason | None = None) -> None:
        self.log.write(
            TunnelEvent(
                seq=self.log.next_seq(),
                started_at=_utc(tunnel.started),
                duration_s=round(max(0.0, time.time() - tunnel.started), 6),
                mode=self.config.mode,
                method="CONNECT",
                host=tunnel.host,
                port=tunnel.port,
                status=tunnel.status,
                sent_bytes=tunnel.sent_bytes,
                received_bytes=tunnel.received_bytes,
                blocked=blocked is not None,
                block_reason=blocked,
                error="; ".join(dict.fromkeys(tunnel.errors)) or None,
            )
        )

    # ---- HTTP requests ---------------------------------------------------------------------------

    def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        if self.config.offline:  # a guard: every answer in these modes is made by the proxy itself
            data.server.error = f"the egress proxy opens no connection to the web in {self.config.mode} mode"

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        exchange = _Exchange()
        flow.metadata[_META] = exchange
        tunnel = self.tunnels.get(flow.client_conn.id)
        if tunnel is not None:
            tunnel.requests += 1
        try:
            reason = self._request_refusal(flow.request)
            if reason is not None:
                self._answer(flow, exchange, http.Response.make(403, _REFUSAL[reason], _TEXT), "proxy")
                exchange.block_reason = reason
            elif self.corpus is not None:
                self._replay(flow, exchange)
            else:
                for (host, header), value in self.inject.items():
                    if flow.request.host.lower() == host:
                        flow.request.headers[header] = value
            if self.recorder is not None and flow.response is None:
                # Ask for an unencoded body, so that the recorded file is the page itself.
                flow.request.headers["accept-encoding"] = "identity"
        except Exception as exc:  # fail closed: never forward a request the policy could not judge
            logger.exception("egress policy failed for %s", flow.request.pretty_url)
            self._answer(flow, exchange, http.Response.make(502, "Egress proxy error.\n", _TEXT), "proxy")
            exchange.error = f"egress proxy error: {exc!r}"

    def _answer(self, flow: http.HTTPFlow, exchange: _Exchange, response: http.Response, source: Source) -> None:
        flow.response = response
        exchange.local = True
        exchange.source = source

    def _replay(self, flow: http.HTTPFlow, exchange: _Exchange) -> None:
        assert self.corpus is not None
        found = self.corpus.lookup(flow.request.pretty_url) if flow.request.method in ("GET", "HEAD") else None
        if found is None:
            self._answer(flow, exchange, http.Response.make(404, f"Not found: {_NOT_RECORDED}.\n", _TEXT), "proxy")
            exchange.error = _NOT_RECORDED
            return
        page, file = found
        body = file.read_bytes()
        headers = {"content-type": page.content_type}
        if flow.request.method == "HEAD":
            response = http.Response.make(200, b"", headers)
            response.headers["content-length"] = str(len(body))
        else:
            response = http.Response.make(200, body, headers)
        self._answer(flow, exchange, response, "replay")

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        exchange: _Exchange | None = flow.metadata.get(_META)
        response = flow.response
        if exchange is None or exchange.local or response is None:
            return
        if self._should_record(flow):
            assert self.recorder is not None
            if response.headers.get("content-encoding", "identity").strip().lower() != "identity":
                return  # encoded although identity was asked for: kept in memory and decoded in `response`
            exchange.record_path = self.recorder.partial_file()
            exchange.record_file = exchange.record_path.open("wb")

        def relay(chunk: bytes) -> bytes:
            exchange.received_bytes += len(chunk)
            if exchange.record_file is not None and chunk:
                exchange.record_file.write(chunk)
            return chunk

        exchange.streamed = True
        response.stream = relay  # relayed chunk by chunk, never held whole in memory

    def _should_record(self, flow: http.HTTPFlow) -> bool:
        return (
            self.recorder is not None
            and flow.request.method == "GET"
            and flow.response is not None
            and flow.response.status_code == 200
        )

    def response(self, flow: http.HTTPFlow) -> None:
        exchange: _Exchange | None = flow.metadata.get(_META)
        if exchange is None or flow.response is None:
            return
        response = flow.response
        recorded: str | None = None
        if not exchange.streamed:
            exchange.received_bytes = len(response.raw_content or b"")
        if self.recorder is not None and not exchange.local:
            try:
                recorded = self._record(flow, exchange, self.recorder)
            except Exception as exc:  # the agent has its answer; the line says the page was not saved
                logger.exception("recording %s failed", flow.request.pretty_url)
                exchange.error = f"not recorded: {exc!r}"
        self._write_request(flow, exchange, response.status_code, recorded)

    def _record(self, flow: http.HTTPFlow, exchange: _Exchange, recorder: CorpusRecorder) -> str | None:
        """Save a finished answer into the corpus; returns its path there, or None if it is not a page to keep."""
        assert flow.response is not None
        response, url = flow.response, flow.request.pretty_url
        content_type = response.headers.get("content-type", "application/octet-stream")
        recorded = None
        if exchange.record_file is not None and exchange.record_path is not None:
            exchange.record_file.close()
            exchange.record_file = None
            recorded = recorder.save(url, content_type, exchange.record_path)
        elif self._should_record(flow):
            recorded = recorder.save_bytes(url, content_type, response.get_content(strict=False) or b"")
        if 300 <= response.status_code < 400 and "location" in response.headers:
            recorder.note_redirect(url, urljoin(url, response.headers["location"]))
        return recorded

    def error(self, flow: http.HTTPFlow) -> None:
        exchange: _Exchange | None = flow.metadata.get(_META)
        if exchange is None:
            return
        if exchange.record_file is not None and exchange.record_path is not None:
            exchange.record_file.close()
            exchange.record_path.unlink(missing_ok=True)
            exchange.record_file = None
        if flow.error is not None:
            exchange.error = flow.error.msg
        status = flow.response.status_code if flow.response is not None else None
        if flow.response is not None and not exchange.streamed:
            exchange.received_bytes = len(flow.response.raw_content or b"")
        self._write_request(flow, exchange, status, None)

    def _write_request(
        self, flow: http.HTTPFlow, exchange: _Exchange, status: int | None, recorded: str | None
    ) -> None:
        request = flow.request
        end = flow.response.timestamp_end if flow.response is not None and flow.response.timestamp_end else time.time()
        content_type = flow.response.headers.get("content-type") if flow.response is not None else None
        self.log.write(
            RequestEvent(
                seq=self.log.next_seq(),
                started_at=_utc(request.timestamp_start),
                duration_s=round(max(0.0, end - request.timestamp_start), 6),
                mode=self.config.mode,
                method=request.method,
                host=request.host.lower(),
                port=request.port,
                status=status,
                sent_bytes=len(request.raw_content or b""),
                received_bytes=exchange.received_bytes,
                blocked=exchange.block_reason is not None,
                block_reason=exchange.block_reason,
                error=exchange.error,
                scheme="https" if request.scheme == "https" else "http",
                url=request.pretty_url,
                source=exchange.source,
                content_type=content_type,
                recorded_path=recorded,
            )
        )

    # ---- shutdown ------------------------------------------------------------------------------------

    def done(self) -> None:
        for tunnel in list(self.tunnels.values()):
            if tunnel.requests == 0 or tunnel.raw:
                tunnel.errors.append("still open when the proxy stopped")
                self._write_tunnel(tunnel)
        self.tunnels.clear()
        if self.recorder is not None:
            self.recorder.close()
        self.log.close()
