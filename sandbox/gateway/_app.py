"""The aiohttp application: authenticate the agent, apply the budget, forward with the real key, relay, log."""

import asyncio
import hmac
import json
import signal
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

import aiohttp
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from sandbox.egress import Denylist
from sandbox.gateway._apis import (
    CHAT,
    COUNT_TOKENS,
    MESSAGES,
    MODELS,
    RESPONSES,
    TRANSCRIPTIONS,
    Family,
    RequestEdits,
    Route,
    StreamTally,
    edit_request,
    error_body,
    is_usage_only_chunk,
    multipart_summary,
    output_cap,
    request_problem,
    tally_body,
)
from sandbox.gateway._budget import NO_CAP, Cap
from sandbox.gateway._config import GatewayConfig, UpstreamConfig
from sandbox.gateway._cost import Pricer
from sandbox.gateway._exchange import REDACTED
from sandbox.gateway._finalize import finalization_body, judge_answer, keep_tool_blocks_valid, question_body
from sandbox.gateway._limit import SharedLimit
from sandbox.gateway._model_policy import decide
from sandbox.gateway._provider_tools import AnswerWatch, PolicyOutcome, apply_policy
from sandbox.gateway._scope import INITIAL, AttemptScope, ResearchRequest, ScopeFiles
from sandbox.gateway._sse import EventSplitter, parse_event
from sandbox.gateway._translate import Translation, plan
from sandbox.gateway._upstream import UpstreamAnswer, UpstreamUnreachable, send
from sandbox.models import (
    FINALIZATION_RETRY_NOTE,
    PROVIDER_WEB_LOG,
    AttemptOpen,
    FinalizationResult,
    FinalizeRequest,
    GatewayExchange,
    Outcome,
    ProviderEvent,
    TokenUsage,
)

ANTHROPIC_VERSION = "2023-06-01"  # sent upstream when the agent names none
# Where a translated request goes, after the upstream's base URL.
_UPSTREAM_PATH = {CHAT.name: "/chat/completions", RESPONSES.name: "/responses", MESSAGES.name: "/messages"}

# Never forwarded upstream: hop-by-hop headers, the agent's credentials, and headers aiohttp sets itself.
_NOT_FORWARDED = frozenset(
    {
        "host", "content-length", "transfer-encoding", "connection", "keep-alive", "te", "trailer", "upgrade",
        "expect", "proxy-authorization", "proxy-connection", "accept-encoding",
        "authorization", "x-api-key", "api-key", "cookie", "openai-organization", "openai-project",
    }
)  # fmt: skip
# Never relayed back: framing the gateway redoes (it sends bodies decompressed) and what aiohttp adds itself.
_NOT_RELAYED = frozenset(
    {
        "content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive", "set-cookie",
        "date", "server",
    }
)  # fmt: skip
_CREDENTIALS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie"})
# Harnesses built on the Stainless SDKs (openai, anthropic) obey this and skip their own retries.
_NO_RETRY = {"x-should-retry": "false"}

GATEWAY_KEY = web.AppKey["Gateway"]("gateway")


def _now() -> datetime:
    return datetime.now(UTC)


class _AgentGone(Exception):
    """The agent closed its connection while the answer was being written."""


