"""Attempts of a run: up to N per task, resumable after a crash, nothing already written lost."""

import hashlib
import json
import logging
import shutil
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, Field, model_validator

from omnidr._files import write_atomic
from omnidr._records import DiskRecord
from omnidr.benchmark import HYPERPARAMETERS_FILE, Snapshot, TaskFormat, evidence_brief
from omnidr.errors import UserError
from omnidr.paths import AttemptPaths, RunPaths
from sandbox.models import Budget, ModelPolicy, ModelPricing, ProviderToolsPolicy, ProxyMode, SearchDoor

from ._admission import Admission, HostPolicy, NotStarted, RunStopped
from ._backend import DEFAULT_BACKEND, SandboxBackend, sandbox_backend
from ._contract import Harness
from ._executors import record_lost_attempt, records_on_disk
from ._instruction import answer_instruction, instruction
from ._labels import LABEL_DRIVER, run_labels
from ._lifecycle import INTERRUPTED, AttemptSandbox
from ._limiter import DEFAULT_MAX_CONNECTIONS, SharedLimiter
from ._models import (
    NOT_COUNTED,
    AttemptReason,
    AttemptRecord,
    RetryPolicy,
    SandboxLimits,
    Upstream,
    default_provider_tools,
)
from ._spec import AttemptSpec
from ._spend import SpendCap

if TYPE_CHECKING:
    from ._executors import RayExecutor

log = logging.getLogger(__name__)


def _ignore(*_args) -> None:
    """A hook that hears nothing."""


class RunConfig(DiskRecord):
    """`run.json`: what a run folder was started with. A rerun with a different config is refused."""

    SCHEMA = "omnidr.run/1"

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    snapshot: str = Field(description="Snapshot folder the tasks come from.")
    tasks: list[str] = Field(description="Task ids of the run, in order.")
    harness: str = Field(description="Harness name.")
    agent_image: str = Field(description="Agent image reference.")
    command: list[str] = Field(description="Agent command (command harness) or the adapter's.")
    model: str = Field(description="Model name the agent asks for.")
    upstreams: list[Upstream] = Field(description="Model upstreams (family, base_url, key_env); never keys.")
    budget: Budget = Field(description="Per-attempt budget.")
    limits: SandboxLimits = Field(description="Agent container limits.")
    retry: RetryPolicy = Field(description="Retry policy.")
    proxy_mode: ProxyMode = Field(description="Egress proxy mode.")
    denylist: list[str] = Field(default_factory=list, description="Hosts the proxy answers 403.")
    gateway_image: str = Field(description="Gateway image reference.")
    egress_image: str = Field(description="Egress proxy image reference.")
    outside_network: str = Field("bridge", description="Docker network the gateway and proxy reach the world through.")
    evidence_brief: bool = Field(False, description="Append the task's evidence brief to the instruction "
                                                    "(behavioural calibration's R3, App. E.4).")
    search_door: SearchDoor | None = Field(
        None, description="A web search provider the research skills query through the egress proxy, which injects "
        "its key (never in the agent's container); None: the offline index of the snapshot's corpus.")
    allow_nets: list[str] = Field(
        default_factory=list, description="Ranges off the public internet (CIDR) the egress proxy may reach on "
        "purpose, e.g. an internal mirror (`--allow-net`); every other private, loopback or link-local address is "
        "refused.")
    upstream_ca: list[str] = Field(
        default_factory=list, description="Host paths of extra CA certificates the egress proxy trusts for the live "
        "web's HTTPS in intercept and record mode (an internal mirror, a TLS-inspecting network's CA).")
    capability: str | None = Field(
        None, description="The system's capability level (paper App. F.5) or input setting; below text_web the "
        "doors close the web (proxy mode deny, provider-side tools deny). None: not given.")
    model_policy: ModelPolicy = Field(
        "rewrite", description="What the gateway does with a model request naming another model than `model`: "
        "rewrite it to `model` (default), refuse it, or allow it.")
    pricing: ModelPricing | None = Field(
        None, description="The price every exchange is charged at, resolved when the run started (genai-prices' "
        "bundled table or `--prices`); None: the run is unpriced.")
    provider_tools: ProviderToolsPolicy = Field(
        description="What the gateway does with provider-side tools (web search and fetch that run at the model "
        "provider, hosted tools); a run.json written before the field existed had its proxy mode's default.")
    system: dict[str, Any] | None = Field(
        None, description="The whole system config the run was started with (omnidr.harness.SystemConfig's JSON "
        "dump: agent, budget, web policy, judge, evaluator), as built once from the command line or a config file; "
        "None in a run.json written before the field existed. Not compared on resume (`open_run`): every setting "
        "that shapes an attempt is a field of its own above.")

    @model_validator(mode="before")
    @classmethod
    def _mode_default(cls, data):
        if isinstance(data, dict) and data.get("provider_tools") is None and "proxy_mode" in data:
            data = {**data, "provider_tools": default_provider_tools(data["proxy_mode"])}
        return data

    @property
    def offline(self) -> bool:
        """Whether nothing of the run reaches the live web: replay (or closed) web and no provider-side tools."""
        return self.proxy_mode in ("replay", "deny") and not self.provider_tools.opens_provider_web

    def run_id(self) -> str:
        # a run without the brief, and with its mode's default provider-tools policy, keeps the id it had
        # before those fields existed
        exclude: dict[str, Any] = dict.fromkeys(
            {"schema_version"} if self.evidence_brief else {"schema_version", "evidence_brief"}, True)
        if self.pricing is None:
            exclude["pricing"] = True
        if self.budget.max_cost_usd is None:  # a run without a dollar budget keeps the id it had before it existed
            exclude["budget"] = {"max_cost_usd": True}
        exclude["system"] = True  # recorded, not an identity: the run's own fields above make its id
        if self.search_door is None:
            exclude["search_door"] = True
        if not self.upstream_ca:
            exclude["upstream_ca"] = True
        if not self.allow_nets:
            exclude["allow_nets"] = True
        if self.capability is None:
            exclude["capability"] = True
        if self.model_policy == "rewrite":
            exclude["model_policy"] = True
        if self.provider_tools == default_provider_tools(self.proxy_mode):
            exclude["provider_tools"] = True
        return hashlib.sha256(self.model_dump_json(exclude=exclude).encode()).hexdigest()[:16]


