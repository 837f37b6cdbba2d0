"""The stages that run in the sandbox (S1a, S1b, and the model calls of S1c and S2): each is a one-task-per-session
staging snapshot under `authoring/<stage>/`, run by the reference agent through the gateway and the egress proxy.

Open in the paper, chosen here:
- The agent is the reference agent (`sandbox/reference_agent`): its evidence tool records claim, modality, source URL,
  verbatim excerpt, date, video time and a free `anchor` text. A record's type, time span (S1a) and source tier (S1b)
  have no field of their own, so the stage prompts ask for them in `anchor`, as `TYPE@START-END` and `TYPE@TIER`.
- The stage prompt travels as the staging task's request: the agent's instruction is the benchmark's (App. G.1) with
  the prompt in its "user need", and the prompt opens with a marker (`[ARC S1a <task> w0]`) by which the scripted
  model finds its per-task script offline.
- S1b has no path to the source video: its staging task carries a placeholder text file where the video would be
  mounted, and no video URL (the sandbox mounts a task's video file; the placeholder is all it finds).
- A model call of S1c and S2 is one agent session with no tools in use and the web closed: the gateway logs it like
  any other exchange, and the answer is the agent's final message.
"""

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from omnidr.benchmark import (
    HYPERPARAMETERS_FILE,
    SNAPSHOT_FILE,
    FactLibrary,
    RubricTree,
    SnapshotInfo,
    SourceVideo,
    Task,
    direction_inventory,
    probe_catalog,
    sha256_file,
)
from omnidr.errors import UserError
from omnidr.paths import AttemptPaths, RunPaths

from ._package import Package, _link_or_copy, copy_tree, dump

log = logging.getLogger(__name__)
WITHHELD_FILE = "video-withheld.txt"
WITHHELD_TEXT = "ARC S1b: the source video is withheld from this session (App. E.2); research the request on the web.\n"
WITHHELD_URL = "withheld: S1b has no path to the source video"
SCRIPTED_MODEL = "scripted-demo"


@dataclass(frozen=True)
class ModelEndpoint:
    """The model the evidence agents and the model calls use (None everywhere: the scripted model, offline)."""

    base_url: str | None = None
    model: str | None = None
    key_env: str | None = None
    web: str = "replay"  # S1b's web: replay (the package's web/ corpus), live, or record (live, pages kept)
    parallel: int = 2
    search_door: str | None = None  # PROVIDER@URL: S1b's searches through the egress proxy (which holds its key)
    search_key_env: str | None = None


@dataclass(frozen=True)
class Session:
    """One isolated agent session: a staging task, its prompt, and (offline) the scripted model's steps."""

    id: str
    prompt: str
    marker: str
    steps: list | None = None


def marker(stage: str, task_id: str, extra: str = "") -> str:
    return f"[ARC {stage} {task_id}{' ' + extra if extra else ''}]"


def _staging(pkg: Package, folder: Path, sessions: list[Session], with_video: bool, with_web: bool) -> Path:
    draft = pkg.draft()
    real = pkg.task(draft)
    root = folder / "staging"
    copy_tree(pkg.root / "contract", root / "contract")
    (root / HYPERPARAMETERS_FILE).write_bytes((pkg.root / HYPERPARAMETERS_FILE).read_bytes())
    if with_web and (pkg.root / "web").is_dir():
        copy_tree(pkg.root / "web", root / "web")
    for s in sessions:
        tdir = root / "tasks" / s.id
        tdir.mkdir(parents=True, exist_ok=True)
        if with_video:
            _link_or_copy(pkg.task_dir(draft) / real.video.file, tdir / real.video.file)
            video = real.video.model_copy(update={"captions": []})
        else:
            (tdir / WITHHELD_FILE).write_text(WITHHELD_TEXT, "utf-8")
            video = SourceVideo(url=WITHHELD_URL, file=WITHHELD_FILE, sha256=sha256_file(tdir / WITHHELD_FILE),
                                duration_s=real.video.duration_s)
        task = real.model_copy(update={"id": s.id, "query": s.prompt, "video": video})
        dump(tdir / "task.json", Task.model_validate(task.model_dump()))
        dump(tdir / "facts.json", FactLibrary(task_id=s.id, facts=[]))
        dump(tdir / "rubric.json", RubricTree(task_id=s.id, atoms=[]))
        (folder / f"prompt-{s.id}.txt").write_text(s.prompt, "utf-8")
    dump(root / SNAPSHOT_FILE, SnapshotInfo(name="arc-staging", version="1", description="ARC stage sessions",
                                            tasks=[s.id for s in sessions], inventory_version=direction_inventory().version,
                                            probes_version=probe_catalog().version))
    return root


