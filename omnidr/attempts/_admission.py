"""Admission control for sandbox starts: how many attempts of this driver start their sandbox at once, how an
attempt whose sandbox failed is retried, and when a run whose starts keep failing stops.

Why: starting an attempt (a network, the model gateway and the egress proxy, two Python services that must
listen, the output keeper, the agent) is CPU-bound work for the host and the Docker engine. With every attempt
of a `--parallel 60` run starting at once on two cores, each start took longer than the helpers' start timeout,
failed as `infra_error`, was retried at once, and failed again (issue 41). Decisions:

- **Start slots.** An attempt takes one of `max_starts` slots (default `STARTS_PER_CORE` per core of this
  host, at least 2) from before it makes its first object until its agent has started, then gives it back. The
  rest wait in arrival order. `--parallel` says how many attempts may *run* at once; the slots say how many may
  *start* at once, so any `--parallel` is safe and only the waiting grows. The helpers' start timeout
  (`HELPER_START_TIMEOUT_S`) runs inside the slot, so it counts from the slot, never from the queue.
- **The slots are the host's.** Within a process, a gate per size hands its slots out first come, first served
  (so every run of the process, and a Ray worker's tasks, draw on one budget). Each slot taken is then also one
  of the host's: slot files `slot-0.lock` ... `slot-<K-1>.lock` in `start_slots_dir()`, held with `flock`. So
  drivers in other processes of the same user on this host (several `omnidr eval`, `run` or `compare` at once)
  share the slots instead of each starting its own K: the host never starts more than the largest `--max-starts`
  among them at once. The kernel drops a slot when its holder exits however it ends, so a killed driver holds
  none. Between processes the order is not first come, first served: a waiting process tries the files again
  every 50 to 150 ms.
- **Backoff.** An attempt that ended `infra_error` is retried after an exponential delay with jitter
  (`retry_delay_s`): half of the delay is fixed, half drawn at random, so attempts that failed together do
  not come back together.
- **The stop rule.** `StartBreaker`: when `max_failed_starts` sandbox starts in a row have failed, whichever
  attempts they belonged to, no further attempt starts; the attempts already running finish, and the run stops
  with one line (`RunStopped`) saying how many failed and the last reason. A single start that succeeds resets
  the count, so occasional failures amid successes never stop a run. Default: twice the start slots, at least 6
  (two full rounds of every slot failing). Attempts that never started leave no folder, so rerunning the same
  command resumes them.
"""

import fcntl
import logging
import os
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from omnidr.errors import UserError

log = logging.getLogger(__name__)

STARTS_PER_CORE = 2
SLOTS_DIR_ENV = "OMNIDR_START_SLOTS_DIR"
STALL_TIMEOUT_S = 900.0
"""An attempt with no model request, no proxy request and no change under /output for this long ends `stalled`."""


def default_max_starts() -> int:
    """Start slots of this host: `STARTS_PER_CORE` per core the process may use, at least 2."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(2, STARTS_PER_CORE * cores)


def start_slots_dir() -> Path:
    """Where this host's start slot files are: $OMNIDR_START_SLOTS_DIR, else the user's cache (one set per user
    and host)."""
    if os.environ.get(SLOTS_DIR_ENV):
        return Path(os.environ[SLOTS_DIR_ENV])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "omnidr" / "start-slots"


_UNUSABLE: set[str] = set()  # slot folders already said to be unusable


class HostSlot:
    """One of the host's start slots, held by an open, `flock`ed slot file (see the module's docstring)."""

    def __init__(self, folder: Path, slots: int):
        self.folder, self.slots = folder, slots
        self.fd: int | None = None

    def try_take(self) -> bool:
        """Take a free slot file; False when others hold them all. A slot folder that cannot be written (a
        read-only home) leaves this process's own slots alone in force: said once in the log, never a failure."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            # in no fixed order: a driver with fewer slots (which tries only the first files) is not always beaten
            # to them by drivers with more
            for k in random.sample(range(self.slots), self.slots):
                fd = os.open(self.folder / f"slot-{k}.lock", os.O_RDWR | os.O_CREAT, 0o644)
                if self._lock(fd):
                    self.fd = fd
                    return True
        except OSError as exc:
            if str(self.folder) not in _UNUSABLE:
                _UNUSABLE.add(str(self.folder))
                log.warning("start slots: %s cannot be used (%s); this process's own slots alone apply", self.folder, exc)
            return True
        return False

    @staticmethod
    def _lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            os.close(fd)
            return False

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor drops the lock
            self.fd = None


