"""Where a run's task attempts execute: threads of this process (the default) or a Ray cluster.

The Ray executor sends one Ray task per benchmark task; each runs `run_task_attempts` on whichever
node Ray picks, against that node's own Docker engine: the one DOCKER_HOST names in the environment of
the node's `ray start`, which its worker processes inherit (default: the local socket; see
tests/attempts/test_ray_engines.py, two nodes with an engine each). The run folder and the snapshot must
be on a path every node sees at the same place (a shared file system), because attempt artifacts are
written there directly. Records come back to the driver, which reports them as tasks finish.
"""

import logging
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnidr.benchmark import Snapshot
from omnidr.errors import UserError
from omnidr.paths import RunPaths

from ._admission import Admission, HostPolicy
from ._backend import DEFAULT_BACKEND, SandboxBackend, sandbox_backend
from ._labels import owner_id
from ._models import AttemptReason, AttemptRecord

if TYPE_CHECKING:
    from ._runner import LocalExecutor, RunOptions

EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class RayTask:
    """What one Ray task (every attempt of one benchmark task, on a worker node) is sent."""

    run_dir: str
    config_json: str  # the run's RunConfig
    snapshot: str  # the snapshot folder, on a path every node sees
    task_id: str
    harness: Any
    backoff_s: float  # the gateways' first retry delay
    reach: dict[str, str]  # upstream base URL -> the address the gateways use for it
    driver: str | None = None  # the driver's identity (LABEL_DRIVER), which the worker's objects carry too
    host_json: str | None = None  # the driver's HostPolicy (start slots, backoff, stop rule, stall timeout)
    backend: str = DEFAULT_BACKEND  # the sandbox backend's name; the worker makes its own, on its own engine


def _ray_task(task: RayTask) -> tuple[list[str], list[int]]:
    """Body of one Ray task (runs on a worker node): every attempt of one benchmark task. Returns the
    records and the numbers of the attempts run now (the others were finished before). The worker process's
    start slots are shared by its tasks; the stop rule counts this task's starts (see `_admission`)."""
    from omnidr.benchmark import open_snapshot

    from ._runner import RunConfig, RunOptions, RunScope, run_task_attempts

    config = RunConfig.model_validate_json(task.config_json)
    fresh: list[int] = []
    run_dir = Path(task.run_dir)
    backend = sandbox_backend(task.backend).for_run(RunPaths(run_dir).attempts)  # shared by this task's retries
    options = RunOptions(on_attempt=lambda r: fresh.append(r.attempt), gateway_backoff_s=task.backoff_s,
                         reach=task.reach, backend=task.backend)
    admission = Admission(HostPolicy.model_validate_json(task.host_json) if task.host_json else None)
    try:
        records = run_task_attempts(RunScope(backend, run_dir, config, open_snapshot(Path(task.snapshot)),
                                             task.harness, options, admission, driver=task.driver), task.task_id)
    finally:
        backend.close()
    return [r.model_dump_json() for r in records], fresh


class RayExecutor:
    """Fan task attempts out over a Ray cluster. `address` is a running cluster ("HOST:PORT" or
    "auto"); None starts a local one with `num_cpus` worker slots for the duration of the run."""

    def __init__(self, address: str | None = None, num_cpus: int | None = None):
        self.address = address
        self.num_cpus = num_cpus
        self._own_token: str | None = None

    def describe(self) -> dict:
        return {"executor": "ray", "address": self.address or "local"}

    def _connect(self):
        if self.address and "RAY_AUTH_MODE" not in os.environ and (
                os.environ.get("RAY_AUTH_TOKEN") or os.path.isfile(os.path.expanduser("~/.ray/auth_token"))):
            # `ray start` turns token authentication on when a token exists, but a driver connecting by
            # address does not look for one unless told to: without this it is refused as unauthenticated.
            os.environ["RAY_AUTH_MODE"] = "token"
        try:
            import ray
        except ImportError:  # pragma: no cover - ray is in requirements.lock
            raise UserError("--executor ray needs the ray package; run `make setup`, or `pip install 'omnidr[ray]'`") from None
        if ray.is_initialized():
            return ray
        try:
            if self.address:
                ray.init(address=self.address, log_to_driver=False, ignore_reinit_error=True, logging_level=logging.WARNING)
            else:
                if "RAY_AUTH_MODE" not in os.environ and "RAY_AUTH_TOKEN" not in os.environ:
                    # A new local instance turns token authentication on and, without a token, writes one to
                    # ~/.ray/auth_token, which then switches later --ray-address runs into token mode. A token
                    # of this run's own, in the environment its workers inherit, keeps the auth and no file.
                    os.environ["RAY_AUTH_TOKEN"] = self._own_token = secrets.token_hex(32)
                ray.init(num_cpus=self.num_cpus, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True,
                         logging_level=logging.WARNING)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UserError(f"cannot reach the Ray cluster at {self.address or 'a new local instance'}: "
                            f"{str(exc).splitlines()[0][:200]}; start it with `ray start --head` or drop --ray-address") from None
        return ray

    def run_tasks(self, backend: SandboxBackend, run_dir: Path, config, snap: Snapshot, harness,
                  options: "RunOptions", admission: Admission | None = None) -> dict[str, list[AttemptRecord]]:
        """As `LocalExecutor.run_tasks`; `backend` (the driver's) only removes what a lost worker left on this
        node: each worker makes its own, of the same name, and its own start slots (`admission`'s policy travels
        with each task). `options.spend` (`--max-cost`) is refused before (`run_attempts`): the dollars are counted
        in the driver's process. The workers' gateways are on other hosts, where the driver's shared upstream
        limiter is not: they run without it (`options.max_connections` is not used)."""
        ray = self._connect()
        started_here = not self.address
        remote = ray.remote(num_cpus=1, max_retries=0)(_ray_task)
        try:
            pending: dict = {}
            queue = list(config.tasks)
            out: dict[str, list[AttemptRecord]] = {}
            config_json = config.model_dump_json()
            driver = owner_id()  # the workers' containers carry this driver's identity too
            host_json = admission.policy.model_dump_json() if admission is not None else None
            lost: dict[str, int] = {}  # task id -> workers lost while running it
            while queue or pending:
                while queue and len(pending) < max(1, options.parallel):
                    task_id = queue.pop(0)
                    options.on_start(task_id, 0)
                    ref = remote.remote(RayTask(str(run_dir), config_json, str(snap.root.resolve()), task_id, harness,
                                                options.gateway_backoff_s, options.reach, driver, host_json,
                                                options.backend))
                    pending[ref] = task_id
                try:
                    done, _ = ray.wait(list(pending), num_returns=1)
                except KeyboardInterrupt:  # Ctrl-C: no queued task is sent, the running ones are cancelled
                    for ref in pending:
                        ray.cancel(ref, force=True)
                    raise
                for ref in done:
                    task_id = pending.pop(ref)
                    try:
                        raw, fresh = ray.get(ref)
                    except _worker_lost(ray) as exc:  # a fault of the cluster, not of the task: record it, go on
                        lost[task_id] = lost.get(task_id, 0) + 1
                        record = record_lost_attempt(Path(run_dir), task_id, config, exc, backend=backend)
                        if record is not None:
                            options.on_attempt(record)
                        if lost[task_id] <= config.retry.max_infra_retries:
                            queue.insert(0, task_id)  # another worker takes the task; finished attempts are kept
                        else:
                            out[task_id] = records_on_disk(Path(run_dir), task_id)
                            options.on_task(task_id, out[task_id])
                        continue
                    except ray.exceptions.RayError as exc:
                        raise UserError(f"the Ray task for {task_id} failed: {str(exc).splitlines()[0][:300]}") from None
                    out[task_id] = [AttemptRecord.model_validate_json(r) for r in raw]
                    for r in out[task_id]:
                        if r.attempt in fresh:
                            options.on_attempt(r)
                    options.on_task(task_id, out[task_id])
            return {t: out[t] for t in config.tasks}
        finally:
            if started_here:
                ray.shutdown()
                if self._own_token and os.environ.get("RAY_AUTH_TOKEN") == self._own_token:
                    del os.environ["RAY_AUTH_TOKEN"]