def run_sessions(pkg: Package, stage_dir: Path, sessions: list[Session], *, capability: str, proxy_mode: str,
                 with_video: bool, endpoint: ModelEndpoint, on_note: Callable[[str], None] = log.info) -> dict[str, Path]:
    """Run each session as its own task of a staging snapshot (isolated attempts, one each) and return each
    session's attempt folder."""
    from omnidr.attempts import SandboxLimits, parse_search_door
    from omnidr.harness import Endpoint, SystemConfig, SystemRunOptions, SystemSpec, WebPolicy, run_system
    from sandbox.models import Budget

    draft = pkg.draft()
    run_dir = stage_dir / "run"
    done = {s.id: RunPaths(run_dir).attempt(s.id, 1).root for s in sessions}
    asked = {s.id: stage_dir / f"prompt-{s.id}.txt" for s in sessions}
    if all(AttemptPaths(done[s.id]).finished and asked[s.id].is_file()
           and asked[s.id].read_text("utf-8") == s.prompt for s in sessions):  # a resumed run: the same sessions ran
        on_note(f"{stage_dir.relative_to(pkg.root).as_posix()}: its {len(sessions)} session(s) ran before; reused")
        return done
    if run_dir.exists():  # interrupted part-way, or asked otherwise: keep what it left, run the sessions again
        run_dir.rename(run_dir.with_name(f"run.interrupted-{time.strftime('%Y%m%dT%H%M%S')}"))
    stage_dir.mkdir(parents=True, exist_ok=True)
    root = _staging(pkg, stage_dir, sessions, with_video, with_web=proxy_mode == "replay")
    scripts = None
    if endpoint.base_url is None:
        missing = [s.id for s in sessions if not s.steps]
        if missing:
            raise UserError(f"no model endpoint and no authoring script step for {', '.join(missing)}: give "
                            "--model-base-url and --model, or --script FILE with the task's authoring script")
        scripts = stage_dir / "scripts"
        scripts.mkdir(exist_ok=True)
        for s in sessions:
            dump(scripts / f"{s.id}.json", {"task": s.id, "match": s.marker, "model": SCRIPTED_MODEL, "steps": s.steps})
    door = (parse_search_door(endpoint.search_door, endpoint.search_key_env, proxy_mode)  # type: ignore[arg-type]
            if endpoint.search_door and proxy_mode != "deny" else None)
    model = (Endpoint.served(endpoint.model or "", endpoint.base_url, endpoint.key_env) if endpoint.base_url
             else Endpoint.scripted(name=endpoint.model or SCRIPTED_MODEL))
    web = WebPolicy.on_proxy(proxy_mode, search_door=door)
    config = SystemConfig(agent=SystemSpec(harness="reference", capability=capability, model=model),
                          budget=Budget(wall_time_s=draft.budgets.wall_time_s, attempts_per_task=1),
                          budget_label="authoring", web=web)
    run_system(root, run_dir, config, SystemRunOptions(
        tasks=[s.id for s in sessions], limits=SandboxLimits(cpus=1.0, memory_mb=1024), parallel=endpoint.parallel,
        on_note=on_note, scripts_dir=scripts))
    return done


def agent_evidence(attempt: Path) -> list[dict]:
    """The evidence records the agent kept (its `harness-logs/evidence.json`), [] when it kept none."""
    path = AttemptPaths(attempt).harness_logs / "evidence.json"
    return json.loads(path.read_text("utf-8")) if path.is_file() else []


def final_answer(attempt: Path) -> str:
    """The agent's last model message (the answer of a model-call session), '' when it has none."""
    path = AttemptPaths(attempt).harness_logs / "reference.jsonl"
    if not path.is_file():
        return ""
    calls = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    contents = [c.get("content") for c in calls if c.get("type") == "model_call" and c.get("content")]
    return contents[-1] if contents else ""


def answer_json(attempt: Path, stage: str) -> dict:
    """A model-call session's answer read as JSON (the first `{` to the last `}`); a user error when it is not."""
    text = final_answer(attempt)
    start, end = text.find("{"), text.rfind("}")
    try:
        value = json.loads(text[start:end + 1]) if start >= 0 else None
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise UserError(f"{stage}: the model's answer in {attempt} is not a JSON object; see its gateway.jsonl")
    return value
