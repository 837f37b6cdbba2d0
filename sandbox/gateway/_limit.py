"""The gateway's side of the run's shared upstream limit (`omnidr.attempts._limiter` is the host's side).

Before each try of an upstream request the gateway asks the run's limiter for a ticket (`acquire`, which waits
while the upstream has no room) and gives it back with how the try ended (`release`: the status, and the upstream's
`Retry-After`), so that all the run's gateways back off together after a 429 and grow back together. The limiter is
a courtesy to the provider, not a door: if it cannot be reached, the request goes on without a ticket (and the
exchange says so), never fails because of it.
"""

import time
from dataclasses import dataclass

import aiohttp

from sandbox.gateway._config import SharedLimitConfig

ASK_TIMEOUT_S = 3600.0  # an acquire waits as long as the upstream has no room (a long Retry-After included)


@dataclass
class Ticket:
    value: str | None  # None: the limiter was not reached, the try went without one
    waited_s: float


class SharedLimit:
    """One upstream's share of the run's limit, as one gateway asks for it."""

    def __init__(self, config: SharedLimitConfig, upstream: str) -> None:
        self.url = config.url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {config.token.get_secret_value()}"}
        self.upstream = upstream
        self.unreachable: str | None = None  # why the last ask failed, if it did

    async def acquire(self, session: aiohttp.ClientSession) -> Ticket:
        started = time.monotonic()
        try:
            async with session.post(f"{self.url}/acquire", json={"upstream": self.upstream}, headers=self.headers,
                                    timeout=aiohttp.ClientTimeout(total=ASK_TIMEOUT_S)) as answer:
                body = await answer.json()
                if answer.status != 200:
                    raise aiohttp.ClientError(f"status {answer.status}: {body}")
            self.unreachable = None
            return Ticket(str(body["ticket"]), round(time.monotonic() - started, 3))
        except (TimeoutError, aiohttp.ClientError, ValueError, KeyError) as exc:
            self.unreachable = f"{type(exc).__name__}: {exc}"
            return Ticket(None, round(time.monotonic() - started, 3))

    async def release(self, session: aiohttp.ClientSession, ticket: Ticket | None, status: int,
                      retry_after_s: float | None) -> None:
        if ticket is None or ticket.value is None:
            return
        body = {"upstream": self.upstream, "ticket": ticket.value, "status": status, "retry_after_s": retry_after_s}
        try:
            async with session.post(f"{self.url}/release", json=body, headers=self.headers,
                                    timeout=aiohttp.ClientTimeout(total=30)) as answer:
                await answer.read()
        except (TimeoutError, aiohttp.ClientError):
            pass  # the limiter takes the ticket back after its lease
        ticket.value = None