def changed_settings(old, new, limit: int = 80) -> tuple[list[str], str]:
    """The top-level fields in which two records of one model differ, and `path: old -> new` for every
    differing value inside them (nested settings by dotted path, compact JSON, long values shortened),
    so that a refusal says what changed and to what."""
    def flat(value, prefix: str) -> dict[str, object]:
        if isinstance(value, dict) and value:
            return {k: v for key, item in value.items() for k, v in flat(item, f"{prefix}.{key}").items()}
        return {prefix: value}

    def show(value) -> str:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
        return text if len(text) <= limit else text[: limit - 3] + "..."

    a, b = old.model_dump(mode="json"), new.model_dump(mode="json")
    fields = sorted(k for k in type(new).model_fields if a.get(k) != b.get(k))
    parts = []
    for k in fields:
        fa, fb = flat(a.get(k), k), flat(b.get(k), k)
        parts += [f"{path}: {show(fa.get(path))} -> {show(fb.get(path))}" for path in sorted(set(fa) | set(fb))
                  if fa.get(path) != fb.get(path)]
    return fields, "; ".join(parts)


def open_run(run_dir: Path, config: RunConfig) -> None:
    """Create the run folder, or check that an existing one was started with the same config."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = RunPaths(run_dir).config
    if path.exists():
        existing = RunConfig.model_validate_json(path.read_text("utf-8"))
        # the system config is the record of how the run was started, not a setting of its attempts
        before, now = existing.model_copy(update={"system": None}), config.model_copy(update={"system": None})
        if before != now:
            _, what = changed_settings(before, now)
            raise UserError(
                f"{run_dir} was started with a different configuration ({what}); "
                "use a new --run-dir, or rerun with the original options to resume"
            )
        return
    write_atomic(path, config.model_dump_json(indent=2))


def _finished(paths: AttemptPaths) -> AttemptRecord | None:
    if not paths.finished:
        return None
    return AttemptRecord.model_validate_json(paths.record.read_text("utf-8"))


def _set_aside(paths: AttemptPaths) -> None:
    """An attempt folder without attempt.json was interrupted: keep its files, redo the attempt."""
    shutil.move(str(paths.root), str(paths.set_aside(time.strftime("%Y%m%dT%H%M%S"))))


def _kind_fields(snap: Snapshot, task_id: str, config: RunConfig, harness: Harness) -> dict:
    """What an attempt of `task_id` is given and must deliver, by the snapshot's task kind: a report task's
    video, instruction (App. G.1) and report contract; a short-answer task's video, research prompt (paper 002,
    App. C.3.1), protocol file and finalization stage (App. C.2.3); a multiple-choice question's prepared inputs
    (paper 004: sampled frames, subtitles, audio) and its question file."""
    fields = _FORMAT_FIELDS[snap.kind](snap, task_id, config, harness)
    return dict(fields, task_kind=snap.kind.value, agent_task_kind=snap.kind.agent_kind,
                delivers_answer=snap.kind.delivers_answer)


def _own_video(snap: Snapshot, task_id: str) -> dict:
    """The video of a task with a video of its own, and its captions."""
    bundle = snap.tasks[task_id]
    video = bundle.video
    assert video is not None  # a loaded snapshot has every task's model
    return dict(video=bundle.folder / video.file, captions=tuple(bundle.folder / c.file for c in video.captions))


def _short_answer_fields(snap: Snapshot, task_id: str, config: RunConfig, harness: Harness) -> dict:
    question, protocol, video = snap.tasks[task_id].question, snap.protocol, snap.tasks[task_id].video
    assert question is not None and protocol is not None and video is not None
    protocol_file = Path(snap.root) / HYPERPARAMETERS_FILE  # mounted as /input/protocol.json
    return dict(_own_video(snap, task_id), contract_dir=None, protocol_file=protocol_file,
                instruction=answer_instruction(question, f"/input/{video.file}", protocol),
                finalize=protocol.finalize_request(question.question, config.model),
                context_handling="paper-compaction" if harness.name == "reference" else "harness-native")


def _report_fields(snap: Snapshot, task_id: str, config: RunConfig, harness: Harness) -> dict:
    bundle = snap.tasks[task_id]
    task, video = bundle.task, bundle.video
    assert task is not None and video is not None and snap.contract_file is not None
    return dict(
        _own_video(snap, task_id), contract_dir=(snap.root / snap.contract_file).parent,
        instruction=instruction(task, f"/input/{video.file}", "/output/report", "/input/contract")
        + ("\n" + evidence_brief(bundle.facts, task.language) if config.evidence_brief and bundle.facts else ""),
        report_entry=snap.contract.entry if snap.contract else "index.html",
        report_data_file=snap.contract.data_file if snap.contract else "data.js")


def media_cache() -> Path:
    """Where prepared question inputs are kept, by content hash ($OMNIDR_MEDIA_CACHE, else the user's cache):
    every run and system that needs the same frames of the same video reuses them."""
    import os

    if os.environ.get("OMNIDR_MEDIA_CACHE"):
        return Path(os.environ["OMNIDR_MEDIA_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "omnidr" / "media"


def _question_fields(snap: Snapshot, task_id: str, config: RunConfig, harness: Harness) -> dict:
    """A multiple-choice question's attempt: the inputs its system's setting asks for, prepared on the host once
    per (video, frames, window) and mounted read-only (paper 004, App. D.5 and F.1); the question without its key."""
    from omnidr.benchmark import InputSetting
    from omnidr.media import prepare_inputs, prepare_official_inputs
    from sandbox.direct_agent import question_text
    from sandbox.models import McqQuestion

    task, video, protocol = snap.tasks[task_id].mcq, snap.mcq_video(task_id), snap.mcq_protocol
    assert task is not None and video is not None and protocol is not None  # a loaded snapshot has them
    setting = InputSetting.parse(getattr(harness, "setting", "full"), protocol)
    subtitles = Path(snap.root) / video.subtitles.file if video.subtitles is not None else None
    window = task.ccl if setting.window != "full" else None
    if setting.protocol == "official":
        media = prepare_official_inputs(Path(snap.root) / video.file, video.sha256, subtitles, setting, window,
                                        media_cache())
    else:
        media = prepare_inputs(Path(snap.root) / video.file, video.sha256, subtitles, setting, window, protocol,
                               media_cache())
    question = McqQuestion(id=task.id, question=task.question, options=list(task.options),
                           template=protocol.official_prompt if setting.protocol == "official" else None)
    return dict(video=Path(snap.root) / video.file, contract_dir=None,
                instruction=question_text(question), question=question, media_dir=media)


_FORMAT_FIELDS = {TaskFormat.report: _report_fields, TaskFormat.short_answer: _short_answer_fields,
                  TaskFormat.mcq: _question_fields}
"""What an attempt of each task format is given and must deliver."""


@dataclass(frozen=True)
class RunOptions:
    """How a run's attempts are placed, paced and reported (what `run_attempts` is given besides the run)."""

    on_attempt: Callable[[AttemptRecord], None] = _ignore  # hears of each attempt run now, once it ended
    on_start: Callable[[str, int], None] = _ignore  # hears of each attempt (task id, number) as it starts
    on_task: Callable[[str, list[AttemptRecord]], None] = _ignore  # hears of each task whose attempts are over
    gateway_backoff_s: float = 1.0  # the gateway's first retry delay after an upstream failure, seconds
    parallel: int = 1  # tasks whose attempts run at once
    executor: "LocalExecutor | RayExecutor | None" = None  # where the tasks' attempts run; None: threads here
    reach: dict[str, str] = field(default_factory=dict)  # upstream base URL -> the address the gateway uses for it
    host: HostPolicy | None = None  # start slots, infra retries' backoff, the stop rule, the stall timeout
    spend: SpendCap | None = None  # `--max-cost`: attempts that could take the invocation past it do not start
    max_connections: int = DEFAULT_MAX_CONNECTIONS  # upstream requests in flight at once per upstream
    backend: str = DEFAULT_BACKEND  # the sandbox backend's registered name (see `_backend`)


@dataclass(frozen=True)
class RunScope:
    """What every task's attempts of a run share on one node."""

    backend: SandboxBackend  # made `for_run` (its shared parts, e.g. reused helper pairs, are this run's)
    run_dir: Path
    config: RunConfig
    snap: Snapshot
    harness: Harness
    options: RunOptions = field(default_factory=RunOptions)
    admission: Admission = field(default_factory=Admission)  # start slots and the run's stop rule (see `_admission`)
    limiter: SharedLimiter | None = None  # the run's shared upstream limit, asked by every gateway; None: none
    driver: str | None = None  # the driver's LABEL_DRIVER, when the attempts run in a worker of another process


@dataclass
class _Tally:
    """A task's attempts of this invocation that count, and its infrastructure retries."""

    counted: int = 0
    infra: int = 0


def _attempt_spec(scope: RunScope, task_id: str, n: int, kind_fields: dict) -> AttemptSpec:
    config, reach = scope.config, scope.options.reach
    limiter = scope.limiter
    return AttemptSpec(
        run_id=config.run_id(), task_id=task_id, attempt=n, folder=RunPaths(scope.run_dir).attempt(task_id, n).root,
        **kind_fields, model=config.model,
        upstreams=tuple(u.model_copy(update={"via": reach[u.base_url]}) if u.base_url in reach else u
                        for u in config.upstreams), budget=config.budget, limits=config.limits,
        gateway_image=config.gateway_image, egress_image=config.egress_image, proxy_mode=config.proxy_mode,
        replay_dir=scope.snap.root / "web" if config.proxy_mode == "replay" else None,
        denylist=tuple(config.denylist), provider_tools=config.provider_tools, search_door=config.search_door,
        upstream_ca=tuple(Path(c) for c in config.upstream_ca), allow_nets=tuple(config.allow_nets),
        capability=config.capability, model_policy=config.model_policy, pricing=config.pricing,
        outside_network=config.outside_network, gateway_backoff_s=scope.options.gateway_backoff_s,
        extra_labels={**run_labels(scope.run_dir), **({LABEL_DRIVER: scope.driver} if scope.driver else {})},
        upstream_limit=(limiter.url, limiter.token) if limiter is not None else None,
    )


def _new_attempt(scope: RunScope, task_id: str, n: int, kind_fields: dict) -> AttemptRecord | None:
    """Run attempt `n` of the task now; None when it is not started (the run stops, or `--max-cost`) or was
    stopped by Ctrl-C: the task ends here, and the next invocation runs that attempt."""
    spend, admission = scope.options.spend, scope.admission
    paths = RunPaths(scope.run_dir).attempt(task_id, n)
    folder = paths.root
    if INTERRUPTED.is_set() or admission.breaker.stopped:
        return None  # an attempt not started leaves no folder: the next invocation runs it
    if spend is not None and not spend.admit(task_id):
        log.warning("%s attempt %d: not started, as it could take the run past --max-cost $%g", task_id, n,
                    spend.limit)
        return None
    if folder.exists():
        _set_aside(paths)
    spec = _attempt_spec(scope, task_id, n, kind_fields)
    folder.mkdir(parents=True, exist_ok=True)
    log.info("%s attempt %d: starting in %s", task_id, n, folder)
    scope.options.on_start(task_id, n)
    try:
        record = AttemptSandbox(scope.backend, spec, scope.harness, admission).run()
    except NotStarted:  # the run was stopped while it waited for a start slot: it leaves no trace
        if spend is not None:
            spend.settle(0.0)  # and spent nothing
        shutil.rmtree(folder, ignore_errors=True)
        return None
    except BaseException:
        if spend is not None:  # an attempt that never returned (Ctrl-C, a fault) is counted at its budget
            spend.settle(None)
        raise
    if spend is not None:
        spend.settle(record.budget_use.cost)  # unpriced (None): counted at its budget
    if INTERRUPTED.is_set():  # stopped by Ctrl-C: not a finished attempt
        log.warning("%s attempt %d: interrupted (Ctrl-C); left unfinished for the next run", task_id, n)
        return None
    scope.options.on_attempt(record)
    return record


def _retry_not_counted(scope: RunScope, task_id: str, record: AttemptRecord, fresh: bool, tally: _Tally) -> bool:
    """After an infra or upstream error: whether the task gets another attempt now (after a delay)."""
    retry = scope.config.retry
    if fresh and record.reason is AttemptReason.upstream_error:
        # the gateway already retried every failed request (budget.upstream_retries): an outage is
        # not waited out here; the next invocation of the same command tries the task again
        log.warning("%s: upstream outage; no retry now, the next run of the same command tries again", task_id)
        return False
    if fresh:  # earlier invocations' infra and upstream errors do not use up this one's retries
        tally.infra += 1
    if tally.infra > retry.max_infra_retries:
        log.warning("%s: %d infrastructure failure(s), more than the %d retries allowed; given up", task_id,
                    tally.infra, retry.max_infra_retries)
        return False
    if scope.admission.breaker.stopped:
        return False  # the run stops: no retry waits for it
    delay = scope.admission.retry_delay_s(tally.infra) if fresh and record.reason is AttemptReason.infra_error else 0.0
    log.info("%s: retrying after %s in %.1f s (infrastructure retry %d of %d; it does not count)", task_id,
             record.reason.value, delay, tally.infra, retry.max_infra_retries)
    return not (delay and INTERRUPTED.wait(delay))


def _again(scope: RunScope, task_id: str, record: AttemptRecord, fresh: bool, tally: _Tally) -> bool:
    """Whether the task gets another attempt after `record`: not after a delivery; after an infra or upstream
    error within the infrastructure retries; after a counted failure that the retry policy names, within
    `attempts_per_task`."""
    if record.delivered:
        return False
    if record.reason in NOT_COUNTED:
        return _retry_not_counted(scope, task_id, record, fresh, tally)
    tally.counted += 1
    budget = scope.config.budget
    if not scope.config.retry.retries(record.reason) or tally.counted >= budget.attempts_per_task:
        return False
    log.info("%s: retrying after %s (attempt %d of %d)", task_id, record.reason.value, tally.counted + 1,
             budget.attempts_per_task)
    return True


def run_task_attempts(scope: RunScope, task_id: str) -> list[AttemptRecord]:
    """Run attempts of one task until success or the retry policy says stop; resumes finished ones.

    Infra and upstream errors do not count against the attempts; their retries are counted per
    invocation, so a rerun after an outage tries such a task again and keeps its earlier attempts.
    `scope.options.reach` maps an upstream base URL of the config to the address the gateway uses for it (a loopback
    relay). `scope.backend` makes each attempt's sandbox (reused helper pairs, with Docker's pool).
    `scope.admission` holds the start slots and the run's stop rule (see `_admission`): no attempt starts once the
    run is stopped, and an infra_error is retried after a jittered, growing delay.
    `spend` (`--max-cost`) may leave the task's next attempt unstarted; the task then ends here, resumable.
    `scope.limiter`: the run's shared upstream limit, which every attempt's gateway asks before each upstream
    request."""
    kind_fields = _kind_fields(scope.snap, task_id, scope.config, scope.harness)
    run = RunPaths(scope.run_dir)
    records: list[AttemptRecord] = []
    tally = _Tally()
    n = 0
    while True:
        n += 1
        record = _finished(run.attempt(task_id, n))
        fresh = record is None
        if record is None:
            record = _new_attempt(scope, task_id, n, kind_fields)
            if record is None:
                break
        records.append(record)
        if fresh:
            use = record.budget_use
            log.log(logging.INFO if record.delivered else logging.WARNING, "%s attempt %d ended %s: %s (%.1f s, %d model "
                    "requests, %d tokens)", task_id, n, record.reason.value, record.detail or "-", record.wall_time_s,
                    use.requests, use.input_tokens + use.output_tokens)
        else:
            log.info("%s attempt %d already finished (%s); kept", task_id, n, record.reason.value)
        if not _again(scope, task_id, record, fresh, tally):
            break
    return records


def stop_run(backend: SandboxBackend, run_id: str, pool: ThreadPoolExecutor | None = None, wait_s: float = 60.0,
             run_dir: Path | None = None) -> None:
    """Ctrl-C: no queued attempt starts, the running ones' sandboxes are removed (by the run's label),
    and their threads are given `wait_s` to notice; a second Ctrl-C stops waiting. Finished attempts
    stay as they are; the stopped ones are left unfinished for the next invocation."""
    INTERRUPTED.set()
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)
    previous = signal.getsignal(signal.SIGINT)
    hurry = threading.Event()
    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        signal.signal(signal.SIGINT, lambda *_: hurry.set())
    try:
        backend.cleanup_run(run_id, mine=True, run_dir=run_dir)
        deadline = time.monotonic() + wait_s
        workers = list(getattr(pool, "_threads", ())) if pool is not None else []
        while any(t.is_alive() for t in workers) and time.monotonic() < deadline and not hurry.is_set():
            time.sleep(0.2)
            backend.cleanup_run(run_id, mine=True, run_dir=run_dir)  # an attempt that was starting its helpers just now
    finally:
        if in_main:
            signal.signal(signal.SIGINT, previous)


