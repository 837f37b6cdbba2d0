"""`omnidr eval` end to end: check the inputs, run every system's attempts, score, aggregate, track.

Everything that can be wrong with the request (unknown model, harness, snapshot or judge, a missing
key, no Docker engine, no disk space, an image that cannot be built) is found before the first
attempt and raised as a `UserError` (exit 2). Faults during the run are recorded per attempt or per
evaluation; the run completes the rest, and rerunning the same command finishes what is missing.
"""

import json
import logging
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from omnidr._files import write_atomic
from omnidr._lock import folder_lock
from omnidr._runlog import run_log
from omnidr.attempts import HostPolicy, LocalExecutor, RayExecutor, SpendCap, is_loopback_url
from omnidr.benchmark import SNAPSHOT_CORPUS_FILE, InputSetting
from omnidr.errors import UserError
from omnidr.harness import SystemConfig
from omnidr.paths import AttemptPaths, EvalPaths, RunPaths
from sandbox.models import CORPUS_FILE, Budget, ModelPricing, ProviderToolsPolicy, SearchDoor

from ._checks import EvalResult, StageResult, check_snapshot
from ._costs import cost_metrics as cost_metrics
from ._results import (
    EvalConfig,
    check_system_folder,
    open_system_folder,
    primary_task_set,
)
from ._specs import Endpoint, SystemSpec, require_key
from ._specs import judge_settings as judge_settings
from .kinds import TaskKind, declared_kind, kind_named

log = logging.getLogger(__name__)

MIN_FREE_GB_ENV = "OMNIDR_MIN_FREE_GB"
DEFAULT_MIN_FREE_GB = 2.0
COMMANDS_FILE = "commands.jsonl"


@dataclass
class EvalRequest:
    """Everything `omnidr eval` (and `omnidr compare`) runs with: each system's config, built once from the command
    line or a config file (`SystemConfig`; the systems of one request differ in their agent only), and how the
    invocation runs them."""

    snapshot: Path
    configs: list[SystemConfig]
    tasks: list[str] | None = None
    runs_root: Path = Path("runs")
    parallel: int = 1
    executor: LocalExecutor | RayExecutor = field(default_factory=LocalExecutor)
    tracking_uri: str | None = None
    argv: list[str] = field(default_factory=lambda: list(sys.argv))
    wait: bool = False  # another driver holds the run root: wait for it instead of stopping
    prices: dict[str, ModelPricing] | None = None  # --prices: the lab's rates, before genai-prices' table
    spend: SpendCap | None = None  # --max-cost: what this invocation may spend, over all its systems
    max_connections: int | None = None  # --max-connections: the shared upstream limit's cap (None: its default)
    host: HostPolicy | None = None  # start slots, infra backoff, stop rule, stall timeout (--max-starts, --stall-timeout)

    def __post_init__(self) -> None:
        if not self.configs:
            raise ValueError("a request evaluates one system or more")
        first = self.configs[0]
        if any(c.model_copy(update={"agent": first.agent}) != first for c in self.configs):
            raise ValueError("the systems of one request differ in their agent only (one budget, web, judge, evaluator)")

    @property
    def config(self) -> SystemConfig:
        """The settings every system of the request shares (and the first system's agent)."""
        return self.configs[0]

    @property
    def systems(self) -> list[SystemSpec]:
        return [c.agent for c in self.configs]

    def with_systems(self, systems: list[SystemSpec], budget: Budget | None = None) -> None:
        """The request's systems (and budget) as resolved against the snapshot, before anything is recorded."""
        update: dict[str, object] = {} if budget is None else {"budget": budget}
        self.configs = [self.config.model_copy(update={**update, "agent": spec}) for spec in systems]

    @property
    def judge(self) -> Endpoint:
        return self.config.judge

    @property
    def budget(self) -> Budget:
        return self.config.budget or Budget()

    @property
    def budget_label(self) -> str:
        return self.config.budget_label

    @property
    def web(self) -> Literal["replay", "live", "record"]:
        mode = self.config.web.mode
        if mode not in ("replay", "live", "record"):
            raise ValueError(f"omnidr eval's web is replay, live or record, not {mode}")
        return mode

    @property
    def provider_tools(self) -> ProviderToolsPolicy | None:
        """None: the proxy mode's default (deny: the web is replayed)."""
        return self.config.web.provider_tools

    @property
    def search_door(self) -> SearchDoor | None:
        return self.config.web.search_door

    @property
    def outside_network(self) -> str | None:
        return self.config.web.outside_network

    @property
    def upstream_ca(self) -> tuple[Path, ...]:
        return self.config.web.upstream_ca

    @property
    def evaluator(self) -> Literal["docker", "host"]:
        return self.config.evaluator

    @property
    def proxy_mode(self):
        return self.config.web.proxy_mode

    @property
    def tools_policy(self) -> ProviderToolsPolicy:
        """The provider-side tools policy the attempts run under (by default, deny when the web is replayed,
        the denylist on the live web)."""
        return self.config.web.tools_policy


