"""Attempts of a run: up to N per task, resumable after a crash, nothing already written lost."""

import hashlib
import json
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from omnidr.benchmark import Snapshot
from omnidr.errors import UserError
from omnidr.harness import Harness
from sandbox.models import Budget

from ._instruction import instruction
from ._models import NOT_COUNTED, AttemptReason, AttemptRecord, ProxyMode, RetryPolicy, SandboxLimits
from ._sandbox import AttemptSandbox, AttemptSpec, Upstream, cleanup_run, write_json_atomic

RUN_FILE = "run.json"


class RunConfig(BaseModel):
    """`run.json`: what a run folder was started with. A rerun with a different config is refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    snapshot: str = Field(description="Snapshot folder the tasks come from.")
    tasks: list[str] = Field(description="Task ids of the run, in order.")
    harness: str = Field(description="Harness name.")
    agent_image: str = Field(description="Agent image reference.")
    command: list[str] = Field(description="Agent command (command harness) or the adapter's.")
    model: str = Field(description="Model name the agent asks for.")
    upstreams: list[dict[str, str | None]] = Field(description="Model upstreams (family, base_url, key_env); never keys.")
    budget: Budget = Field(description="Per-attempt budget.")
    limits: SandboxLimits = Field(description="Agent container limits.")
    retry: RetryPolicy = Field(description="Retry policy.")
    proxy_mode: ProxyMode = Field(description="Egress proxy mode.")
    denylist: list[str] = Field(default_factory=list, description="Hosts the proxy answers 403.")
    gateway_image: str = Field(description="Gateway image reference.")
    egress_image: str = Field(description="Egress proxy image reference.")
    outside_network: str = Field("bridge", description="Docker network the gateway and proxy reach the world through.")

    def run_id(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]


def open_run(run_dir: Path, config: RunConfig) -> None:
    """Create the run folder, or check that an existing one was started with the same config."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / RUN_FILE
    if path.exists():
        existing = RunConfig.model_validate_json(path.read_text("utf-8"))
        if existing != config:
            changed = sorted(k for k in config.model_fields if getattr(existing, k) != getattr(config, k))
            raise UserError(
                f"{run_dir} was started with a different configuration ({', '.join(changed)} changed); "
                "use a new --run-dir, or rerun with the original options to resume"
            )
        return
    write_json_atomic(path, config.model_dump_json(indent=2))


def _finished(folder: Path) -> AttemptRecord | None:
    path = folder / "attempt.json"
    if not path.is_file():
        return None
    return AttemptRecord.model_validate_json(path.read_text("utf-8"))


def _set_aside(folder: Path) -> None:
    """An attempt folder without attempt.json was interrupted: keep its files, redo the attempt."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    shutil.move(str(folder), str(folder.with_name(f"{folder.name}.interrupted-{stamp}")))


def run_task_attempts(
    client,
    run_dir: Path,
    config: RunConfig,
    snap: Snapshot,
    task_id: str,
    harness: Harness,
    on_attempt: Callable[[AttemptRecord], None] = lambda _r: None,
    gateway_backoff_s: float = 1.0,
    on_start: Callable[[str, int], None] = lambda _t, _n: None,
    reach: dict[str, str] | None = None,
) -> list[AttemptRecord]:
    """Run attempts of one task until success or the retry policy says stop; resumes finished ones.

    Infra and upstream errors do not count against the attempts; their retries are counted per
    invocation, so a rerun after an outage tries such a task again and keeps its earlier attempts.
    `reach` maps an upstream base URL of the config to the address the gateway uses for it (a loopback relay)."""
    reach = reach or {}
    bundle = snap.tasks[task_id]
    task = bundle.task
    assert task is not None and snap.contract_file is not None
    task_dir = run_dir / "attempts" / task_id
    records: list[AttemptRecord] = []
    counted = infra = 0
    n = 0
    while True:
        n += 1
        folder = task_dir / str(n)
        record = _finished(folder)
        if record is None:
            if folder.exists():
                _set_aside(folder)
            spec = AttemptSpec(
                run_id=config.run_id(), task_id=task_id, attempt=n, folder=folder,
                video=bundle.folder / task.video.file,
                instruction=instruction(task, f"/input/{task.video.file}", "/output/report", "/input/contract"),
                contract_dir=(snap.root / snap.contract_file).parent, model=config.model,
                upstreams=tuple(Upstream(**{**u, "base_url": reach.get(u["base_url"], u["base_url"])})
                                for u in config.upstreams), budget=config.budget, limits=config.limits,
                gateway_image=config.gateway_image, egress_image=config.egress_image, proxy_mode=config.proxy_mode,
                replay_dir=snap.root / "web" if config.proxy_mode is ProxyMode.replay else None,
                denylist=tuple(config.denylist), outside_network=config.outside_network,
                gateway_backoff_s=gateway_backoff_s,
                report_entry=snap.contract.entry if snap.contract else "index.html",
            )
            folder.mkdir(parents=True, exist_ok=True)
            on_start(task_id, n)
            record = AttemptSandbox(client, spec, harness).run()
            on_attempt(record)
            fresh = True
        else:
            fresh = False
        records.append(record)
        if record.reason is AttemptReason.success:
            break
        if record.reason in NOT_COUNTED:
            if fresh:  # earlier invocations' infra and upstream errors do not use up this one's retries
                infra += 1
            if infra > config.retry.max_infra_retries:
                break
            continue
        counted += 1
        if record.reason not in config.retry.retry_on or counted >= config.budget.attempts_per_task:
            break
    return records


def run_attempts(
    client,
    run_dir: Path,
    config: RunConfig,
    snap: Snapshot,
    harness: Harness,
    on_attempt: Callable[[AttemptRecord], None] = lambda _r: None,
    gateway_backoff_s: float = 1.0,
    parallel: int = 1,
    on_start: Callable[[str, int], None] = lambda _t, _n: None,
    executor=None,
    reach: dict[str, str] | None = None,
    on_task: Callable[[str, list[AttemptRecord]], None] = lambda _t, _rs: None,
) -> dict[str, list[AttemptRecord]]:
    """All tasks of the run, up to `parallel` tasks at once. Leftover containers of an
    interrupted run are removed first. `executor` (see omnidr.attempts._executors) places each task's attempts;
    the default runs them in threads of this process. `on_task` hears of each task whose attempts are over."""
    run_dir = Path(run_dir).resolve()
    open_run(run_dir, config)
    cleanup_run(client, config.run_id())
    if executor is not None:
        out = executor.run_tasks(run_dir, config, snap, harness, on_attempt, on_start, gateway_backoff_s, parallel,
                                 reach or {}, on_task)
    else:
        def one(task_id: str) -> list[AttemptRecord]:
            records = run_task_attempts(client, run_dir, config, snap, task_id, harness, on_attempt, gateway_backoff_s,
                                        on_start, reach)
            on_task(task_id, records)
            return records

        with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
            futures = {t: pool.submit(one, t) for t in config.tasks}
            out = {t: f.result() for t, f in futures.items()}
    write_json_atomic(run_dir / "attempts" / "summary.json", json.dumps(
        {t: [r.reason.value for r in rs] for t, rs in out.items()}, indent=2))
    return out