class LocalExecutor:
    """Runs each task's attempts in a thread of this process, up to `parallel` tasks at once (the default)."""

    def describe(self) -> dict:
        return {"executor": "local"}

    def run_tasks(self, backend: SandboxBackend, run_dir: Path, config: RunConfig, snap: Snapshot, harness: Harness,
                  options: RunOptions, admission: Admission | None = None) -> dict[str, list[AttemptRecord]]:
        run_backend = backend.for_run(RunPaths(run_dir).attempts)
        # one limit per upstream for every gateway of the run, on the network the gateways reach out on
        try:
            limiter: SharedLimiter | None = SharedLimiter(backend.host_address(config.outside_network),
                                                          options.max_connections)
        except (RuntimeError, UserError) as exc:  # a courtesy to the provider, never a reason not to run
            log.warning("no shared upstream limit for this run: %s", exc)
            limiter = None
        scope = RunScope(run_backend, run_dir, config, snap, harness, options, admission or Admission(), limiter)

        def one(task_id: str) -> list[AttemptRecord]:
            try:
                records = run_task_attempts(scope, task_id)
            except OSError:
                raise  # the machine's fault (a full disk, a lost engine socket): the run stops with one line
            except Exception as exc:  # noqa: BLE001 - a fault of the driver's code is that task's, never the run's
                log.error("%s: the driver failed while running this task: %s: %s", task_id, type(exc).__name__, exc,
                          exc_info=True)
                record_lost_attempt(run_dir, task_id, config, exc, what="failed", backend=None)
                records = records_on_disk(run_dir, task_id)
            options.on_task(task_id, records)
            return records

        pool = ThreadPoolExecutor(max_workers=max(1, options.parallel))
        futures = {t: pool.submit(one, t) for t in config.tasks}
        try:
            out = {t: f.result() for t, f in futures.items()}
        except KeyboardInterrupt:
            stop_run(backend, config.run_id(), pool, run_dir=run_dir)
            raise
        finally:
            # the shared parts go only once no task can use them any more (a task's error no longer ends the others)
            pool.shutdown(wait=not INTERRUPTED.is_set(), cancel_futures=True)
            run_backend.close()
            if limiter is not None:
                limiter.close()
        return out