@dataclass
class SystemOutcome:
    spec: SystemSpec
    folder: Path
    records: dict = field(default_factory=dict)
    scored: object = None  # RunEvaluation
    evaluations: dict = field(default_factory=dict)  # (task id, attempt) -> its evaluation (report or answer)
    parent_run: str | None = None


@dataclass
class EvalOutcome:
    result: EvalResult
    run_root: Path | None = None
    systems: list[SystemOutcome] = field(default_factory=list)
    board: object = None
    files: list[Path] = field(default_factory=list)
    tracking_uri: str | None = None
    experiment_id: str | None = None
    kind: TaskKind | None = None  # the snapshot's task kind (its board, metrics and comparisons)


def judge_key(judge: Endpoint, kind: str | None = None) -> str:
    """The key the judge's evaluations carry (`JudgeIdentity.key`), known before any is made: a resumed run
    finds the evaluations of the same judge by it. Each kind has its own judge (the report kind's by default)."""
    return kind_named(kind).judge_key(judge)


def check_disk(path: Path) -> None:
    """Refuse to start when the run folder's file system is nearly full."""
    need = float(os.environ.get(MIN_FREE_GB_ENV, DEFAULT_MIN_FREE_GB))
    probe = Path(path).resolve()
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free / 2**30
    if free < need:
        raise UserError(f"only {free:.1f} GiB free under {probe}; an evaluation needs at least {need:g} GiB "
                        f"(free some space, choose another --runs-root, or lower {MIN_FREE_GB_ENV})")


def check_request(request: EvalRequest) -> None:
    """The checks that need no snapshot contents: folder, dollars, keys, disk space, tracking server, Docker engine."""
    from omnidr.harness import check_dollars
    from omnidr.images import docker_client

    if not Path(request.snapshot).is_dir():
        raise UserError(f"snapshot folder {request.snapshot} does not exist; pass SNAPSHOT=<folder> "
                        "(the demo is snapshots/demo)")
    for spec in request.systems:  # a dollar budget on a model nobody priced: said before the engine is asked
        check_dollars(spec.model, request.prices, request.budget, request.spend)
    for pem in request.upstream_ca:
        if not Path(pem).is_file():
            raise UserError(f"--upstream-ca {pem}: no such file; give a PEM certificate")
    if request.upstream_ca and request.web == "replay":
        raise UserError("--upstream-ca is for the live web; add --web live or --web record, or drop it")
    kind = declared_kind(Path(request.snapshot))
    if kind is not None:  # a harness that cannot answer the snapshot's tasks is refused before anything else
        from omnidr.harness import HARNESSES, check_harness_kind

        for spec in request.systems:
            check_harness_kind(HARNESSES[spec.harness], kind.task_format, request.snapshot)
    if request.web == "replay" and not all(_webless(s) for s in request.systems) \
            and not (Path(request.snapshot) / SNAPSHOT_CORPUS_FILE).is_file():
        raise UserError(f"{request.snapshot} has no web corpus (web/corpus.json) to replay; give --web live or "
                        "--web record, or add a recorded one with `omnidr snapshot add-web`")
    for spec in request.systems:
        require_key(spec.model, "model")
        if spec.translation and request.provider_tools is not None and request.provider_tools.web_search != "deny":
            raise UserError(f"{spec.label}: provider-side tools ({request.provider_tools}) cannot cross the gateway's "
                            f"{spec.translation} translation; drop --provider-tools or give the model an endpoint of "
                            f"the {spec.harness} harness's own API")
    require_key(request.judge, "judge")
    check_disk(request.runs_root)
    if request.tracking_uri:
        check_tracking_server(request.tracking_uri)
    client = docker_client()
    if request.outside_network:
        from docker.errors import NotFound

        try:
            client.networks.get(request.outside_network)
        except NotFound:
            raise UserError(f"Docker network {request.outside_network} does not exist; create it (`docker network "
                            f"create {request.outside_network}`) or drop --outside-network") from None


