"""The attempt's spending so far, and the rule that refuses requests once a budget is spent.

A budget is spent when
- `max_iterations`: that many model requests have been admitted (the next one would exceed it);
- `max_total_tokens`: input plus output tokens counted so far reach the limit;
- `max_tool_calls`: an answer's tool calls bring the count to the limit (or past it): the agent may still run
  them, and its next request is refused. Research ends at the limit, as OpenDS-World's does at 100 tool calls
  (paper 002, Sec. 3.1): the model never asks for call 101;
- `max_cost_usd`: the dollars counted so far (each answer's usage priced by `Pricer`) reach the limit.
From then on every model request is refused, and `budget_exhausted` names the first budget spent.

Requests in flight have not counted their tokens yet, so under `max_total_tokens` (and `max_cost_usd`) admission
reserves what each request may cost at most (its size in bytes for its input, as a text token is at least one
byte, plus its output cap; in dollars, those tokens at the dearest of the rates that may apply) until its answer is
counted (`release`), and a request whose cost does not fit beside what is counted and reserved waits (`fits`) until
the requests before it are counted. With nothing in
flight a request is admitted while the budget is not spent, so the tokens (dollars) counted pass the limit by at
most one request's cost however many requests the agent sends at once. The
finalization stage (`record_finalization`) is outside these budgets: it has its own token cap and only adds to
the figures.
"""

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from sandbox.gateway._cost import Pricer
from sandbox.models import Budget, BudgetName, GatewayState, TokenUsage


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Cap:
    """The most one request may cost: tokens, and dollars where the run is priced."""

    tokens: int
    usd: Decimal = Decimal(0)


NO_CAP = Cap(0)


class BudgetMeter:
    """Admits or refuses model requests and adds up what their answers cost (in dollars too, with a `pricer`)."""

    def __init__(self, budget: Budget, pricer: Pricer | None = None) -> None:
        now = _now()
        self.state = GatewayState(budget=budget, started_at=now, updated_at=now)
        self.pricer = pricer
        self.spent_usd = Decimal(0)  # exact; `state.cost_usd` is its float
        self.reserved = Cap(0)  # the most the admitted requests not counted yet may cost
        self.reservations = 0

    def cap(self, input_tokens: int, output_tokens: int) -> Cap:
        usd = self.pricer.bound(input_tokens, output_tokens) if self.pricer is not None else Decimal(0)
        return Cap(input_tokens + output_tokens, usd)

    def fits(self, cap: Cap) -> bool:
        """Whether a request that may cost `cap` may be decided now (admitted or refused): always without a
        total-token or dollar budget, when the budget is spent (it is refused), when nothing is in flight, or when
        the cap fits beside what is counted and reserved. Otherwise it waits for the requests in flight."""
        tokens, usd = self.budget.max_total_tokens, self.budget.max_cost_usd
        if self.state.budget_exhausted is not None or self.reservations == 0:
            return True
        return ((tokens is None or self.state.total_tokens + self.reserved.tokens + cap.tokens <= tokens)
                and (usd is None or self.spent_usd + self.reserved.usd + cap.usd <= Decimal(str(usd))))

    def reserve(self, cap: Cap) -> None:
        self.reserved = Cap(self.reserved.tokens + cap.tokens, self.reserved.usd + cap.usd)
        self.reservations += 1

    def release(self, cap: Cap) -> None:
        """The request's answer is counted (or it failed): its reservation ends."""
        self.reserved = Cap(self.reserved.tokens - cap.tokens, self.reserved.usd - cap.usd)
        self.reservations -= 1

    @property
    def budget(self) -> Budget:
        return self.state.budget

    def admit(self) -> BudgetName | None:
        """Count one model request, or return the spent budget that refuses it."""
        state = self.state
        state.updated_at = _now()
        if state.budget_exhausted is not None:
            state.refused_requests += 1
            return state.budget_exhausted
        state.requests += 1
        if state.requests >= self.budget.max_iterations:
            self._spend("max_iterations")
        return None

    def record(self, usage: TokenUsage | None, tool_calls: int, retries: int, failed: bool,
               capped: bool = False) -> float | None:
        """Add the cost of one admitted request's answer (`capped`: `usage` is its most possible cost, charged
        because the upstream reported none); returns its dollars, None when unpriced."""
        state, budget = self.state, self.budget
        state.updated_at = _now()
        state.charged_caps += int(capped)
        state.upstream_retries += retries
        state.failed_requests += int(failed)
        if usage is None:
            state.requests_without_usage += int(not failed)
        else:
            state.input_tokens += usage.input_tokens
            state.output_tokens += usage.output_tokens
            state.total_tokens = state.input_tokens + state.output_tokens
            state.server_search_requests += usage.server_search_requests or 0
            state.server_fetch_requests += usage.server_fetch_requests or 0
        cost = self._price(usage, answered=not failed)
        state.tool_calls += tool_calls
        if budget.max_total_tokens is not None and state.total_tokens >= budget.max_total_tokens:
            self._spend("max_total_tokens")
        if budget.max_tool_calls is not None and tool_calls and state.tool_calls >= budget.max_tool_calls:
            self._spend("max_tool_calls")
        if budget.max_cost_usd is not None and self.spent_usd >= Decimal(str(budget.max_cost_usd)):
            self._spend("max_cost_usd")
        return cost

    def record_finalization(self, usage: TokenUsage | None, retries: int, failed: bool = False) -> float | None:
        """Add the cost of one finalization request: its own counts, and the attempt's token and dollar totals.
        Research budgets are neither checked nor spent (research is over). Returns its dollars, None when
        unpriced."""
        state = self.state
        state.updated_at = _now()
        state.upstream_retries += retries
        state.finalization_requests += 1
        if usage is not None:
            state.finalization_input_tokens += usage.input_tokens
            state.finalization_output_tokens += usage.output_tokens
            state.input_tokens += usage.input_tokens
            state.output_tokens += usage.output_tokens
            state.total_tokens = state.input_tokens + state.output_tokens
        return self._price(usage, answered=not failed)

    def _price(self, usage: TokenUsage | None, answered: bool) -> float | None:
        """Add an answer's dollars to the attempt's; an answered request that cannot be priced (no price for the
        model, no usage) is counted as unpriced. A failed request without usage is not billed: None, not counted."""
        if usage is None or self.pricer is None:
            self.state.unpriced_requests += int(answered or usage is not None)
            return None
        cost = self.pricer.cost(usage)
        self.spent_usd += cost
        self.state.cost_usd = float(self.spent_usd)
        return float(cost)

    def record_retries(self, retries: int) -> None:
        """Retries of a request that is not a model request (model list, token count)."""
        self.state.upstream_retries += retries

    def refusal_message(self, name: BudgetName) -> str:
        state, budget = self.state, self.budget
        if name == "max_iterations":
            detail = f"the attempt's {budget.max_iterations} model requests are used up"
        elif name == "max_total_tokens":
            detail = f"{state.total_tokens} tokens used of the attempt's {budget.max_total_tokens}"
        elif name == "max_cost_usd":
            detail = f"${self.spent_usd:.6f} spent of the attempt's ${budget.max_cost_usd:g}"
        else:
            detail = f"the model asked for {state.tool_calls} tool calls, the attempt's limit is {budget.max_tool_calls}"
        return (
            f"Budget exhausted ({name}): {detail}. The OmniDR model gateway refuses every further model request "
            "in this attempt; do not retry. Finish with what you have."
        )

    def _spend(self, name: BudgetName) -> None:
        if self.state.budget_exhausted is None:
            self.state.budget_exhausted = name
            self.state.budget_exhausted_at = _now()