def _worker_lost(ray) -> tuple[type[BaseException], ...]:
    """Ray's errors for a task whose worker process or node died under it."""
    names = ("WorkerCrashedError", "NodeDiedError", "LocalRayletDiedError")
    return tuple(getattr(ray.exceptions, n) for n in names if hasattr(ray.exceptions, n))


def records_on_disk(run_dir: Path, task_id: str) -> list[AttemptRecord]:
    done = [a.record for a in RunPaths(run_dir).attempt_folders(task_id) if a.finished]
    return [AttemptRecord.model_validate_json(f.read_text("utf-8")) for f in done]


def record_lost_attempt(run_dir: Path, task_id: str, config, exc: BaseException, what: str = "lost",
                        backend: SandboxBackend | None = None) -> AttemptRecord | None:
    """The attempt a lost worker was running (the last attempt folder without attempt.json) ends infra_error:
    its files stay, the record says what happened, and the next worker goes on with the next attempt. Its
    sandbox, whose owner is gone, is removed where `backend` (this driver's) holds it (None: not removed, as the
    local executor's other tasks still run). None when the worker died before it made the folder. `what`: "lost"
    (a Ray worker that died) or "failed" (an error in the driver's own thread)."""
    from datetime import UTC, datetime

    from omnidr._files import write_atomic

    open_ = [a for a in RunPaths(run_dir).attempt_folders(task_id) if not a.finished]
    try:
        if backend is not None:
            backend.cleanup_run(config.run_id(), run_dir=run_dir)
    except Exception:  # noqa: BLE001 - no engine here: the next run's start cleans up on the worker's
        pass
    if not open_:
        return None
    attempt = open_[-1]
    started = datetime.fromtimestamp(attempt.root.stat().st_mtime, UTC)
    now = datetime.now(UTC)
    line = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    record = AttemptRecord(
        task_id=task_id, attempt=int(attempt.root.name), harness=config.harness, command=config.command,
        reason=AttemptReason.infra_error, detail=(
            f"the Ray worker running this attempt was lost ({type(exc).__name__}: {line}); another worker takes the task"
            if what == "lost" else f"the driver failed while running this attempt ({type(exc).__name__}: {line}); "
            "the other tasks went on, and the next run of the same command takes this task again"),
        started_at=started, ended_at=now,
        wall_time_s=round((now - started).total_seconds(), 3), budget=config.budget, limits=config.limits,
        proxy_mode=config.proxy_mode)
    write_atomic(attempt.record, record.model_dump_json(indent=2))
    return record


def make_executor(name: str, ray_address: str | None = None,
                  ray_cpus: int | None = None) -> "LocalExecutor | RayExecutor":
    """A `LocalExecutor` (threads of this process) for "local", a `RayExecutor` for "ray"."""
    from ._runner import LocalExecutor

    if name == "local":
        if ray_address:
            raise UserError("--ray-address needs --executor ray")
        return LocalExecutor()
    if name == "ray":
        return RayExecutor(ray_address, ray_cpus)
    raise UserError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")