def _webless(spec: SystemSpec) -> bool:
    """A system that uses no web (`HarnessInfo.webless`): `run_system` closes its doors, and its snapshot needs no
    corpus."""
    from omnidr.harness import HARNESSES

    return HARNESSES[spec.harness].webless(spec.capability)


def check_tracking_server(uri: str) -> None:
    """An http(s) tracking URI must answer MLflow's /health now, not after the agents ran."""
    import urllib.error
    import urllib.request

    if not uri.startswith(("http://", "https://")):
        return
    try:
        with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=10) as answer:
            if answer.status == 200:
                return
            why = f"HTTP {answer.status}"
    except urllib.error.HTTPError as exc:
        why = f"HTTP {exc.code}"
    except (OSError, ValueError) as exc:
        why = str(getattr(exc, "reason", exc))
    raise UserError(f"the MLflow tracking server {uri} does not answer ({why}); start it, or drop --tracking-uri "
                    "to use the local store in the run root")


def preflight(request: EvalRequest, task_ids: list[str], note=lambda _m: None, kind: TaskKind | None = None) -> None:
    """Every check before the first attempt: the request, the Docker engine, the images (built when
    missing, with their build steps passed to `note`; the evaluator's only when `kind` evaluates in it), the
    endpoints."""
    from omnidr.harness import HARNESSES
    from omnidr.images import build_images

    check_request(request)
    if not task_ids:
        raise UserError("no task to run; the snapshot has no task or --task names none")
    # each harness's image (the direct harness runs in the reference image)
    names = sorted({HARNESSES[s.harness].image or s.harness for s in request.systems} | {"gateway", "egress"}
                   | ({"evaluator"} if request.evaluator == "docker" and (kind is None or kind.evaluates_in_image)
                      else set()))
    def building(message: str) -> None:  # an image found by its tag is not news; a build is
        if not message.lstrip().startswith("cached"):
            note(f"images: {message.strip()}")

    built = {b.name: b for b in build_images(names, progress=building)}
    for name in names:
        if not built[name].tag:
            raise UserError(f"the {name} image cannot be built here: {built[name].reason}")
    # last, once everything local holds: one cheap request to each endpoint the run will call
    from omnidr._reach import require_answer

    for url in dict.fromkeys(s.model.base_url for s in request.systems if s.model.base_url is not None):  # not offline
        require_answer(url, "model", "MODEL (--model)")
    if not request.judge.offline and request.judge.base_url:
        require_answer(request.judge.base_url, "judge", "JUDGE (--judge)")
        if request.evaluator == "docker":
            from omnidr.evaluation import judge_route

            judge_route(request.judge.base_url)  # a loopback judge cannot be reached from the evaluator image: say so now


def _gateway_model(model: Endpoint) -> Endpoint:
    """The model as the gateway serves it: without a key variable for a loopback endpoint run without a key."""
    if model.key_env and os.environ.get(model.key_env):
        return model
    if model.offline or is_loopback_url(model.base_url or ""):
        return model.model_copy(update={"key_env": None})
    return model


def run_system(request: EvalRequest, spec: SystemSpec, folder: Path, task_ids: list[str], progress, tracker,
               parent_id: str | None) -> dict:
    """All attempts of one system into `folder`; each finished attempt is tracked as it lands."""
    def on_attempt(record) -> None:
        progress.attempt(spec.label, record)
        if tracker is not None and parent_id is not None:
            tracker.attempt_run(parent_id, spec.label, record)

    def on_start(task_id: str, _n: int) -> None:
        progress.started(spec.label, task_id)

    def on_task(task_id: str, records: list) -> None:
        progress.task_done(spec.label, task_id, records)

    from omnidr.harness import SystemRunOptions, run_system

    config = request.config.model_copy(update={"agent": spec.model_copy(update={"model": _gateway_model(spec.model)})})
    options = SystemRunOptions(
        tasks=task_ids, parallel=request.parallel, executor=request.executor, wait=request.wait, host=request.host,
        prices=request.prices, spend=request.spend, max_connections=request.max_connections, on_attempt=on_attempt,
        on_note=progress.note, on_start=on_start, on_task=on_task)
    ran = run_system(request.snapshot, folder, config, options)
    return ran.records


