"""The mitmproxy addon: applies the mode and the denylist, serves `replay`, writes `record`, logs network.jsonl.

Hook order for one HTTPS request in `intercept` mode: `http_connect` (CONNECT host:port) ->
`http_connected` -> TLS with the agent using a certificate signed by the run's CA ->
`requestheaders` -> `request` -> `responseheaders` -> `response` (or `error`). In `log` mode the
tunnel is not decrypted: mitmproxy relays it as raw TCP (`tcp_start`, `tcp_message`, `tcp_end`), and the
tunnel is logged when it closes. Every answer the proxy produces itself (refusal, replayed page, 404) is
set in `requestheaders`, so no connection to the web is opened for it.

Generations (control requests, see `_control.py`): every tunnel and request belongs to the generation that was
open when it started, and its line goes to that generation's network.jsonl, or nowhere once that generation is
sealed. Between `seal` and the next `open` agent requests are answered 503 and not logged.
"""

import asyncio
import hmac
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urljoin

from mitmproxy import connection, ctx, http, tcp, tls
from mitmproxy.proxy import server_hooks
from pydantic import BaseModel, ValidationError

from sandbox.egress._ca import export_ca, make_ca, sha256_of
from sandbox.egress._config import CA_FILE, EgressConfig
from sandbox.egress._control import (
    CONTROL_HOST,
    INITIAL_GENERATION,
    ControlState,
    GenerationOpened,
    GenerationSealed,
    OpenGeneration,
)
from sandbox.egress._corpus import CorpusRecorder, ReplayCorpus
from sandbox.egress._denylist import Denylist
from sandbox.egress._networks import AddressPolicy, Refusal, Verdict
from sandbox.models import BlockReason, NetworkLog, RequestEvent, Source, TunnelEvent

logger = logging.getLogger("sandbox.egress")

_META = "omnidr"  # flow.metadata key of the addon's per-request state
_CONNECT_BLOCK = "omnidr.block"  # flow.metadata key: why a CONNECT was refused
_REFUSAL = {
    "deny_mode": "Blocked: this sandbox allows no web access.\n",
    "denylist": "Blocked: this host is on the sandbox's denylist.\n",
    "control": "Blocked: this is the egress proxy's control address, for the host only.\n",
    "sandbox_network": "Blocked: this address is in one of the sandbox's own networks, not on the web.\n",
    "private_network": "Blocked: this address is not on the public internet.\n",
    "not_the_agent": "Blocked: this proxy serves the current attempt's agent only.\n",
}
_BETWEEN_ATTEMPTS = "The sandbox is between attempts.\n"
_SEAL_TIMEOUT_S = 5.0  # how long `seal` waits for the closed connections' last hooks
_NOT_RECORDED = "not in the replay corpus"
_TEXT = {"content-type": "text/plain; charset=utf-8"}


def _utc(timestamp: float | None) -> datetime:
    return datetime.fromtimestamp(timestamp if timestamp is not None else time.time(), UTC)


@dataclass
class _Generation:
    """One attempt's share of the proxy: its network.jsonl and its CA."""

    id: str
    log: NetworkLog
    ca_sha256: str | None
    confdir: Path | None = None  # the folder of its CA, when made by `open` (removed by the next `open`)
    sealed: bool = False
    agent_address: str | None = None  # the only client served (the attempt's agent); None: any


