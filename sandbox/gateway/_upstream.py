"""Sending one request upstream, re-sent on 5xx, 429 and connection failures before the agent sees anything."""

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import aiohttp
from multidict import CIMultiDictProxy

from sandbox.gateway._limit import SharedLimit, Ticket


def is_retryable(status: int) -> bool:
    return status == 429 or status >= 500


def is_event_stream(headers: CIMultiDictProxy[str]) -> bool:
    return headers.get("Content-Type", "").split(";")[0].strip().lower() == "text/event-stream"


@dataclass
class RetryPolicy:
    retries: int  # re-sends after the first try
    backoff_s: float  # first wait; doubles each time
    backoff_max_s: float
    retry_after_max_s: float  # a longer Retry-After is ignored in favour of the backoff

    def wait_s(self, retry: int, headers: CIMultiDictProxy[str] | None) -> float:
        """Seconds to wait before re-send number `retry` (from 1)."""
        asked = retry_after_s(headers) if headers is not None else None
        if asked is not None and asked <= self.retry_after_max_s:
            return asked
        return min(self.backoff_s * 2 ** (retry - 1), self.backoff_max_s)


def retry_after_s(headers: CIMultiDictProxy[str]) -> float | None:
    """The upstream's requested wait: `retry-after-ms` (OpenAI), or `Retry-After` in seconds or as a date."""
    try:
        if "retry-after-ms" in headers:
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        if "Retry-After" in headers:
            value = headers["Retry-After"].strip()
            try:
                return max(0.0, float(value))
            except ValueError:
                return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
    except (ValueError, TypeError, OverflowError):
        return None
    return None


@dataclass
class UpstreamAnswer:
    """The upstream's final answer: a stream still to be read, or a complete body."""

    response: aiohttp.ClientResponse
    body: bytes | None  # None for an event stream, which the caller relays as it arrives
    retries: int
    retry_reasons: list[str] = field(default_factory=list)
    waited_s: float = 0.0  # time spent waiting for the run's shared upstream limit, over the tries
    ticket: Ticket | None = None  # an event stream's ticket of the shared limit, released by `done` once relayed
    limit: SharedLimit | None = None

    async def done(self, session: aiohttp.ClientSession) -> None:
        """The answer is relayed (or abandoned): its place under the shared limit is given back."""
        if self.limit is not None:
            await self.limit.release(session, self.ticket, self.response.status, None)


class UpstreamUnreachable(Exception):
    """No answer from the upstream after every try."""

    def __init__(self, reason: str, retries: int, retry_reasons: list[str]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retries = retries
        self.retry_reasons = retry_reasons


async def send(
    session: aiohttp.ClientSession,
    method: str,
    url: str,
    headers: Mapping[str, str],
    payload: bytes | None,
    policy: RetryPolicy,
    limit: SharedLimit | None = None,
) -> UpstreamAnswer:
    """Send, re-sending on 5xx, 429, connection failures and timeouts, up to `policy.retries` times.

    A non-stream answer is read whole here, so a connection lost mid-body is retried too. After the
    last try a 5xx/429 answer is returned as it is; a connection failure raises `UpstreamUnreachable`.
    With `limit`, each try first waits for a ticket of the run's shared upstream limit and gives it back with its
    status (an event stream's when the caller calls `UpstreamAnswer.done`).
    """
    reasons: list[str] = []
    waited = 0.0
    for attempt in range(policy.retries + 1):
        last = attempt == policy.retries
        response = None
        ticket = await limit.acquire(session) if limit is not None else None
        waited += ticket.waited_s if ticket is not None else 0.0
        try:
            response = await session.request(method, url, headers=headers, data=payload, allow_redirects=False)
            if is_retryable(response.status) and not last:
                reasons.append(f"upstream status {response.status}")
                if limit is not None:
                    await limit.release(session, ticket, response.status, retry_after_s(response.headers))
                await _discard(response)
                await asyncio.sleep(policy.wait_s(attempt + 1, response.headers))
                continue
            stream = is_event_stream(response.headers)
            body = None if stream else await response.read()
            if limit is not None and not stream:
                await limit.release(session, ticket, response.status, retry_after_s(response.headers))
            return UpstreamAnswer(response, body, attempt, reasons, round(waited, 3), ticket if stream else None,
                                  limit)
        except (TimeoutError, aiohttp.ClientError) as exc:
            if response is not None:
                response.release()
            if limit is not None:
                await limit.release(session, ticket, 0, None)
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            if last:
                raise UpstreamUnreachable(reason, attempt, reasons) from None
            reasons.append(reason)
            await asyncio.sleep(policy.wait_s(attempt + 1, None))
    raise AssertionError("unreachable")  # the loop always returns or raises on its last try


async def _discard(response: aiohttp.ClientResponse) -> None:
    """Drop a failed answer's body (a failure to read it changes nothing: it is retried anyway)."""
    try:
        await response.read()
    except (TimeoutError, aiohttp.ClientError):
        pass
    finally:
        response.release()