def gather_recordings(folder: Path, progress) -> StageResult:
    """Merge what every attempt of a system recorded (`attempts/<task>/<n>/record/`) into `folder/web/`, a
    corpus that `omnidr snapshot add-web` adds to a snapshot. A URL recorded twice keeps its first answer."""
    from sandbox.egress import CorpusError, CorpusRecorder

    target = RunPaths(folder).web
    recorder = CorpusRecorder(target)
    sources = sorted(p.parent for p in RunPaths(folder).attempts.glob(f"*/*/record/{CORPUS_FILE}"))
    problems = []
    for source in sources:
        try:
            recorder.add_corpus(source)
        except CorpusError as exc:
            problems.append(str(exc))
    pages = len(recorder.pages)
    progress.note(f"{folder.name}: {pages} recorded page(s) from {len(sources)} attempt(s) in {target}")
    if problems:
        return StageResult("web record", "failed", f"{len(problems)} recording(s) unreadable: {problems[0]}")
    return StageResult("web record", "ok", f"{pages} page(s) from {len(sources)} attempt(s) in {target}; add them to a "
                       f"snapshot with `omnidr snapshot add-web SNAPSHOT {target}`, then `omnidr snapshot freeze SNAPSHOT`")


def _record_command(root: Path, request: EvalRequest) -> None:
    line = {"at": datetime.now(UTC).isoformat(), "cwd": os.getcwd(), "argv": request.argv,
            "snapshot": str(Path(request.snapshot).resolve()),
            "systems": [s.label for s in request.systems], "judge": request.judge.spec, "budget": request.budget_label}
    with (root / COMMANDS_FILE).open("a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


def system_params(request: EvalRequest, spec: SystemSpec, snapshot_id: str, images: dict, env: dict,
                  kind: TaskKind) -> dict:
    from omnidr.evaluation import EVALUATOR_VERSION
    from omnidr.tracking import KEY_PACKAGES

    return {
        "model": spec.model.name, "model_endpoint": spec.model.base_url or "offline (scripted)",
        "harness": spec.harness, "capability": spec.capability, "evidence_brief": spec.brief,
        "translation": spec.translation or "none",
        "budget": request.budget_label,
        **{f"budget.{k}": v for k, v in request.budget.model_dump().items()
           if k != "max_cost_usd" or v is not None},  # a system without a dollar budget keeps its params
        "web": request.web, "search_door": request.search_door.agent_value() if request.search_door else "offline index",
        "provider_tools": str(request.tools_policy),
        **{f"provider_tools.{k}": v for k, v in request.tools_policy.model_dump().items()},
        "snapshot_id": snapshot_id, "task_kind": kind.name, "judge": kind.judge_key(request.judge),
        "judge_endpoint": request.judge.base_url,
        "evaluator_version": EVALUATOR_VERSION, "git_commit": env["git_commit"], "git_dirty": env["git_dirty"],
        "executor": "local" if isinstance(request.executor, LocalExecutor) else json.dumps(request.executor.describe()),
        **{f"image.{name}": tag for name, tag in images.items()},
        **{f"package.{p}": env["packages"].get(p) for p in KEY_PACKAGES},
    }


def run_eval(request: EvalRequest, progress, check_examples: bool = True) -> EvalOutcome:
    """Check the snapshot, then run, score, aggregate and track every system of `request`."""
    outcome = EvalOutcome(EvalResult(request.snapshot))
    checked = check_snapshot(request.snapshot, progress.note, check_examples=check_examples)
    outcome.result.stages += checked.stages
    if outcome.result.failed:
        return outcome
    snap, snapshot_id = checked.snapshot, checked.snapshot_id
    if snap is None:  # the snapshot check failed, so the outcome is returned above
        raise RuntimeError(f"{request.snapshot}: the snapshot check gave no snapshot")
    task_ids = list(request.tasks or snap.tasks)
    unknown = [t for t in task_ids if t not in snap.tasks]
    if unknown:
        raise UserError(f"unknown task id(s): {', '.join(unknown)}; the snapshot has {', '.join(snap.tasks)}")
    # a short-answer snapshot's protocol is its default budget (paper 002, Sec. 3.1: 3,600 s or 100 calls); a
    # multiple-choice snapshot's is one request per question (paper 004, Sec. 4.1)
    protocol = snap.default_budget() if request.budget_label == "default" else None
    request.with_systems([resolved_setting(spec, snap) for spec in request.systems], protocol)
    kind = kind_named(snap.kind_name)
    preflight(request, task_ids, progress.note, kind)

    root = (Path(request.runs_root) / snapshot_id).resolve()
    outcome.run_root = root
    with folder_lock(root, wait=request.wait, on_wait=progress.note):  # one driver per run root
        with run_log(root, " ".join(request.argv) if request.argv else "omnidr eval"):
            for stage in outcome.result.stages:  # checked before the run root was known
                log.info("stage %s: %s: %s", stage.name, stage.status, stage.detail)
            return _run_root(request, outcome, root, snapshot_id, task_ids, progress, kind)


def resolved_setting(spec: SystemSpec, snap) -> SystemSpec:
    """A direct system's input setting as the snapshot's protocol makes it (`full` -> every modality at the default
    frame budget), so that its label says what it was given; UserError when the protocol does not allow it. Other
    systems as they are; the harness and the snapshot's kind must go together."""
    from omnidr.harness import HARNESSES, check_kind

    info = HARNESSES[spec.harness]
    check_kind(info, snap, spec.capability)
    if not info.settings:
        return spec
    return spec.model_copy(update={"capability": InputSetting.parse(spec.capability, snap.mcq_protocol).label})


def _run_root(request: EvalRequest, outcome: EvalOutcome, root: Path, snapshot_id: str, task_ids: list[str],
              progress, kind: TaskKind) -> EvalOutcome:
    """The systems of `request` in `root`, its leaderboard and tracking (the caller holds the root's lock)."""
    deliverable = kind.deliverable
    outcome.kind = kind
    configs = {spec.label: EvalConfig(system=spec, judge=request.judge, budget_label=request.budget_label,
                                      budget=request.budget, tasks=task_ids, snapshot_id=snapshot_id,
                                      provider_tools=request.tools_policy, web=request.web,
                                      search_door=request.search_door)
               for spec in request.systems}
    for label, config in configs.items():  # every refusal before anything is written
        check_system_folder(root / label, config)
    for label, config in configs.items():
        open_system_folder(root / label, config)
    _record_command(root, request)

    from omnidr.images import list_images
    from omnidr.tracking import (
        ARTIFACTS_DIR,
        Tracker,
        default_tracking_uri,
        environment_facts,
    )

    outcome.tracking_uri = request.tracking_uri or default_tracking_uri(root)
    # The local store keeps its artifacts in the run root; a tracking server decides where its go.
    tracker = Tracker(outcome.tracking_uri, f"omnidr/{snapshot_id}",
                      None if request.tracking_uri else root / ARTIFACTS_DIR)
    outcome.experiment_id = tracker.experiment_id
    env = environment_facts()
    built_images = [row for row in list_images() if row["image_id"]]
    # every built image with the package versions it holds and its drift from the locks
    env["images"] = {row["name"]: {k: row[k] for k in ("tag", "image_id", "packages")} for row in built_images}
    write_atomic(EvalPaths(root).environment, json.dumps(env, indent=2) + "\n")
    images = {row["name"]: row["tag"] for row in built_images}

    for spec in request.systems:
        folder = root / spec.label
        out = SystemOutcome(spec, folder)
        outcome.systems.append(out)
        out.parent_run = tracker.system_run(spec.label, system_params(request, spec, snapshot_id, images, env, kind),
                                            tags={"omnidr.snapshot": snapshot_id})
        progress.system(spec.label, len(task_ids))
        progress.note(f"{spec.label}: running {len(task_ids)} task(s) in the sandbox; folder {folder}")
        t0 = time.monotonic()
        out.records = run_system(request, spec, folder, task_ids, progress, tracker, out.parent_run)
        delivered = sum(1 for rs in out.records.values() if rs and rs[-1].delivered)
        outcome.result.add(StageResult(
            f"attempts {spec.label}", "ok" if delivered else "failed",
            f"{delivered}/{len(task_ids)} tasks delivered {deliverable} in {time.monotonic() - t0:.0f} s; "
            f"{RunPaths(folder).attempts}"))
        for records in out.records.values():
            for r in records:
                tracker.attempt_run(out.parent_run, spec.label, r)  # attempts run elsewhere (resumed, Ray) too
        if request.web == "record":
            outcome.result.add(gather_recordings(folder, progress))
        outcome.result.add(kind.score_system(request, spec, folder, task_ids, progress, tracker, out))
        _audit(folder, progress)  # after scoring: each audit page links to its report's evaluation
        for task_id, records in out.records.items():
            for r in records:
                attempt_dir = RunPaths(folder).attempt(task_id, r.attempt).root
                _trace(tracker, spec.label, r, attempt_dir, progress)
                if (evaluation := out.evaluations.get((task_id, r.attempt))) is not None:
                    tracker.attempt_verdicts(spec.label, task_id, r.attempt, evaluation)
                tracker.attempt_artifacts(spec.label, task_id, r.attempt, attempt_dir)

    progress.note("aggregating the run root's leaderboard (task bootstrap)")
    _board(request, outcome, root, snapshot_id, task_ids, tracker, kind)
    return _tracked(outcome, snapshot_id)


def _tracked(outcome: EvalOutcome, snapshot_id: str) -> EvalOutcome:
    outcome.result.add(StageResult("tracking", "ok", f"MLflow {outcome.tracking_uri} (experiment "
                                                               f"omnidr/{snapshot_id})"))
    return outcome


def _board(request: EvalRequest, outcome: EvalOutcome, root: Path, snapshot_id: str, task_ids: list[str], tracker,
           kind: TaskKind) -> None:
    """The run root's leaderboard and tables (the kind's), and each system's aggregates in MLflow."""
    key = kind.judge_key(request.judge)
    board, results = kind.build_board(root, request.snapshot, snapshot_id, key, primary_task_set(root, task_ids))
    if board is None:
        return
    outcome.board = board
    outcome.files = kind.write_board(root, board, results)
    labels = {folder: label for label, folder in results.systems.items()}
    for out in outcome.systems:
        row = next((r for r in board.rows if r.label == labels.get(out.folder.name)), None)
        if row is not None and out.parent_run is not None:  # every system has its run (above)
            tracker.system_result(out.parent_run, kind.system_metrics(row, results),
                                  [*outcome.files, EvalPaths(root).environment])
    outcome.result.add(StageResult(
        "leaderboard", "ok", f"{sum(r.rank is not None for r in board.rows)} system(s) ranked by {kind.ranked_by(key)}"
        + (f", {sum(r.provisional for r in board.rows)} provisional" if any(r.provisional for r in board.rows) else "")
        + f"; {root / 'leaderboard.md'}" + (f"; left out: {', '.join(results.left_out)}" if results.left_out else "")))


def _audit(folder: Path, progress) -> None:
    """Parse every attempt's trajectory (trajectory.json, audit.html) so that it is archived and tracked;
    an attempt without one (say, an infrastructure failure before the agent ran) is named and skipped."""
    from omnidr.trajectory import attempt_dirs, audit_attempt, run_harness

    harness = run_harness(folder)
    for attempt in attempt_dirs(folder):
        if AttemptPaths(attempt).trajectory.is_file() and AttemptPaths(attempt).audit_page.is_file():
            continue
        try:
            audit_attempt(attempt, harness)
        except UserError as exc:
            progress.note(f"no trajectory for {attempt.relative_to(folder)}: {str(exc).split(': ', 1)[-1]}")


def _trace(tracker, label: str, record, attempt_dir: Path, progress) -> None:
    """The attempt's trajectory as an MLflow trace (skipped, with a note, when it has none or MLflow
    refuses it: the trace is a view of trajectory.json, which stays the record)."""
    from omnidr.trajectory import Trajectory

    path = AttemptPaths(attempt_dir).trajectory
    if not path.is_file():
        return
    try:
        trajectory = Trajectory.model_validate_json(path.read_text("utf-8"))
        tracker.attempt_trace(label, record.task_id, record.attempt, trajectory, record.started_at, record.ended_at)
    except Exception as exc:  # noqa: BLE001 - tracking must not lose the run
        progress.note(f"no MLflow trace for {label}/{record.task_id} #{record.attempt}: {str(exc).splitlines()[0][:200]}")
