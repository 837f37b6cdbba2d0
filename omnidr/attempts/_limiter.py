"""One concurrency limit per upstream, shared by every gateway of a run: the host side.

Sixty attempts on one API key each retry a 429 on their own, in lockstep, and the provider sees a storm. Here the
driver runs a small HTTP service (`SharedLimiter`) that every gateway of the run asks before each upstream request
(`POST /acquire`) and tells how it ended (`POST /release`); it answers `/acquire` only when the upstream has room.
The limit follows AIMD, as TCP's congestion window does:
- it starts at the cap (`--max-connections`, default `DEFAULT_MAX_CONNECTIONS`);
- a 429, 503 or 529 halves it (never below 1), once per congestion event: answers to requests admitted before
  the last cut are that same event; and a `Retry-After` (or `retry-after-ms`) pauses every admission until it has
  passed (at most `RETRY_AFTER_MAX_S`);
- every other 2xx answer grows it by 1/limit (about one more request per round of answers), back up to the cap.

The service listens on the host's address on the helpers' Docker network, where the gateways are (the agents are
not: they reach only their gateway and proxy), and asks a token of every caller. A ticket not released within
`LEASE_S` (a gateway killed mid-request) is taken back. The local executor runs one for the run; attempts spread
over a Ray cluster run without it (their gateways are on other hosts), which the run's note says.
"""

import asyncio
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # aiohttp loads when a limiter starts: the evaluator image imports this stage without it
    from aiohttp import web

DEFAULT_MAX_CONNECTIONS = 64
"""Upstream requests in flight at once per upstream, over all the run's gateways, before any 429 cuts it."""
RETRY_AFTER_MAX_S = 60.0
LEASE_S = 900.0
CONGESTION = (429, 503, 529)


@dataclass
class Aimd:
    """The limit of one upstream (pure: the clock is passed in)."""

    cap: int
    limit: float = 0.0
    in_flight: int = 0
    paused_until: float = 0.0
    last_cut: float = float("-inf")
    cuts: int = 0
    first_cut: float | None = None  # when the first cut came (the clock's time)
    most_in_flight: int = 0
    tickets: dict[str, float] = field(default_factory=dict)  # ticket -> when it was admitted

    def __post_init__(self) -> None:
        self.limit = float(self.cap)

    def room(self, now: float) -> bool:
        self._reclaim(now)
        return now >= self.paused_until and self.in_flight < max(1, int(self.limit))

    def admit(self, now: float) -> str:
        ticket = secrets.token_hex(8)
        self.tickets[ticket] = now
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        return ticket

    def release(self, ticket: str, status: int, retry_after_s: float | None, now: float) -> None:
        admitted = self.tickets.pop(ticket, None)
        if admitted is None:
            return  # released twice, or reclaimed after its lease
        self.in_flight -= 1
        if status in CONGESTION:
            if admitted >= self.last_cut:  # a new congestion event, not another answer to the one already cut
                self.limit = max(1.0, self.limit / 2)
                self.last_cut = now
                self.cuts += 1
                self.first_cut = now if self.first_cut is None else self.first_cut
            if retry_after_s is not None and retry_after_s > 0:
                self.paused_until = max(self.paused_until, now + min(retry_after_s, RETRY_AFTER_MAX_S))
        elif 200 <= status < 300:
            self.limit = min(float(self.cap), self.limit + 1 / self.limit)

    def _reclaim(self, now: float) -> None:
        for ticket, admitted in list(self.tickets.items()):
            if now - admitted > LEASE_S:
                del self.tickets[ticket]
                self.in_flight -= 1

    def state(self) -> dict:
        return {"limit": round(self.limit, 3), "in_flight": self.in_flight, "cuts": self.cuts,
                "most_in_flight": self.most_in_flight, "cap": self.cap, "first_cut": self.first_cut}


class SharedLimiter:
    """The run's limiter service, in a thread of the driver: `url` and `token` go into every gateway's config."""

    def __init__(self, host: str, cap: int = DEFAULT_MAX_CONNECTIONS, clock=time.monotonic) -> None:
        if cap < 1:
            raise ValueError("the upstream connection cap is at least 1")
        self.cap, self.clock = cap, clock
        self.token = secrets.token_urlsafe(24)
        self.upstreams: dict[str, Aimd] = {}
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._changed: asyncio.Condition | None = None
        self._runner: web.AppRunner | None = None
        self.url = ""
        self._host = host
        self._thread = threading.Thread(target=self._serve, name="omnidr-upstream-limiter", daemon=True)
        self._thread.start()
        if not self._ready.wait(30) or not self.url:
            raise RuntimeError(f"the upstream limiter could not listen on {host}")

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._ready.set()
        self._loop.run_forever()

    async def _start(self) -> None:
        from aiohttp import web

        self._changed = asyncio.Condition()
        app = web.Application()
        app.router.add_post("/acquire", self._acquire)
        app.router.add_post("/release", self._release)
        app.router.add_get("/state", self._state)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, 0)
        try:
            await site.start()
        except OSError:
            return
        port = self._runner.addresses[0][1]
        self.url = f"http://{self._host}:{port}"

    def _authorised(self, request: "web.Request") -> bool:
        return secrets.compare_digest(request.headers.get("Authorization", ""), f"Bearer {self.token}")

    def _upstream(self, key: str) -> Aimd:
        return self.upstreams.setdefault(key, Aimd(self.cap))

    async def _acquire(self, request: "web.Request") -> "web.Response":
        if not self._authorised(request):
            return _json({"error": "bad token"}, status=401)
        key = str((await request.json()).get("upstream", ""))
        aimd, started = self._upstream(key), self.clock()
        assert self._changed is not None
        async with self._changed:
            while not aimd.room(self.clock()):
                wait = max(0.05, aimd.paused_until - self.clock()) if self.clock() < aimd.paused_until else 5.0
                try:
                    await asyncio.wait_for(self._changed.wait(), timeout=wait)
                except TimeoutError:
                    pass
            ticket = aimd.admit(self.clock())
        return _json({"ticket": ticket, "waited_s": round(self.clock() - started, 3),
                                  "limit": aimd.state()["limit"]})

    async def _release(self, request: "web.Request") -> "web.Response":
        if not self._authorised(request):
            return _json({"error": "bad token"}, status=401)
        body = await request.json()
        aimd = self._upstream(str(body.get("upstream", "")))
        retry_after = body.get("retry_after_s")
        assert self._changed is not None
        async with self._changed:
            aimd.release(str(body.get("ticket", "")), int(body.get("status") or 0),
                         float(retry_after) if isinstance(retry_after, int | float) else None, self.clock())
            self._changed.notify_all()
        return _json(aimd.state())

    async def _state(self, request: "web.Request") -> "web.Response":
        if not self._authorised(request):
            return _json({"error": "bad token"}, status=401)
        return _json({key: aimd.state() for key, aimd in self.upstreams.items()})

    def state(self) -> dict[str, dict]:
        return asyncio.run_coroutine_threadsafe(self._snapshot(), self._loop).result(10)

    async def _snapshot(self) -> dict[str, dict]:
        return {key: aimd.state() for key, aimd in self.upstreams.items()}

    def close(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def _json(body: object, status: int = 200) -> "web.Response":
    from aiohttp import web

    return web.json_response(body, status=status)
