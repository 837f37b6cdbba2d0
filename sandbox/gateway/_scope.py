"""What the gateway holds for one attempt, and the controller's switch from one attempt to the next.

A gateway process serves one attempt at a time. The attempt's scope is its agent token, budget meter,
retry policy, log files and exchange numbering. The sandbox may keep a gateway container for several
attempts of a run (issue 17's reused helper pair): the controller then seals the attempt that ended
(`POST /_gateway/seal`: its token is refused from then on, its exchanges still in flight finish, its
summary is written and its logs closed) and opens the next one (`POST /_gateway/open`: a new token,
fresh counters, new log files). An exchange keeps the scope it started in, so nothing of one attempt is
ever counted or logged in another's.

A short-answer attempt may end with the finalization stage (`POST /_gateway/finalize`, paper 002 App. C.2.3): the
scope remembers the last research request the agent sent (`research`), the stage is built from it, and from then
on the agent's token is refused (`finalized`) while the logs stay open until the seal.
"""

import asyncio
import itertools
import os
from dataclasses import dataclass
from pathlib import Path

from sandbox.gateway._apis import Route
from sandbox.gateway._budget import BudgetMeter
from sandbox.gateway._cost import Pricer
from sandbox.gateway._exchange import ExchangeLog, Redactor
from sandbox.gateway._upstream import RetryPolicy
from sandbox.models import PROVIDER_WEB_LOG, Budget, FinalizationResult, NetworkLog, ScopeReport

INITIAL = "initial"
"""The generation of the attempt a gateway starts with (from its config file)."""

@dataclass(frozen=True)
class ResearchRequest:
    """A model request as the agent sent it: its route (API) and its body, unparsed (kept as bytes, so that
    remembering the last one costs no copy of a conversation full of images)."""

    route: Route
    raw: bytes


@dataclass(frozen=True)
class ScopeFiles:
    """The files an attempt's exchanges are logged in."""

    log_path: Path
    """gateway.jsonl: one exchange per line."""
    summary_path: Path
    """The attempt's gateway summary (`AttemptReport`), rewritten after each exchange."""
    web_log_path: Path | None = None
    """The provider-side web events; None: `provider_web.jsonl` beside the exchange log."""


class AttemptScope:
    """One attempt's token, meter, retry policy, logs and numbering, and its exchanges in flight."""

    def __init__(self, generation: str, agent_token: str, budget: Budget, files: ScopeFiles, secrets: list[str],
                 backoff: dict[str, float], agent_address: str | None = None, pricer: Pricer | None = None) -> None:
        self.generation = generation
        self.agent_address = agent_address  # the only client served (the attempt's agent); None: any
        self.token = agent_token.encode()
        self.summary_path = files.summary_path
        every = [*secrets, agent_token]
        self.redactor = Redactor(every)
        self.log = ExchangeLog(files.log_path, every)
        web_log_path = files.web_log_path
        self.web_log = NetworkLog(web_log_path if web_log_path is not None else files.log_path.with_name(PROVIDER_WEB_LOG))
        self.meter = BudgetMeter(budget, pricer)
        self.policy = RetryPolicy(retries=budget.upstream_retries, **backoff)
        self.seq = itertools.count(1)
        self.sealed = False
        self.closed = False
        self.research: ResearchRequest | None = None  # the last model request the agent sent (admitted or refused)
        self.finalized = False  # research is over: the agent's token is refused
        self.finalization: FinalizationResult | None = None  # the finalization stage's result, once it has run
        self.finalizing = asyncio.Lock()  # one finalization at a time
        self.in_flight = 0
        self.admission = asyncio.Condition()  # requests waiting for the reservations before them (max_total_tokens)
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def budget(self) -> Budget:
        return self.meter.budget

    def enter(self) -> None:
        """An exchange of this attempt begins."""
        self.in_flight += 1
        self._idle.clear()

    def leave(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self._idle.set()

    def write_summary(self) -> None:
        """Write `GatewayState` to the summary file, atomically (temporary name, then rename)."""
        if self.closed:
            return
        path = self.summary_path
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(self.meter.state.model_dump_json(indent=2), "utf-8")
        os.replace(temporary, path)

    async def settle(self, grace_s: float) -> None:
        """Wait up to `grace_s` for the exchanges in flight to end."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout=grace_s)
        except TimeoutError:
            pass

    async def seal(self, grace_s: float) -> None:
        """Refuse the token from now on, give the exchanges in flight `grace_s` to end, then write the summary
        and close the logs. An exchange still running after that is neither counted nor logged any more."""
        self.sealed = True
        await self.settle(grace_s)
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.write_summary()
        self.closed = True
        self.log.close()
        self.web_log.close()

    def report(self) -> ScopeReport:
        return ScopeReport(generation=self.generation, sealed=self.sealed, in_flight=self.in_flight,
                           state=self.meter.state)