class _Refusal(Exception):
    """A request the gateway answers with its own error, in the API's error shape (`_Exchange.refuse`)."""

    def __init__(self, status: int, outcome: Outcome, kind: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.outcome, self.kind, self.message, self.extra = status, outcome, kind, message, extra


@dataclass(frozen=True)
class _Prepared:
    """A request as it is sent upstream: its (edited, translated) body, the edits, and the bytes sent."""

    body: dict[str, Any] | None
    edits: RequestEdits
    payload: bytes | None


@dataclass(frozen=True)
class _Reply:
    """One finalization request's outcome."""

    text: str  # the answer's text
    rejection: str | None  # why it is not accepted; None: accepted
    usage: TokenUsage | None  # as counted from the upstream's usage
    replied: bool  # the model answered (False: the upstream failed or could not be reached)


class Gateway:
    """State of one gateway process: config, keys, budget meter, log, upstream connection pool."""

    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.upstreams: dict[Family, UpstreamConfig] = {}
        self.keys: dict[Family, str | None] = {}
        for family in ("openai", "anthropic"):
            upstream = getattr(config.upstreams, family)
            if upstream is not None:
                self.upstreams[family] = upstream
                self.keys[family] = upstream.resolve_key(family)
        self._admin_token = config.admin_token.get_secret_value().encode()
        # what every attempt's logs redact besides its own token: the real keys and the admin token
        self._secrets = [key for key in self.keys.values() if key] + [config.admin_token.get_secret_value()]
        self._backoff = {"backoff_s": config.retry_backoff_s, "backoff_max_s": config.retry_backoff_max_s,
                         "retry_after_max_s": config.retry_after_max_s}
        self.denylist = Denylist(config.denylist)
        # the run's shared limit per upstream (omnidr.attempts._limiter), asked before each upstream try
        self.limits: dict[str, SharedLimit] = {  # by the upstream's URL (the one the limiter counts)
            upstream.shown_url: SharedLimit(config.upstream_limit, upstream.shown_url)
            for upstream in self.upstreams.values()} if config.upstream_limit is not None else {}
        if config.upstream_limit is not None:
            self._secrets.append(config.upstream_limit.token.get_secret_value())
        # the run's price for its model: every attempt's exchanges are priced at it (None: unpriced)
        self.pricer = Pricer(config.pricing) if config.pricing is not None else None
        # the attempt served now (see _scope): the one of the config file until the controller opens another
        files = ScopeFiles(config.log_path, config.state_path, config.provider_web_path)
        self.scope = AttemptScope(INITIAL, config.agent_token.get_secret_value(), config.budget, files,
                                  self._secrets, self._backoff, config.agent_address, self.pricer)
        # the upstream families, and whether the OpenAI one serves /responses: decides translations
        self.families: dict[Family, bool] = {f: getattr(u, "responses_api", True) for f, u in self.upstreams.items()}
        self.session: aiohttp.ClientSession | None = None

    # ---- lifecycle ------------------------------------------------------------------------------

    def application(self) -> web.Application:
        app = web.Application(client_max_size=int(self.config.max_request_mb * 1024 * 1024))
        app[GATEWAY_KEY] = self
        add = app.router.add_route
        add("POST", "/v1/chat/completions", self._handler(CHAT))
        add("POST", "/v1/responses", self._handler(RESPONSES))
        add("POST", "/v1/messages", self._handler(MESSAGES))
        add("POST", "/v1/messages/count_tokens", self._handler(COUNT_TOKENS))
        add("POST", "/v1/audio/transcriptions", self._handler(TRANSCRIPTIONS))
        add("GET", "/v1/models", self._handler(MODELS))
        add("GET", "/v1/models/{model_id}", self._handler(MODELS))
        add("GET", "/_gateway/state", self.state)
        add("POST", "/_gateway/seal", self.seal)
        add("POST", "/_gateway/open", self.open_attempt)
        add("POST", "/_gateway/finalize", self.finalize)
        add("GET", "/_gateway/health", self.health)
        add("*", "/{tail:.*}", self.not_found)
        app.on_startup.append(self._open)
        app.on_cleanup.append(self._close)
        return app

    async def _open(self, _app: web.Application) -> None:
        timeout = aiohttp.ClientTimeout(
            total=None, connect=self.config.connect_timeout_s, sock_read=self.config.read_timeout_s
        )
        connector = aiohttp.TCPConnector(limit=256, enable_cleanup_closed=True)
        # no cookie jar: a cookie an upstream set for one attempt would go back with the next attempt's requests
        # (a reused gateway serves many); the agent's own cookies are never forwarded either (_NOT_FORWARDED)
        self.session = aiohttp.ClientSession(timeout=timeout, connector=connector, trust_env=self.config.trust_env,
                                             cookie_jar=aiohttp.DummyCookieJar())

    async def _close(self, _app: web.Application) -> None:
        if self.session is not None:
            await self.session.close()
        self.scope.close()

    # ---- controller endpoints -------------------------------------------------------------------

    def _not_admin(self, request: web.Request) -> web.Response | None:
        if _token_matches(request, self._admin_token):
            return None
        message = f"{request.method} {request.path} needs the admin token."
        return web.json_response(error_body("openai", "authentication_error", message), status=401)

    async def state(self, request: web.Request) -> web.Response:
        if (refused := self._not_admin(request)) is not None:
            return refused
        return web.json_response(text=self.scope.meter.state.model_dump_json())

    async def seal(self, request: web.Request) -> web.Response:
        """End the attempt served now: its token is refused, its exchanges in flight get `seal_grace_s` to end,
        its summary is written and its logs closed. Answers the attempt's final `ScopeReport`."""
        if (refused := self._not_admin(request)) is not None:
            return refused
        await self.scope.seal(self.config.seal_grace_s)
        return web.json_response(text=self.scope.report().model_dump_json())

    async def open_attempt(self, request: web.Request) -> web.Response:
        """Serve the next attempt (`AttemptOpen`), once the last one is sealed: a new token, zero counters, new
        log files that must be empty. Answers the new attempt's `ScopeReport`, which the controller checks."""
        if (refused := self._not_admin(request)) is not None:
            return refused
        try:
            spec = AttemptOpen.model_validate_json(await request.read())
        except ValueError as exc:
            return web.json_response(error_body("openai", "invalid_request_error", f"bad attempt: {exc}"), status=400)
        if spec.budget.max_cost_usd is not None and self.pricer is None:
            message = "bad attempt: budget.max_cost_usd needs a price for the model, and this gateway has none"
            return web.json_response(error_body("openai", "invalid_request_error", message), status=400)
        if not self.scope.sealed:
            message = f"attempt {self.scope.generation} is not sealed; POST /_gateway/seal first"
            return web.json_response(error_body("openai", "conflict", message), status=409)
        web_log = spec.web_log_path or spec.log_path.with_name(PROVIDER_WEB_LOG)
        used = [str(p) for p in (spec.log_path, web_log, spec.summary_path) if p.exists() and p.stat().st_size]
        if used:
            message = f"the new attempt's files already hold data: {', '.join(used)}"
            return web.json_response(error_body("openai", "conflict", message), status=409)
        try:
            files = ScopeFiles(spec.log_path, spec.summary_path, web_log)
            self.scope = AttemptScope(spec.generation, spec.agent_token.get_secret_value(), spec.budget, files,
                                      self._secrets, self._backoff, spec.agent_address, self.pricer)
        except OSError as exc:
            message = f"the new attempt's files cannot be opened: {exc}"
            return web.json_response(error_body("openai", "server_error", message), status=500)
        self.scope.write_summary()
        return web.json_response(text=self.scope.report().model_dump_json())

    async def finalize(self, request: web.Request) -> web.Response:
        """Run the finalization stage of the attempt served now (`FinalizeRequest`, paper 002 App. C.2.3) and answer
        its `FinalizationResult`. From now on the agent's token is refused. A second call answers the first
        call's result again without asking the model."""
        if (refused := self._not_admin(request)) is not None:
            return refused
        try:
            spec = FinalizeRequest.model_validate_json(await request.read())
        except ValueError as exc:
            return web.json_response(error_body("openai", "invalid_request_error", f"bad finalize request: {exc}"),
                                     status=400)
        scope = self.scope
        if scope.sealed:
            message = f"attempt {scope.generation} is sealed; finalize it before the seal"
            return web.json_response(error_body("openai", "conflict", message), status=409)
        async with scope.finalizing:
            if scope.finalization is None:
                scope.finalized = True  # research is over: the agent's token is refused from here on
                await scope.settle(self.config.seal_grace_s)  # research exchanges in flight are logged first
                scope.enter()
                try:
                    result = await self._finalization_stage(scope, spec)
                finally:
                    scope.leave()
                scope.finalization = result
                scope.meter.state.finalization_accepted = result.accepted
                scope.write_summary()
        return web.json_response(text=scope.finalization.model_dump_json())

    async def _finalization_stage(self, scope: AttemptScope, spec: FinalizeRequest) -> FinalizationResult:
        """At most `spec.max_requests` tool-free requests on the research conversation, until one is accepted."""
        if scope.research is not None:
            route, body = scope.research.route, json.loads(scope.research.raw)
        else:  # no research request: the question alone, in the family of the run's first upstream
            route = CHAT if next(iter(self.upstreams)) == "openai" else MESSAGES
            if spec.model is None:
                return FinalizationResult(rejected=["research sent no model request and the finalize request names "
                                                    "no model to ask"], family=None)
            body = question_body(route, spec.model, spec.question)
        if spec.model is not None and not body.get("model"):
            body["model"] = spec.model
        answered, used, sent = "", 0, 0
        rejected: list[str] = []
        note: str | None = None
        for number in range(spec.max_requests):
            cap = spec.first_tokens if number == 0 else spec.total_tokens - used
            if cap < 1:
                rejected.append(f"no output tokens left of the stage's {spec.total_tokens} for request {number + 1}")
                break
            prompt = spec.prompt if note is None else spec.prompt + "\n\n" + FINALIZATION_RETRY_NOTE.format(reason=note)
            reply = await self._finalization_request(scope, route, body, prompt, cap)
            sent += 1
            if reply.replied:  # an answer without usage counts as the whole cap spent
                used += reply.usage.output_tokens if reply.usage is not None else cap
            if reply.rejection is None:
                answered = reply.text
                break
            rejected.append(reply.rejection)
            note = reply.rejection if reply.replied else None  # the next request tells the model why, if it answered
        return FinalizationResult(answer=scope.redactor.text(answered), accepted=bool(answered), requests=sent,
                                  output_tokens=used if sent else 0, rejected=rejected, family=route.family, api=route.name)

    async def _finalization_request(self, scope: AttemptScope, route: Route, research: dict[str, Any], prompt: str,
                                    cap: int) -> "_Reply":
        """Send one finalization request upstream as research requests go (real key, translation, retries), never
        streamed, and log it with phase `finalization`."""
        t0 = time.perf_counter()
        body, notes = finalization_body(route, research, prompt, cap)
        record: dict[str, Any] = {"seq": next(scope.seq), "phase": "finalization", "started_at": _now(),
                                  "method": "POST", "path": "/_gateway/finalize", "route": route.name,
                                  "model": body.get("model") if isinstance(body.get("model"), str) else None}
        target = plan(route, self.families)
        translation = Translation(route, target) if target is not None else None
        upstream_route = target if target is not None else route
        if translation is not None:
            record["client_request_body"] = json.loads(json.dumps(body))
            body = translation.request(body)
            record.update(translation=translation.label, translation_dropped=translation.dropped)
            if upstream_route is MESSAGES:  # the agent's API had no tool blocks to keep valid; Messages has
                keep_tool_blocks_valid(body, None, notes)
        notes += edit_request(upstream_route, body, scope.budget.max_output_tokens).notes
        record.update(request_edits=notes, request_body=body)
        family = upstream_route.family
        assert family is not None and self.session is not None
        upstream = self.upstreams[family]
        rest = _UPSTREAM_PATH[upstream_route.name]
        url, shown = upstream.base_url.rstrip("/") + rest, upstream.shown_url.rstrip("/") + rest
        record["upstream_url"] = shown
        if shown != url:
            record["upstream_via"] = url
        headers = self._keyed(CIMultiDict({"Content-Type": "application/json", "Accept": "application/json"}),
                              family, upstream)
        usage: TokenUsage | None = None
        try:
            answer = await send(self.session, "POST", url, headers, json.dumps(body, ensure_ascii=False).encode(),
                                scope.policy, self.limits.get(upstream.shown_url))
        except UpstreamUnreachable as exc:
            unreachable = f"the upstream could not be reached after {exc.retries + 1} tries ({exc.reason})"
            record.update(status=502, outcome="upstream_unreachable", error=unreachable, retries=exc.retries,
                          retry_reasons=exc.retry_reasons + [exc.reason])
            scope.meter.record_finalization(None, exc.retries, failed=True)
            self._log_finalization(scope, record, t0)
            return _Reply("", unreachable, None, replied=False)
        broken: str | None = None
        try:
            raw = answer.body if answer.body is not None else await answer.response.read()
        except (TimeoutError, aiohttp.ClientError) as exc:
            raw, broken = b"", f"{type(exc).__name__}: {exc}"
        finally:
            answer.response.release()
        status = answer.response.status
        parsed = _json_or_text(raw)
        ok = 200 <= status < 300 and broken is None and isinstance(parsed, dict)
        tool_calls = 0
        if ok:
            usage, tool_calls = tally_body(upstream_route, parsed)
        given = parsed
        if translation is not None:
            given = translation.response(parsed) if ok else translation.error(parsed, status)
            record["client_response_body"] = given
        record.update(self._limit_note(upstream, answer))
        record.update(status=status, upstream_status=status, outcome="ok" if ok else "upstream_error", usage=usage,
                      tool_calls=tool_calls, retries=answer.retries, retry_reasons=answer.retry_reasons,
                      response_headers=dict(_relayed_headers(answer.response.headers)), response_body=parsed)
        record["cost_usd"] = scope.meter.record_finalization(usage, answer.retries, failed=not ok)
        reason: str | None
        if ok:
            text, reason = judge_answer(route, given)
        else:
            text, reason = "", f"the upstream answered {status}" + (f" ({broken})" if broken else "")
            record["error"] = reason
        if reason is not None and ok:
            record["error"] = f"finalization answer rejected: {reason}"
        self._log_finalization(scope, record, t0)
        return _Reply(text, reason, usage, replied=ok)

    @staticmethod
    def _log_finalization(scope: AttemptScope, record: dict[str, Any], t0: float) -> None:
        elapsed = round(time.perf_counter() - t0, 6)
        record.update(finished_at=_now(), latency_s=elapsed, first_byte_s=elapsed)
        if not scope.closed:
            scope.log.write(GatewayExchange(**record))
        scope.write_summary()

    async def health(self, _request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    # ---- agent endpoints ------------------------------------------------------------------------

    def _handler(self, route: Route):
        async def handle(request: web.Request) -> web.StreamResponse:
            return await self.relay(request, route)

        return handle

    async def not_found(self, request: web.Request) -> web.StreamResponse:
        exchange = _Exchange(self, self.scope, request, Route("unknown", None, counted=False))
        family = self._family_of(request)
        message = f"The OmniDR model gateway has no route {request.method} {request.path}."
        return await exchange.refuse(family, 404, "not_found", "not_found_error", message)

    async def relay(self, request: web.Request, route: Route) -> web.StreamResponse:
        scope = self.scope  # the exchange stays in the attempt it started in
        scope.enter()
        exchange = _Exchange(self, scope, request, route)
        try:
            return await self._relay(request, route, exchange)
        except web.HTTPException:
            raise  # aiohttp's own answers (none are raised on purpose here; kept as aiohttp means them)
        except Exception as exc:  # noqa: BLE001 - whatever the request or the answer held, the exchange ends logged
            return await exchange.fail(exc)
        finally:
            if exchange.reserved is not None:  # its answer is counted (or it failed): the next may be admitted
                scope.meter.release(exchange.reserved)
                async with scope.admission:
                    scope.admission.notify_all()
            scope.leave()

    async def _relay(self, request: web.Request, route: Route, exchange: "_Exchange") -> web.StreamResponse:
        family = route.family or self._family_of(request)
        exchange.family = family
        try:
            return await self._forward(request, route, exchange)
        except _Refusal as refusal:
            return await exchange.refuse(family, refusal.status, refusal.outcome, refusal.kind, refusal.message,
                                         **refusal.extra)

    async def _forward(self, request: web.Request, route: Route, exchange: "_Exchange") -> web.StreamResponse:
        """Check, count, edit (and translate) the agent's request, send it upstream and relay the answer; a request
        the gateway answers itself raises `_Refusal`."""
        scope, family = exchange.scope, exchange.family
        self._check_access(request, scope)
        # a model request whose API the upstream does not speak is translated (see _translate)
        target = plan(route, self.families) if route.counted and route.json else None
        translation = Translation(route, target) if target is not None else None
        upstream = self.upstreams.get(target.family if target is not None and target.family else family)
        if upstream is None:
            raise _Refusal(404, "not_found", "not_found_error",
                           f"The OmniDR model gateway has no {family} upstream configured for this attempt.")
        raw, body = await self._read_request(request, route, exchange)
        prepared = _Prepared(body, RequestEdits(notes=[]), raw or None)
        if route.counted and not route.json:
            await self._admit(exchange, body)
        elif route.counted:
            assert body is not None
            prepared = await self._prepare_model_request(route, exchange, raw, body, translation)
        exchange.record["request_edits"] = prepared.edits.notes
        exchange.record["request_body"] = prepared.body

        url, shown = self._upstream_url(request, translation, upstream)
        exchange.record["upstream_url"] = shown
        if shown != url:
            exchange.record["upstream_via"] = url
        assert self.session is not None
        if translation is not None:
            stream = bool(prepared.body and prepared.body.get("stream"))
            headers = self._translated_headers(translation, upstream, stream=stream)
        else:
            headers = self._upstream_headers(request.headers, family, upstream)
        try:
            answer = await send(self.session, request.method, url, headers, prepared.payload, scope.policy,
                                self.limits.get(upstream.shown_url))
        except UpstreamUnreachable as exc:
            exchange.record.update(retries=exc.retries, retry_reasons=exc.retry_reasons + [exc.reason])
            exchange.account(None, 0, exc.retries, failed=True)
            raise _Refusal(502, "upstream_unreachable", "upstream_unreachable", (
                f"The OmniDR model gateway could not reach the model API at {shown} after {exc.retries + 1} tries "
                f"(last error: {exc.reason}).")) from exc

        exchange.record.update(retries=answer.retries, retry_reasons=answer.retry_reasons,
                               **self._limit_note(upstream, answer))
        try:
            if answer.body is None:
                return await exchange.relay_stream(answer, prepared.edits.hide_usage_chunk)
            return await exchange.relay_body(answer)
        finally:
            answer.response.release()
            await answer.done(self.session)

    @staticmethod
    def _check_access(request: web.Request, scope: AttemptScope) -> None:
        """Only this attempt's agent, with its token, during research."""
        if scope.agent_address is not None and (request.remote or "").removeprefix("::ffff:") != scope.agent_address:
            # not this attempt's agent (a last attempt's agent still alive, another container): token or not
            raise _Refusal(403, "unauthorized", "permission_error",
                           "This model gateway serves the current attempt's agent only.")
        if scope.sealed or not _token_matches(request, scope.token):
            raise _Refusal(401, "unauthorized", "authentication_error", (
                "Missing or wrong API key for the OmniDR model gateway (use the token this attempt was given)."))
        if scope.finalized:
            raise _Refusal(401, "unauthorized", "authentication_error", (
                "Research has ended for this attempt (its finalization stage has begun): the OmniDR model "
                "gateway takes no more requests from the agent."))

    async def _read_request(self, request: web.Request, route: Route,
                            exchange: "_Exchange") -> tuple[bytes, dict[str, Any] | None]:
        """The request's bytes and its body (a JSON object; a multipart request's summary; None for a GET)."""
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge as exc:
            raise _Refusal(413, "bad_request", "request_too_large", (
                f"The request body is larger than the gateway accepts ({self.config.max_request_mb:g} MiB).")) from exc
        body: dict[str, Any] | None = None
        if not route.json:  # multipart: logged as a summary, forwarded unchanged
            body = multipart_summary(raw, request.headers.get("Content-Type", ""))
            model = body["fields"].get("model")
            exchange.record["model"] = model if isinstance(model, str) else None
        elif request.method == "POST":
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            if not isinstance(body, dict):
                exchange.record["request_body"] = raw.decode("utf-8", "replace")
                raise _Refusal(400, "bad_request", "invalid_request_error", "The request body must be a JSON object.")
            model = body.get("model")
            exchange.record["model"] = model if isinstance(model, str) else None
            if route.counted:  # the evidence so far, for a finalization stage after research (admitted or not)
                exchange.scope.research = ResearchRequest(route, raw)
        return raw, body

    async def _prepare_model_request(self, route: Route, exchange: "_Exchange", raw: bytes, body: dict[str, Any],
                                     translation: Translation | None) -> "_Prepared":
        """A model request's checks (model policy, provider-side tools, what the gateway can serve), its
        admission against the budget, and the edits (and translation) it is sent with."""
        scope = exchange.scope
        model_notes = self._apply_model_policy(exchange, body)
        # provider-side tools first: a refused request is no model request (App. F.1's iterations)
        policy = apply_policy(route, body, self.config.provider_tools, self.denylist)
        exchange.policy = policy
        exchange.record["provider_tools"] = [d.dump() for d in policy.decisions]
        if policy.refusal is not None:
            exchange.record["request_body"] = body
            raise _Refusal(400, "provider_tool_refused", "provider_tool_refused",
                           f"The OmniDR model gateway refused this request: {policy.refusal}.")
        payload = json.dumps(body, ensure_ascii=False).encode() if policy.decisions else raw or None
        # a request the gateway cannot serve as asked is refused before it is counted: no iteration spent
        if (problem := request_problem(route, body)) is not None:
            exchange.record["request_body"] = body
            raise _Refusal(400, "bad_request", "invalid_request_error",
                           f"The OmniDR model gateway refused this request: {problem}.")
        # what it may cost at most: its size in bytes for its input (a text token is at least one byte), and
        # its output cap; reserved against a total-token budget until its answer is counted
        exchange.input_bound = len(raw)
        exchange.output_bound = output_cap(route, body, scope.budget.max_output_tokens)
        cap = scope.meter.cap(exchange.input_bound, exchange.output_bound)
        if translation is not None:
            body = self._translate_request(exchange, translation, body)
        exchange.watch = AnswerWatch(route, policy, self.denylist) if translation is None else None
        await self._admit(exchange, body, cap)
        edits = edit_request(translation.upstream if translation is not None else route, body,
                             scope.budget.max_output_tokens)
        edits.notes[:0] = model_notes
        if edits.notes or translation is not None:
            payload = json.dumps(body, ensure_ascii=False).encode()
        return _Prepared(body, edits, payload)

    def _apply_model_policy(self, exchange: "_Exchange", body: dict[str, Any]) -> list[str]:
        """One system, one model (see _model_policy): before anything is counted or sent. Returns the edit notes."""
        decision = decide(self.config.model_policy, self.config.model, exchange.record["model"],
                          self.config.provider_tools.web_search == "deny")
        if decision.refusal is not None:
            exchange.record["request_body"] = body
            raise _Refusal(400, "model_refused", "model_refused",
                           f"The OmniDR model gateway refused this request: {decision.refusal}.")
        exchange.record["model_sent"] = decision.sent
        if not decision.rewritten:
            return []
        body["model"] = decision.sent
        return [f"model {decision.asked!r} rewritten to the system's model {decision.sent!r} (model policy rewrite)"]

    @staticmethod
    def _translate_request(exchange: "_Exchange", translation: Translation, body: dict[str, Any]) -> dict[str, Any]:
        exchange.record["client_request_body"] = json.loads(json.dumps(body))
        try:
            translated = translation.request(body)
        except Exception as exc:  # noqa: BLE001 - a malformed request the translator cannot read
            exchange.record["request_body"] = exchange.record.pop("client_request_body")
            raise _Refusal(400, "bad_request", "invalid_request_error", (
                f"The OmniDR model gateway could not translate this request to the upstream's API "
                f"({translation.label}): {type(exc).__name__}: {exc}.")) from exc
        exchange.translation = translation
        exchange.record.update(translation=translation.label, translation_dropped=translation.dropped)
        return translated

    @staticmethod
    def _upstream_url(request: web.Request, translation: Translation | None,
                      upstream: UpstreamConfig) -> tuple[str, str]:
        """The URL the request is sent to, and the one the log shows (the user's URL, not the relay's address)."""
        rest = request.rel_url.raw_path.removeprefix("/v1")
        if translation is not None:
            rest = _UPSTREAM_PATH[translation.upstream.name]  # the agent's query (e.g. ?beta=true) is its API's
        elif request.rel_url.raw_query_string:
            rest += "?" + request.rel_url.raw_query_string
        return upstream.base_url.rstrip("/") + rest, upstream.shown_url.rstrip("/") + rest

    def _limit_note(self, upstream: UpstreamConfig, answer: UpstreamAnswer) -> dict[str, Any]:
        """What the run's shared upstream limit did to the request, for its log line."""
        limit = self.limits.get(upstream.shown_url)
        if limit is None:
            return {}
        note: dict[str, Any] = {"upstream_wait_s": answer.waited_s}
        if limit.unreachable:
            note["upstream_limit_error"] = f"the run's upstream limiter was not reached ({limit.unreachable}); sent anyway"
        return note

    async def _admit(self, exchange: "_Exchange", body: Any, cap: Cap = NO_CAP) -> None:
        """Count a model request against the budget; raises the refusal to send when it is spent. Under a
        total-token or dollar budget the request first waits until `cap`, the most it may cost, fits beside the
        requests in flight (`BudgetMeter.fits`), and holds it reserved until its answer is counted."""
        meter, admission = exchange.scope.meter, exchange.scope.admission
        async with admission:
            await admission.wait_for(lambda: meter.fits(cap))
            spent = meter.admit()
            if spent is None:
                meter.reserve(cap)
                exchange.reserved = cap
        if spent is not None:
            exchange.record["request_body"] = body
            exchange.record["budget_exhausted"] = spent
            raise _Refusal(400, "budget_exhausted", "budget_exhausted", meter.refusal_message(spent), budget=spent)
        exchange.record["counted"] = True

    def _family_of(self, request: web.Request) -> Family:
        """For routes both APIs share: Anthropic clients send `anthropic-version`, OpenAI clients do not."""
        family: Family = "anthropic" if "anthropic-version" in request.headers else "openai"
        if family not in self.upstreams and len(self.upstreams) == 1:
            family = next(iter(self.upstreams))
        return family

    def _translated_headers(self, translation: Translation, upstream: UpstreamConfig, stream: bool) -> CIMultiDict[str]:
        """A translated request's headers: none of the agent's (they belong to its API), the upstream's key."""
        family = translation.upstream.family
        assert family is not None
        headers = CIMultiDict({"Content-Type": "application/json",
                               "Accept": "text/event-stream" if stream else "application/json"})
        return self._keyed(headers, family, upstream)

    def _upstream_headers(
        self, incoming: CIMultiDictProxy[str], family: Family, upstream: UpstreamConfig
    ) -> CIMultiDict[str]:
        headers = CIMultiDict((k, v) for k, v in incoming.items() if k.lower() not in _NOT_FORWARDED)
        return self._keyed(headers, family, upstream)

    def _keyed(self, headers: CIMultiDict[str], family: Family, upstream: UpstreamConfig) -> CIMultiDict[str]:
        """`headers` with the upstream's real key, the Anthropic version when none is named, the fixed extras."""
        key = self.keys[family]
        if family == "anthropic":
            headers.setdefault("anthropic-version", ANTHROPIC_VERSION)
            if key:
                headers["x-api-key"] = key
        elif key:
            headers["Authorization"] = f"Bearer {key}"
        headers.update(upstream.extra_headers)
        return headers


def _token_matches(request: web.Request, expected: bytes) -> bool:
    """Whether `Authorization: Bearer` or `x-api-key` carries the expected token (constant-time compare)."""
    presented = []
    authorization = request.headers.get("Authorization", "")
    if authorization[:7].lower() == "bearer ":
        presented.append(authorization[7:].strip())
    if "x-api-key" in request.headers:
        presented.append(request.headers["x-api-key"].strip())
    return any(hmac.compare_digest(token.encode(), expected) for token in presented)


def _loggable_headers(headers: CIMultiDictProxy[str] | CIMultiDict[str]) -> dict[str, str]:
    return {k: (REDACTED if k.lower() in _CREDENTIALS else v) for k, v in headers.items()}


def _relayed_headers(upstream: CIMultiDictProxy[str]) -> CIMultiDict[str]:
    return CIMultiDict((k, v) for k, v in upstream.items() if k.lower() not in _NOT_RELAYED)


def _json_or_text(data: bytes) -> Any:
    text = data.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _sse_event(name: str | None, data: Any) -> bytes:
    """One server-sent event, re-encoded after the gateway changed (or translated) its data."""
    head = f"event: {name}\n" if name else ""
    text = data if data == "[DONE]" else json.dumps(data, ensure_ascii=False)
    return (head + "data: " + text + "\n\n").encode()


def _json_or_none(text: str | None) -> Any:
    if text is None or text == "[DONE]":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


class _Exchange:
    """One agent request on its way through the gateway; becomes a `GatewayExchange` line when it ends."""

    def __init__(self, gateway: Gateway, scope: AttemptScope, request: web.Request, route: Route) -> None:
        self.gateway = gateway
        self.scope = scope
        self.request = request
        self.route = route
        self.t0 = time.perf_counter()
        self.first_byte_s: float | None = None
        self.policy: PolicyOutcome | None = None  # provider-side tools of a model request
        self.watch: AnswerWatch | None = None  # set once the request is forwarded
        self.translation: Translation | None = None  # set when the upstream speaks another API
        self.family: Family = route.family or "openai"  # the API the agent speaks (its errors' shape)
        self.reserved: Cap | None = None  # the most it may cost, reserved at admission until the exchange ends
        self.input_bound = 0  # its size in bytes: the most input tokens it may cost (a text token is a byte or more)
        self.output_bound = 0  # its output cap
        self.accounted = False
        self.response: web.StreamResponse | None = None  # once the answer has begun to go out
        self.record: dict[str, Any] = {
            "seq": next(scope.seq),
            "started_at": _now(),
            "method": request.method,
            "path": request.path_qs,
            "route": route.name,
            "request_headers": _loggable_headers(request.headers),
        }

    def _mark_first_byte(self) -> None:
        if self.first_byte_s is None:
            self.first_byte_s = time.perf_counter() - self.t0

    async def refuse(
        self, family: Family, status: int, outcome: Outcome, kind: str, message: str, **extra: Any
    ) -> web.Response:
        """Answer with the gateway's own error, in the API's error shape."""
        headers = _NO_RETRY if status < 500 else {}
        response = web.json_response(error_body(family, kind, message, **extra), status=status, headers=headers)
        self.record.update(status=status, outcome=outcome, error=message,
                           response_body=json.loads(cast(str, response.text)))  # json_response: text is set
        self.record["response_headers"] = dict(response.headers)
        return await self._send_whole(response)

    async def _send_whole(self, response: web.Response) -> web.Response:
        """Log the exchange, then send the answer: the line is on disk before the agent has the answer."""
        self.finish()
        try:
            self.response = response
            await response.prepare(self.request)
            await response.write_eof()
        except ConnectionResetError:
            pass  # the agent left; its answer was complete on our side and is logged
        self.scope.write_summary()
        return response

    async def relay_body(self, answer: UpstreamAnswer) -> web.Response:
        upstream = answer.response
        assert answer.body is not None
        headers = _relayed_headers(upstream.headers)
        parsed = _json_or_text(answer.body)
        ok = 200 <= upstream.status < 300
        sent = answer.body
        if ok and self.watch is not None and isinstance(parsed, dict):
            self.watch.whole(parsed)
            if self.watch.changes:  # denylisted results taken out: the agent gets the filtered answer
                sent = json.dumps(parsed, ensure_ascii=False).encode()
        counted_as = self.route
        if self.translation is not None:
            counted_as = self.translation.upstream  # the upstream's own usage fields
            given = (self.translation.response(parsed) if ok and isinstance(parsed, dict)
                     else self.translation.error(parsed, upstream.status))
            self.record["client_response_body"] = given
            sent = json.dumps(given, ensure_ascii=False).encode()
            headers = CIMultiDict({k: v for k, v in headers.items() if k.lower() != "content-type"})
            headers["Content-Type"] = "application/json"
        response = web.Response(status=upstream.status, headers=headers, body=self.scope.redactor.bytes(sent))
        usage, tool_calls = tally_body(counted_as, parsed) if ok else (None, 0)
        self.record.update(
            status=upstream.status,
            upstream_status=upstream.status,
            outcome="ok" if ok else "upstream_error",
            usage=usage,
            tool_calls=tool_calls,
            response_headers=dict(headers),
            response_body=parsed,
        )
        if not ok:
            self.record["error"] = f"the upstream answered {upstream.status}"
        self.account(usage, tool_calls, answer.retries, failed=not ok)
        return await self._send_whole(response)

    async def relay_stream(self, answer: UpstreamAnswer, hide_usage_chunk: bool) -> web.StreamResponse:
        """Relay an event stream event by event as it arrives, tallying usage on the way."""
        upstream = answer.response
        headers = _relayed_headers(upstream.headers)
        response = web.StreamResponse(status=upstream.status, headers=headers)
        self.record.update(
            stream=True, status=upstream.status, upstream_status=upstream.status, response_headers=dict(headers)
        )
        relay = _StreamRelay(self, response, 200 <= upstream.status < 300, hide_usage_chunk)
        outcome, error, read_out = await relay.run(upstream)
        translated, redact = relay.translated, relay.redact
        usage, tool_calls = relay.tally.usage, relay.tally.tool_calls
        capped = False
        if outcome == "client_disconnected":
            capped = usage is None or not read_out  # no usage, or only the part a broken stream gave
            if capped:
                usage = TokenUsage(input_tokens=max(self.input_bound, usage.input_tokens if usage else 0),
                                   output_tokens=self.output_bound)
            self.record["charged"] = "cap" if capped else "usage"
        closing = b""
        if translated is not None and outcome == "ok":
            closing = b"".join(_sse_event(n, d) for n, d in translated.finish())
            relay.given.append(closing)
        self.record.update(
            outcome=outcome,
            error=error,
            usage=usage,
            tool_calls=tool_calls,
            response_body=b"".join(relay.received).decode("utf-8", "replace"),
        )
        if translated is not None:
            self.record["client_response_body"] = b"".join(relay.given).decode("utf-8", "replace")
        # Count and log before the stream's end reaches the agent, so its next request sees the new totals.
        self.account(usage, tool_calls, answer.retries, failed=outcome != "ok", capped=capped)
        self.finish()
        if outcome == "stream_broken":
            await self._break_stream(response, error or "")
        elif outcome != "client_disconnected":
            try:
                if closing:
                    await response.write(redact(closing))
                await response.write_eof()
            except ConnectionResetError:
                pass
        self.scope.write_summary()
        return response

    async def _break_stream(self, response: web.StreamResponse, error: str) -> None:
        """Tell the agent its stream broke: an error event in the API's shape, then a cut connection (no
        clean end), so that neither an SDK nor a raw client mistakes the truncated answer for a whole one."""
        message = f"OmniDR model gateway: {error}; the answer is incomplete."
        if self.route is CHAT:
            event = b"data: " + json.dumps(error_body("openai", "upstream_stream_broken", message)).encode()
        elif self.route is MESSAGES:
            body = error_body("anthropic", "upstream_stream_broken", message)
            event = b"event: error\ndata: " + json.dumps(body).encode()
        else:
            body = {"type": "error", "code": "upstream_stream_broken", "message": message, "param": None}
            event = b"event: error\ndata: " + json.dumps(body).encode()
        try:
            await response.write(self.scope.redactor.bytes(event + b"\n\n"))
        except ConnectionResetError:
            return
        if self.request.transport is not None:
            self.request.transport.abort()

    async def fail(self, exc: Exception) -> web.StreamResponse:
        """The gateway itself failed on this exchange (a request or an answer no branch above expected): the
        exchange still ends in one gateway.jsonl line (outcome `gateway_error`, with the reason); an admitted
        request is counted as a failed one; the agent gets a 500 in its API's shape, or a cut stream."""
        reason = f"the gateway failed on this exchange: {type(exc).__name__}: {exc}"
        print(f"omnidr model gateway: exchange {self.record['seq']}: {reason}", file=sys.stderr, flush=True)
        if self.record.get("counted") and not self.accounted:
            self.account(None, 0, 0, failed=True)
        if self.response is None:
            return await self.refuse(self.family, 500, "gateway_error", "api_error",
                                     f"The OmniDR model gateway failed on this request ({reason}).")
        self.record.update(outcome="gateway_error", error=reason)
        if "finished_at" not in self.record:
            self.finish()
        self.scope.write_summary()
        if self.request.transport is not None:
            self.request.transport.abort()  # no clean end: the answer is incomplete
        return self.response

    def account(self, usage: TokenUsage | None, tool_calls: int, retries: int, failed: bool,
                capped: bool = False) -> None:
        """Add what the exchange cost to its attempt's meter."""
        self.accounted = True
        if self.route.counted:
            self.record["cost_usd"] = self.scope.meter.record(usage, tool_calls, retries, failed, capped)
        else:
            self.scope.meter.record_retries(retries)

    def finish(self) -> None:
        """Write the exchange's log line (just before the answer's last bytes go out), and the provider-side
        searches and fetches it carried (or the one it was refused) to provider_web.jsonl."""
        elapsed = round(time.perf_counter() - self.t0, 6)
        if self.first_byte_s is None:  # a whole answer: its first byte goes out now
            self.first_byte_s = elapsed
        self.record.update(finished_at=_now(), latency_s=elapsed, first_byte_s=self.first_byte_s)
        found = self._provider_events(elapsed)
        if self.watch is not None:
            self.record.update(provider_web_events=len(found), denylisted_results=self.watch.removed)
        if self.scope.closed:  # sealed after its grace time: the attempt's files are final
            return
        self.scope.log.write(GatewayExchange(**self.record))
        for event in found:
            self.scope.web_log.write(event)

    def _provider_events(self, elapsed: float) -> list[ProviderEvent]:
        web_log = self.scope.web_log
        common = {"started_at": self.record["started_at"], "duration_s": elapsed, "exchange_seq": self.record["seq"],
                  "route": self.route.name}
        if self.policy is not None and self.policy.refusal is not None:
            return [ProviderEvent(seq=web_log.next_seq(), **common, tool=d.tool, kind=d.kind, policy=d.policy,
                                  action="refused", status="refused", blocked=True,
                                  block_reason="provider_tools_policy", error=self.record.get("error"))
                    for d in self.policy.decisions if d.action == "refused"]
        if self.watch is None or self.record.get("outcome") not in ("ok", "stream_broken", "client_disconnected"):
            return []
        return [ProviderEvent(seq=web_log.next_seq(), **common, **fields) for fields in self.watch.records()]


# ---- running it ---------------------------------------------------------------------------------


def create_app(config: GatewayConfig) -> web.Application:
    """The gateway as an aiohttp application (for embedding; `start_gateway` runs it)."""
    return Gateway(config).application()


class _StreamRelay:
    """One event stream on its way from the upstream to the agent: each event tallied, translated, filtered
    (a usage-only chunk the agent did not ask for, a citation of a denylisted page) and written on."""

    def __init__(self, exchange: _Exchange, response: web.StreamResponse, ok: bool, hide_usage_chunk: bool) -> None:
        translation = exchange.translation
        self.exchange = exchange
        self.response = response
        self.ok = ok  # the upstream answered 2xx
        self.hide_usage_chunk = hide_usage_chunk
        self.splitter = EventSplitter()
        self.translated = translation.stream() if translation is not None and ok else None
        self.tally = StreamTally(translation.upstream if translation is not None else exchange.route)
        self.given: list[bytes] = []  # a translated stream as the agent got it
        self.received: list[bytes] = []
        self.redact = exchange.scope.redactor.bytes
        self.watch = exchange.watch if ok else None

    async def run(self, upstream: aiohttp.ClientResponse) -> tuple[Outcome, str | None, bool]:
        """Relay the whole stream. Returns its outcome, the error (None: none) and, for an agent that left, whether
        the rest of the upstream's stream was read for its usage."""
        try:
            try:
                self.exchange.response = self.response
                await self.response.prepare(self.exchange.request)
            except ConnectionResetError:
                raise _AgentGone from None
            async for chunk in upstream.content.iter_any():
                self.received.append(chunk)
                await self.forward(self.splitter.feed(chunk))
            rest = self.splitter.rest()
            if rest:
                await self.forward([rest])
        except _AgentGone:
            read_out, note = await self.read_rest(upstream)
            return "client_disconnected", "the agent closed the connection during the stream" + note, read_out
        except (TimeoutError, aiohttp.ClientError) as exc:
            return "stream_broken", f"the upstream stream broke: {type(exc).__name__}: {exc}", False
        if self.ok:
            return "ok", None, False
        return "upstream_error", f"the upstream answered {upstream.status}", False

    async def read_rest(self, upstream: aiohttp.ClientResponse) -> tuple[bool, str]:
        """The agent left: the provider bills what it generates whether or not anyone reads it, so the rest of the
        stream (bounded by the request's output cap) is read for its usage; where it gives none, the most the
        request could cost is charged. Returns whether it was read out, and a note for the error when not."""
        # at most half the seal's grace, so that the line is written before an ended attempt's logs close
        within = self.exchange.gateway.config.seal_grace_s / 2
        try:
            async with asyncio.timeout(within):
                async for chunk in upstream.content.iter_any():
                    self.received.append(chunk)
                    for event in self.splitter.feed(chunk):
                        self.tally.feed(_json_or_none(parse_event(event)[1]))
                for event in [rest] if (rest := self.splitter.rest()) else []:
                    self.tally.feed(_json_or_none(parse_event(event)[1]))
        except TimeoutError:
            return False, f"; the rest of the upstream's stream was not over within {within:g} s"
        except aiohttp.ClientError as exc:
            return False, f"; the rest of the upstream's stream broke ({type(exc).__name__})"
        return True, ""

    async def forward(self, events: list[bytes]) -> None:
        passed = [out for event in events for out in self._passed(event)]
        if not passed:
            return
        if self.translated is not None:
            self.given.extend(passed)
        try:
            await self.response.write(self.redact(b"".join(passed)))
        except ConnectionResetError:
            raise _AgentGone from None
        self.exchange._mark_first_byte()

    def _passed(self, event: bytes) -> list[bytes]:
        """What the agent gets for one upstream event (nothing, the event, or it rewritten or translated)."""
        name, text = parse_event(event)
        data = _json_or_none(text)
        self.tally.feed(data)
        if self.translated is not None:
            return [_sse_event(n, d) for n, d in self.translated.feed(name, data if text != "[DONE]" else text)]
        if self.hide_usage_chunk and is_usage_only_chunk(data):
            return []
        if self.watch is not None and data is not None:
            before = self.watch.changes
            if not self.watch.event(data):
                return []  # a citation of a denylisted page
            if self.watch.changes != before:
                return [_sse_event(name, data)]
        return [event]


@dataclass
class RunningGateway:
    """A started gateway: where it listens, and how to stop it (which writes the summary)."""

    runner: web.AppRunner
    host: str
    port: int

    @property
    def gateway(self) -> Gateway:
        return self.runner.app[GATEWAY_KEY]

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}"

    async def stop(self) -> None:
        await self.runner.cleanup()


async def start_gateway(config: GatewayConfig) -> RunningGateway:
    """Start listening on `config.host:config.port` (port 0: a free port, see `.port`)."""
    runner = web.AppRunner(create_app(config), access_log=None, shutdown_timeout=5.0)
    await runner.setup()
    try:
        site = web.TCPSite(runner, config.host, config.port)
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    host, port = runner.addresses[0][:2]
    return RunningGateway(runner, host, port)


async def serve(config: GatewayConfig) -> None:
    """Run until SIGTERM or SIGINT, then finish in-flight exchanges and write the summary."""
    running = await start_gateway(config)
    families = ", ".join(f"{name} -> {up.shown_url}" + (f" (via {up.base_url})" if up.display_url else "")
                         for name, up in running.gateway.upstreams.items())
    print(f"omnidr model gateway listening on {running.host}:{running.port} ({families})", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        await running.stop()
        print(f"omnidr model gateway stopped; state written to {config.state_path}", file=sys.stderr, flush=True)