class HostPolicy(BaseModel):
    """How one driver process uses its host: start slots, the backoff of infra retries, the stop rule and the
    stall timeout. Set per invocation (`--max-starts`, `--stall-timeout`), not part of run.json: a rerun may change
    them without changing the run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_starts: int | None = Field(None, ge=1, description="Attempts that start their sandbox at once "
                                   "(`--max-starts`); None: `STARTS_PER_CORE` per core of the host they start on.")
    retry_base_s: float = Field(2.0, ge=0, description="Delay before the first retry of an infra_error, seconds "
                                                       "(doubled for each further one, half of it jittered).")
    retry_cap_s: float = Field(60.0, ge=0, description="Longest delay between infra retries, seconds.")
    max_failed_starts: int | None = Field(
        None, ge=1, description="Sandbox starts failed in a row after which the run stops; None: twice "
        "`max_starts`, at least 6.")
    stall_timeout_s: float = Field(STALL_TIMEOUT_S, gt=0, description="Seconds without a model request, a proxy "
                                   "request or a change under /output after which an attempt ends `stalled`.")

    @property
    def start_slots(self) -> int:
        return self.max_starts or default_max_starts()

    @property
    def failed_starts_limit(self) -> int:
        return self.max_failed_starts or max(6, 2 * self.start_slots)


class RunStopped(UserError):
    """A run that cannot go on on this host (its sandbox starts keep failing): one line, exit code 1. What was
    finished is kept; rerunning the same command resumes the rest."""

    exit_code = 1


class StartGate:
    """`slots` start slots, handed out in arrival order (a FIFO of waiters, so no attempt waits forever while later
    ones are let through); with `folder`, each holder also takes one of the host's slot files there."""

    def __init__(self, slots: int, folder: Path | None = None):
        if slots < 1:
            raise ValueError("a start gate needs at least one slot")
        self.slots = slots
        self.folder = folder  # the host's slot files (None: this process's slots only)
        self._lock = threading.Lock()
        self._busy = 0
        self._queue: list[threading.Event] = []

    @property
    def busy(self) -> int:
        """Slots in use now."""
        return self._busy

    @property
    def waiting(self) -> int:
        """Attempts queued for a slot now."""
        return len(self._queue)

    @contextmanager
    def slot(self, cancel: threading.Event | None = None) -> Iterator[float]:
        """Hold a slot of this gate and one of the host's for the body; yields the seconds spent waiting for them.
        When `cancel` is set while waiting (Ctrl-C), the wait ends with `Cancelled`."""
        t0 = time.monotonic()
        turn = threading.Event()
        with self._lock:
            if self._busy < self.slots and not self._queue:
                self._busy += 1
                turn.set()
            else:
                self._queue.append(turn)
        while not turn.wait(0.2):
            if cancel is not None and cancel.is_set():
                with self._lock:
                    if turn.is_set():  # handed a slot just now: pass it on
                        self._release_locked()
                    else:
                        self._queue.remove(turn)
                raise Cancelled("the run was interrupted while this attempt waited for a start slot")
        host = HostSlot(self.folder, self.slots) if self.folder is not None else None
        try:
            while host is not None and not host.try_take():
                if cancel is not None and cancel.is_set():
                    raise Cancelled("the run was interrupted while this attempt waited for a start slot")
                time.sleep(random.uniform(0.05, 0.15))  # other processes hold them all
            yield time.monotonic() - t0
        finally:
            if host is not None:
                host.release()
            with self._lock:
                self._release_locked()

    def _release_locked(self) -> None:
        if self._queue:
            self._queue.pop(0).set()  # the slot goes straight to the next in line
        else:
            self._busy -= 1


class NotStarted(Exception):
    """An attempt that got its start slot after its run had been stopped: nothing of it was started or recorded."""


class Cancelled(Exception):
    """The wait for a start slot was cut short by a Ctrl-C."""


_GATES: dict[int, StartGate] = {}
_GATES_LOCK = threading.Lock()


def start_gate(slots: int) -> StartGate:
    """This process's gate of `slots` slots (one per size, shared by every run of the process), on the host's slot
    files in `start_slots_dir()`."""
    folder = start_slots_dir()
    with _GATES_LOCK:
        gate = _GATES.get(slots)
        if gate is None or gate.folder != folder:
            gate = _GATES[slots] = StartGate(slots, folder)
        return gate


def retry_delay_s(retry: int, base_s: float, cap_s: float, rng: random.Random | None = None) -> float:
    """The wait before infra retry number `retry` (from 1): `min(cap, base * 2**(retry-1))`, half of it fixed and
    half uniform at random, so that attempts that failed together spread out instead of failing together again."""
    if retry < 1:
        return 0.0
    delay = min(cap_s, base_s * 2 ** min(retry - 1, 30))
    return delay / 2 + (rng or random).uniform(0, delay / 2)


class StartBreaker:
    """The stop rule of one run: `limit` sandbox starts failed in a row, across all its attempts, stop it."""

    def __init__(self, limit: int):
        self.limit = limit
        self._lock = threading.Lock()
        self.failed_in_a_row = 0
        self.last_failure: str | None = None
        self.reason: str | None = None  # set once the run is stopped

    def started(self) -> None:
        with self._lock:
            self.failed_in_a_row = 0

    def failed(self, detail: str) -> None:
        with self._lock:
            self.failed_in_a_row += 1
            self.last_failure = detail
            if self.reason is None and self.failed_in_a_row >= self.limit:
                self.reason = (f"{self.failed_in_a_row} sandbox starts failed in a row (the last: {detail[:300]}); "
                               "the run stopped instead of retrying: check the Docker engine (`docker info`) and the "
                               "host's load, then rerun the same command to resume (finished attempts are kept)")

    @property
    def stopped(self) -> bool:
        return self.reason is not None


class Admission:
    """What the attempts of one run share on this host: the process's start slots, the run's stop rule, the policy."""

    def __init__(self, policy: HostPolicy | None = None):
        self.policy = policy or HostPolicy()
        self.gate = start_gate(self.policy.start_slots)
        self.breaker = StartBreaker(self.policy.failed_starts_limit)

    def retry_delay_s(self, retry: int) -> float:
        return retry_delay_s(retry, self.policy.retry_base_s, self.policy.retry_cap_s)