@dataclass
class _Exchange:
    """What the addon tracks for one HTTP request (kept in `flow.metadata`)."""

    generation: _Generation
    logged: bool = True  # False for the host's control requests and the 503s between attempts
    control: bool = False  # an authorised control request, answered in `request` once its body is read
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
    generation: _Generation
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
        initial_ca = config.ca_out / CA_FILE if config.ca_out is not None and config.intercepts_tls else None
        self.generation = _Generation(INITIAL_GENERATION, NetworkLog(config.log_path),
                                      sha256_of(initial_ca) if initial_ca is not None and initial_ca.is_file() else None,
                                      agent_address=config.agent_address)
        self.opened = 0  # generations opened by control requests (their CA folders are numbered by it)
        self.between_attempts = False  # from the start of `seal` to the next `open`
        self.tunnels: dict[str, _Tunnel] = {}  # by agent connection id
        # headers set from the proxy's own environment (a search door's key); read once, never logged
        self.inject = {(host, header): os.environ[env] for host, header, env in config.inject}
        self.admin_token = os.environ[config.admin_token_env].encode() if config.admin_token_env else None
        self.addresses = AddressPolicy(config.refuse_nets, config.allow_nets, config.allow_endpoints)
        # (client connection id, host, port) -> the address a request's check judged: its connection goes there
        self.pins: dict[tuple[str, str, int], str] = {}
        self.renamed: dict[str, Any] = {}  # server connection id -> its address as named, while pinned to an IP

    @property
    def log(self) -> NetworkLog:
        """The current generation's network.jsonl."""
        return self.generation.log

    def _log_of(self, generation: _Generation) -> NetworkLog | None:
        """Where a line of `generation` goes: its log, or nowhere once it is sealed."""
        if generation.sealed:
            logger.info("a line of sealed generation %s is not written", generation.id)
            return None
        return generation.log

    def _is_control(self, host: str) -> bool:
        return self.admin_token is not None and host.lower().rstrip(".") == CONTROL_HOST

    # ---- policy -----------------------------------------------------------------------------------

    def _host_refusal(self, host: str) -> BlockReason | None:
        if self.config.mode == "deny":
            return "deny_mode"
        return "denylist" if self.denylist.blocks_host(host) else None

    def _not_the_agent(self, client: connection.Client) -> bool:
        """Whether `client` is not the current attempt's agent (a last attempt's agent still alive, a helper of
        another attempt): such a client is refused, whatever it asks for."""
        agent = self.generation.agent_address
        if agent is None:
            return False
        peer = str(client.peername[0]) if client.peername else ""
        return peer.removeprefix("::ffff:") != agent

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
        if self.between_attempts and not self._is_control(flow.request.host):
            flow.response = http.Response.make(503, _BETWEEN_ATTEMPTS, _TEXT)  # no tunnel: nothing is logged
            return
        tunnel = _Tunnel(flow.request.host.lower(), flow.request.port, flow.request.timestamp_start, self.generation)
        self.tunnels[flow.client_conn.id] = tunnel
        try:
            reason = ("control" if self._is_control(flow.request.host) else
                      "not_the_agent" if self._not_the_agent(flow.client_conn) else self._host_refusal(flow.request.host))
            refusal = None if self.config.offline else self.addresses.literal(flow.request.host, flow.request.port)
            if reason is None and refusal is not None:
                reason = refusal.reason  # an address; a name is resolved and checked in `server_connect`
                tunnel.errors.append(refusal.message)
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
        refusal = Refusal.from_error(flow.response.get_text(strict=False)) if flow.response is not None else None
        if reason is None and refusal is not None:
            # `server_connect` refused the early connection: a 403 like the other refusals, not mitmproxy's 502
            tunnel.errors.append(refusal.message)
            flow.response = http.Response.make(403, _REFUSAL[refusal.reason], _TEXT)
            reason = refusal.reason
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
        for key in [k for k in self.pins if k[0] == client.id]:
            del self.pins[key]
        tunnel = self.tunnels.pop(client.id, None)
        if tunnel is not None and (tunnel.requests == 0 or tunnel.raw):
            self._write_tunnel(tunnel)

    def _tunnel_of(self, flow: tcp.TCPFlow) -> _Tunnel:
        tunnel = self.tunnels.get(flow.client_conn.id)
        if tunnel is None:  # not expected in regular proxy mode: every TCP flow follows a CONNECT
            host, port = flow.server_conn.address or ("unknown", 0)
            tunnel = self.tunnels[flow.client_conn.id] = _Tunnel(str(host), int(port), flow.timestamp_created,
                                                                 self.generation, 200)
        return tunnel

    def _write_tunnel(self, tunnel: _Tunnel, blocked: BlockReason | None = None) -> None:
        log = self._log_of(tunnel.generation)
        if log is None:
            return
        log.write(
            TunnelEvent(
                seq=log.next_seq(),
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

    async def server_connect(self, data: server_hooks.ServerConnectionHookData) -> None:
        if self.config.offline:  # a guard: every answer in these modes is made by the proxy itself
            data.server.error = f"the egress proxy opens no connection to the web in {self.config.mode} mode"
        elif data.server.address is not None and data.server.error is None:
            host, port = str(data.server.address[0]), int(data.server.address[1])
            pinned = self.pins.pop((data.client.id, host.lower(), port), None)
            verdict = Verdict(None, pinned) if pinned is not None else await self.addresses.check(host, port)
            if verdict.refusal is not None:  # the agent gets 403 (see `http_connect_error`, `requestheaders`, `error`)
                data.server.error = f"refused: {verdict.refusal.message}"
            elif verdict.address is not None and verdict.address != host:
                # pinned: the connection goes to the address judged, not to a second look-up of the name
                if data.server.sni is None and AddressPolicy.is_name(host):
                    data.server.sni = host
                self.renamed[data.server.id] = data.server.address
                data.server.address = (verdict.address, port)

    def server_connected(self, data: server_hooks.ServerConnectionHookData) -> None:
        self._unpin(data.server)

    def server_connect_error(self, data: server_hooks.ServerConnectionHookData) -> None:
        self._unpin(data.server)

    def _unpin(self, server: connection.Server) -> None:
        """Once the pinned connection is opened (or failed), the server is named as the agent named it again:
        requests in a tunnel take their host from it, and the logs and errors show the name (`peername` keeps
        the address connected to)."""
        address = self.renamed.pop(server.id, None)
        if address is not None:
            # mitmproxy refuses `server.address = ...` on an open connection, to stop addons redirecting it; this
            # renames it to what it was already connected as, and redirects nothing
            object.__setattr__(server, "address", address)

    async def requestheaders(self, flow: http.HTTPFlow) -> None:
        exchange = _Exchange(self.generation)
        flow.metadata[_META] = exchange
        if self._is_control(flow.request.host):
            self._control_headers(flow, exchange)
            return
        if self.between_attempts:
            exchange.logged = False
            self._answer(flow, exchange, http.Response.make(503, _BETWEEN_ATTEMPTS, _TEXT), "proxy")
            return
        tunnel = self.tunnels.get(flow.client_conn.id)
        if tunnel is not None:
            tunnel.requests += 1
        try:
            reason = "not_the_agent" if self._not_the_agent(flow.client_conn) else self._request_refusal(flow.request)
            if reason is None and not self.config.offline:
                # A name is resolved here too, so that the agent gets a clean 403 rather than mitmproxy's 502 when
                # `server_connect` refuses (which it still does, on the address it connects to); a request inside a
                # tunnel goes where its CONNECT, checked, went.
                host, port = flow.request.host.lower(), flow.request.port
                if tunnel is not None and tunnel.host == host:
                    refusal = self.addresses.literal(host, port)
                else:
                    verdict = await self.addresses.check(host, port)
                    refusal = verdict.refusal
                    if refusal is None and verdict.address is not None:
                        self.pins[(flow.client_conn.id, host, port)] = verdict.address
                if refusal is not None:
                    reason = refusal.reason
                    exchange.error = refusal.message
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
            refusal = Refusal.from_error(flow.error.msg)
            if refusal is not None and exchange.block_reason is None:
                exchange.block_reason = refusal.reason
        status = flow.response.status_code if flow.response is not None else None
        if flow.response is not None and not exchange.streamed:
            exchange.received_bytes = len(flow.response.raw_content or b"")
        self._write_request(flow, exchange, status, None)

    def _write_request(
        self, flow: http.HTTPFlow, exchange: _Exchange, status: int | None, recorded: str | None
    ) -> None:
        log = self._log_of(exchange.generation) if exchange.logged else None
        if log is None:
            return
        request = flow.request
        end = flow.response.timestamp_end if flow.response is not None and flow.response.timestamp_end else time.time()
        content_type = flow.response.headers.get("content-type") if flow.response is not None else None
        log.write(
            RequestEvent(
                seq=log.next_seq(),
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

    # ---- control requests (generations) -----------------------------------------------------------------

    def _control_headers(self, flow: http.HTTPFlow, exchange: _Exchange) -> None:
        """A request to the control host: with the admin token it is answered in `request` (its body is needed)
        and not logged; without, it is refused 403 and logged as blocked, so that an agent probing it shows."""
        assert self.admin_token is not None
        given = flow.request.headers.get("authorization", "").encode()
        if hmac.compare_digest(given, b"Bearer " + self.admin_token):
            exchange.logged = False
            exchange.control = True
            exchange.local = True
            exchange.source = "proxy"
        else:
            self._answer(flow, exchange, http.Response.make(403, _REFUSAL["control"], _TEXT), "proxy")
            exchange.block_reason = "control"

    async def request(self, flow: http.HTTPFlow) -> None:
        exchange: _Exchange | None = flow.metadata.get(_META)
        if exchange is None or not exchange.control:
            return
        path, method = flow.request.path.split("?", 1)[0], flow.request.method
        try:
            if path == "/state" and method == "GET":
                flow.response = _json(200, self._state())
            elif path == "/open" and method == "POST":
                flow.response = await self._open(flow.request.get_content(strict=False) or b"")
            elif path == "/seal" and method == "POST":
                flow.response = await self._seal(flow.client_conn.id)
            elif path in ("/state", "/open", "/seal"):
                flow.response = _error(405, f"{method} {path}: use GET /state, POST /open or POST /seal")
            else:
                flow.response = _error(404, f"no control request {path}: use GET /state, POST /open or POST /seal")
        except Exception as exc:  # the host reads the reason; the proxy goes on
            logger.exception("control request %s %s failed", method, path)
            flow.response = _error(500, f"{method} {path} failed: {exc!r}")

    def _state(self) -> ControlState:
        g = self.generation
        return ControlState(generation=g.id, sealed=g.sealed, events=g.log.written, ca_sha256=g.ca_sha256)

    async def _open(self, body: bytes) -> http.Response:
        if self.config.mode == "record":
            return _error(409, "record mode is one attempt per proxy")
        if not self.generation.sealed:
            return _error(409, f"generation {self.generation.id} is still open: seal it first")
        try:
            spec = OpenGeneration.model_validate_json(body)
        except ValidationError as exc:
            return _error(400, f"open needs a JSON body {{generation, log_path, ca_out}}: {exc.errors()[0]['msg']}")
        self.opened += 1
        confdir: Path | None = None
        log = NetworkLog(Path(spec.log_path))
        try:
            ca_sha256, store = None, None
            if self.config.intercepts_tls:  # a fresh CA (new key) for this generation alone
                confdir = self.config.confdir / f"gen-{self.opened}"
                shutil.rmtree(confdir, ignore_errors=True)
                store = await asyncio.to_thread(make_ca, confdir)
                if spec.ca_out is not None:
                    ca_sha256 = sha256_of(export_ca(confdir, Path(spec.ca_out)))
        except BaseException:
            log.close()
            if confdir is not None:
                shutil.rmtree(confdir, ignore_errors=True)
            raise
        if store is not None:
            # mitmproxy's TLS add-on signs every certificate it makes for a new connection with `certstore`
            # (TlsConfig.get_cert -> self.certstore.get_cert); the new store has no certificate of the old CA cached.
            ctx.master.addons.get("tlsconfig").certstore = store
        previous = self.generation.confdir
        self.generation = _Generation(spec.generation, log, ca_sha256, confdir, agent_address=spec.agent_address)
        self.between_attempts = False
        if previous is not None:
            shutil.rmtree(previous, ignore_errors=True)
        logger.info("generation %s open: log %s", spec.generation, spec.log_path)
        return _json(200, GenerationOpened(generation=spec.generation, log_path=spec.log_path, ca_sha256=ca_sha256))

    async def _seal(self, own_client: str) -> http.Response:
        generation = self.generation
        if generation.sealed:
            return _error(409, f"generation {generation.id} is already sealed")
        self.between_attempts = True  # from now on agent requests get 503
        # Close the agents' connections as mitmproxy's inactivity timeout does (ConnectionHandler.on_timeout):
        # cancelling the client's task runs mitmproxy's own close path, whose hooks (error, tcp_end,
        # client_disconnected) still write the generation's last lines; Proxyserver.connections (by client id)
        # drops each connection once its client_disconnected hook has run.
        connections = ctx.master.addons.get("proxyserver").connections
        closing = [cid for cid in connections if cid != own_client]
        for cid in closing:
            handler = connections[cid]
            io = handler.transports.get(handler.client)
            if io is not None and io.handler is not None:
                io.handler.cancel("the attempt ended")
        deadline = time.monotonic() + _SEAL_TIMEOUT_S
        while any(cid in connections for cid in closing) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        self._flush_tunnels(generation, "still open when the attempt ended")
        generation.sealed = True
        generation.log.close()
        logger.info("generation %s sealed: %d events", generation.id, generation.log.written)
        return _json(200, GenerationSealed(generation=generation.id, events=generation.log.written))

    def _flush_tunnels(self, generation: _Generation, why: str) -> None:
        """Write the still-open tunnels of `generation` that have no line of their own yet, and forget them."""
        for client_id, tunnel in list(self.tunnels.items()):
            if tunnel.generation is not generation:
                continue
            if tunnel.requests == 0 or tunnel.raw:
                tunnel.errors.append(why)
                self._write_tunnel(tunnel)
            del self.tunnels[client_id]

    # ---- shutdown ------------------------------------------------------------------------------------

    def done(self) -> None:
        self._flush_tunnels(self.generation, "still open when the proxy stopped")
        self.tunnels.clear()
        if self.recorder is not None:
            self.recorder.close()
        if not self.generation.sealed:
            self.generation.log.close()


def _json(status: int, answer: BaseModel) -> http.Response:
    return http.Response.make(status, answer.model_dump_json(), {"content-type": "application/json"})


def _error(status: int, message: str) -> http.Response:
    return http.Response.make(status, json.dumps({"error": message}), {"content-type": "application/json"})