LOCAL_EXECUTOR = LocalExecutor()


def run_attempts(client, run_dir: Path, config: RunConfig, snap: Snapshot, harness: Harness,
                 options: RunOptions | None = None) -> dict[str, list[AttemptRecord]]:
    """All tasks of the run, up to `options.parallel` tasks at once, in sandboxes of the backend
    `options.backend` (Docker by default, on the engine `client`). Leftovers of an interrupted run are removed
    first. `options.executor` places each task's attempts: threads of this process (`LocalExecutor`, the default)
    or a Ray cluster (`RayExecutor`). `options.on_task` hears of each task whose attempts are over. `options.host`
    sets the start slots, the infra retries' backoff, the stop rule and the stall timeout (see `_admission`); a run
    stopped by the rule raises `RunStopped` once its running attempts have ended. With `options.spend`
    (`--max-cost`), attempts that could take the invocation past it are left unstarted and the run ends with
    `SpendCapReached` once the others are over. `options.max_connections` caps the upstream requests in flight at
    once per upstream over all the run's gateways (`SharedLimiter`; the local executor only)."""
    options = options or RunOptions()
    executor = options.executor or LOCAL_EXECUTOR
    if options.spend is not None and not isinstance(executor, LocalExecutor):
        raise UserError("--max-cost runs with the local executor only (the dollars are counted in this process); "
                        "drop --executor ray, or drop --max-cost")
    run_dir = Path(run_dir).resolve()
    backend = sandbox_backend(options.backend, client)  # an unknown name, or bad settings, before anything is made
    open_run(run_dir, config)
    INTERRUPTED.clear()  # a Ctrl-C stops the run it came in, not the next one of this process
    backend.cleanup_run(config.run_id(), run_dir=run_dir)
    try:
        admission = Admission(options.host)
        out = executor.run_tasks(backend, run_dir, config, snap, harness, options, admission)
    except KeyboardInterrupt:
        stop_run(backend, config.run_id(), run_dir=run_dir)  # this node's sandboxes (the local executor stopped its threads' too)
        raise
    # a lost Ray worker's request the engine finished after the worker died leaves a container nobody owns
    backend.cleanup_run(config.run_id(), run_dir=run_dir)
    write_atomic(RunPaths(run_dir).attempts_summary, json.dumps(
        {t: [r.reason.value for r in rs] for t, rs in out.items()}, indent=2))
    if admission.breaker.reason is not None:
        log.error("%s", admission.breaker.reason)
        raise RunStopped(admission.breaker.reason)
    if options.spend is not None:
        options.spend.check()
    return out
