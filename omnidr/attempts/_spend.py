"""`--max-cost USD`: what one invocation may spend on its attempts, in dollars.

The driver starts an attempt only while the dollars its finished attempts spent, plus the dollar budget of every
attempt running, plus the new attempt's own budget, stay within the cap; the rest are left unstarted, and the run
stops resumable (`SpendCapReached`): a rerun of the same command starts them (the cap counts that invocation's
spend only). An attempt's own dollar budget (`--budget cost=USD`) is what it reserves, so the cap needs one; the
gateway holds an attempt to its budget but for the last request it admitted (which may pass the limit by its own
cost) and the short-answer finalization stage (outside the research budgets, paper 002 App. C.2.3), so the spend
may pass the cap by those alone. Whatever an attempt really spent replaces its reservation when it ends; an attempt
whose cost is unknown (an answer without usage) is counted at its whole budget.
"""

import threading

from omnidr.errors import UserError
from sandbox.models import Budget


class SpendCapReached(UserError):
    """The run stopped at `--max-cost` with attempts left unstarted; a rerun finishes them."""

    exit_code = 3


class SpendCap:
    """The invocation's dollars: spent by finished attempts, reserved by running ones (thread-safe)."""

    def __init__(self, limit_usd: float, per_attempt_usd: float) -> None:
        if limit_usd <= 0:
            raise UserError(f"--max-cost {limit_usd:g}: give a positive number of US dollars")
        self.limit = limit_usd
        self.per_attempt = per_attempt_usd
        self.spent = 0.0
        self.reserved = 0.0
        self.started = 0
        self.left: list[str] = []  # tasks with an attempt left unstarted, in the order they were stopped
        self._lock = threading.Lock()

    def admit(self, task_id: str) -> bool:
        """Reserve one attempt's budget, or (when it could push the spend past the cap) note `task_id` as left."""
        with self._lock:
            if self.spent + self.reserved + self.per_attempt <= self.limit + 1e-12:
                self.reserved += self.per_attempt
                self.started += 1
                return True
            if task_id not in self.left:
                self.left.append(task_id)
            return False

    def settle(self, cost_usd: float | None) -> None:
        """An admitted attempt ended having spent `cost_usd` (None: unknown, counted at its budget)."""
        with self._lock:
            self.reserved -= self.per_attempt
            self.spent += self.per_attempt if cost_usd is None else cost_usd

    def check(self) -> None:
        """Raise `SpendCapReached` when attempts were left unstarted."""
        if self.left:
            shown = ", ".join(self.left[:6]) + (f" and {len(self.left) - 6} more" if len(self.left) > 6 else "")
            raise SpendCapReached(
                f"--max-cost ${self.limit:g} reached: this run spent ${self.spent:.4f} on {self.started} attempt(s) "
                f"and left {len(self.left)} task(s) unstarted ({shown}); rerun the same command to finish them "
                "(finished attempts are kept)")


def spend_cap(max_cost: float | None, budget: Budget) -> SpendCap | None:
    """The `--max-cost` of an invocation whose attempts run under `budget`; None without one."""
    if max_cost is None:
        return None
    if budget.max_cost_usd is None:
        raise UserError("--max-cost needs a dollar budget per attempt, which is what each attempt reserves: add "
                        "cost=USD to --budget (omnidr eval, compare) or give --max-attempt-cost USD (omnidr run)")
    return SpendCap(max_cost, budget.max_cost_usd)
