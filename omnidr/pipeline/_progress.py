"""Live progress of `omnidr eval`: per system, tasks done, running and failed, tokens and time used."""

import logging
import threading
import time
from dataclasses import dataclass, field

from rich.console import Console
from rich.live import Live
from rich.table import Table

log = logging.getLogger(__name__)


@dataclass
class SystemProgress:
    label: str
    tasks: int
    done: int = 0
    failed: int = 0
    running: set = field(default_factory=set)
    attempts: int = 0
    tokens: int = 0
    started: float = field(default_factory=time.monotonic)
    agent_time_s: float = 0.0


class EvalProgress:
    """Thread-safe counters rendered by rich's Live display (a plain final table when not a terminal)."""

    def __init__(self, console: Console):
        self.console = console
        self.systems: dict[str, SystemProgress] = {}
        self.stage = ""
        self._lock = threading.Lock()
        self._live: Live | None = None

    def __enter__(self) -> "EvalProgress":
        self._live = Live(self._table(), console=self.console, refresh_per_second=4, transient=False,
                          get_renderable=self._table)
        self._live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            with self._lock:  # the final table stays on screen: without the last stage's now stale name
                self.stage = ""
            self._live.__exit__(*exc)
            self._live = None
            if not self.console.is_terminal:
                # off a terminal rich leaves the last frame without its newline, and the next line
                # printed (the results table's title) would be glued to the table's bottom border
                self.console.line()

    def note(self, message: str) -> None:
        log.info("%s", message)
        with self._lock:
            self.stage = message
        self.console.print(f"  {message}", soft_wrap=True, highlight=False, markup=False)

    def system(self, label: str, tasks: int) -> None:
        with self._lock:
            self.systems[label] = SystemProgress(label, tasks)

    def started(self, label: str, task_id: str) -> None:
        with self._lock:
            self.systems[label].running.add(task_id)

    def attempt(self, label: str, record) -> None:
        """One attempt run now has finished."""
        with self._lock:
            s = self.systems[label]
            s.attempts += 1
            s.tokens += record.budget_use.input_tokens + record.budget_use.output_tokens
            s.agent_time_s += record.wall_time_s
        color = "green" if record.delivered else "red"
        self.console.print(
            f"  [{color}]{record.reason.value:<16}[/{color}] {label} {record.task_id} attempt {record.attempt}: "
            f"{record.wall_time_s:.1f} s, {record.budget_use.requests} model requests, "
            f"{record.budget_use.input_tokens + record.budget_use.output_tokens} tokens", soft_wrap=True, highlight=False)

    def task_done(self, label: str, task_id: str, records: list) -> None:
        """A task gets no further attempt (in this invocation); resumed tasks arrive here too."""
        with self._lock:
            s = self.systems[label]
            s.running.discard(task_id)
            if records:  # a task with no attempt was left unstarted (--max-cost, Ctrl-C): neither done nor failed
                s.done += 1
                s.failed += not records[-1].delivered
        log.info("%s %s: done after %d attempt(s), %s", label, task_id, len(records),
                 records[-1].reason.value if records else "no attempt")

    def _table(self) -> Table | str:
        with self._lock:
            if not self.systems:
                return ""
            table = Table(title="omnidr eval" + (f": {self.stage}" if self.stage else ""), title_justify="left")
            for col in ("system", "tasks done", "running", "failed", "attempts", "tokens", "agent time", "elapsed"):
                table.add_column(col, justify="left" if col == "system" else "right")
            for s in self.systems.values():
                table.add_row(s.label, f"{s.done}/{s.tasks}", str(len(s.running)), str(s.failed), str(s.attempts),
                              f"{s.tokens:,}", f"{s.agent_time_s:.0f} s", f"{time.monotonic() - s.started:.0f} s")
            return table
