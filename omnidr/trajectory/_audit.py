"""Auditing a run folder: the trajectory of each attempt, its statistics, and an HTML page.

Where an attempt's trajectory comes from, first that exists:
1. output/trajectory.jsonl, written by the harness in the common format;
2. the harness's native log under output/harness-logs/ (`NATIVE_LOG_GLOBS`), read by the parser
   of run.json's harness;
3. logs/gateway.jsonl alone (`trajectory_from_gateway`): what makes the `command` harness,
   and any harness whose logs are missing, auditable.
Gateway token totals are attached whenever logs/gateway.jsonl exists. The trajectory is written
to <attempt>/trajectory.json and the page to <attempt>/audit.html.
"""

import json
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from omnidr._files import write_atomic
from omnidr.errors import UserError
from omnidr.paths import RUN_FILE, AttemptPaths, RunPaths
from sandbox.models import GatewayExchange, read_web_log

from ._gateway import attach_gateway_totals, read_gateway_log, trajectory_from_gateway
from ._html import AttemptLogs, audit_page
from ._jsonl import TrajectoryFormatError
from ._models import Trajectory
from ._native import FORMATS, NATIVE_LOG_GLOBS, parse_native_log, read_common_trajectory
from ._stats import ProcessStats, process_stats

KNOWN_HARNESSES = sorted({h for h, _ in FORMATS.values()} | {"command"})


class AttemptAudit(BaseModel):
    """What `omnidr audit` found for one attempt."""

    task_id: str = Field(description="Task of the attempt.")
    attempt: int = Field(description="Attempt number.")
    folder: str = Field(description="Attempt folder.")
    origin: str = Field(description="File the trajectory was read from, relative to the attempt folder.")
    stats: ProcessStats = Field(description="Process statistics.")
    reason: str | None = Field(None, description="How the attempt ended (attempt.json), if recorded.")
    trajectory_path: str = Field(description="Path of the trajectory.json written.")
    page_path: str = Field(description="Path of the audit.html written.")
    warnings: list[str] = Field(default_factory=list, description="What the parser skipped or guessed.")
    ended_with_error: str | None = Field(None, description="The error the harness's run ended on, when its log says so.")
    changes: list[str] = Field(default_factory=list, description="What this audit wrote into the attempt folder: "
                               "a file it made or one whose earlier content it replaced (an unchanged file is left "
                               "as it was and not named).")


def native_log(attempt_dir: Path, harness: str) -> Path | None:
    """The harness's native log in an attempt folder, or None."""
    logs = AttemptPaths(attempt_dir).harness_logs
    for pattern in NATIVE_LOG_GLOBS.get(harness, []):
        found = sorted(p for p in logs.glob(pattern) if p.is_file())
        if found:
            return max(found, key=lambda p: p.stat().st_size)  # the main session, not a subagent's
    return None


def load_attempt_trajectory(attempt_dir: Path, harness: str) -> tuple[Trajectory, str]:
    """The trajectory of one attempt and the file it came from (relative to the attempt folder)."""
    paths = AttemptPaths(attempt_dir)
    common, gateway = paths.common_trajectory, paths.gateway_log
    if common.is_file():
        traj, origin = read_common_trajectory(common, harness), common
    elif (native := native_log(attempt_dir, harness)) is not None:
        traj, origin = parse_native_log(native, harness), native
    elif gateway.is_file():
        traj, origin = trajectory_from_gateway(gateway, harness), gateway
        if harness in NATIVE_LOG_GLOBS:
            traj.warnings.insert(0, f"no native {harness} log under output/harness-logs/; steps rebuilt from the gateway")
    elif paths.finished:  # a finished attempt that never called the model
        traj = Trajectory(harness=harness, source_format="gateway", steps=[], warnings=[
            "the attempt made no model call (no gateway log, no native log): nothing ran to audit"])
        origin = paths.record
    else:
        if harness not in KNOWN_HARNESSES:
            raise UserError(f"{attempt_dir}: unknown harness {harness!r} and no output/trajectory.jsonl or "
                            f"logs/gateway.jsonl to read; known harnesses: {', '.join(KNOWN_HARNESSES)}")
        raise UserError(f"{attempt_dir}: nothing to audit: no output/trajectory.jsonl, no {harness} log under "
                        "output/harness-logs/, no logs/gateway.jsonl, no attempt.json")
    if gateway.is_file() and traj.source_format != "gateway":
        attach_gateway_totals(traj, gateway)
    return traj, str(origin.relative_to(attempt_dir))


def _record(attempt_dir: Path):
    """The attempt's AttemptRecord, or None when attempt.json is missing or unreadable."""
    from omnidr.attempts import AttemptRecord  # here, not at the top: attempts -> harness -> trajectory

    path = AttemptPaths(attempt_dir).record
    if not path.is_file():
        return None
    try:
        return AttemptRecord.model_validate_json(path.read_text("utf-8"))
    except (ValidationError, ValueError):
        return None


def page_links(attempt_dir: Path, task_id: str, number: int) -> list[tuple[str, str]]:
    """(label, href relative to the attempt folder) of what an auditor opens next, where it exists: the
    report, this attempt's evaluation (in a system folder of `omnidr eval` or `omnidr run` + `omnidr
    score`), the logs, and the run root's index page."""
    links: list[tuple[str, str]] = []
    paths = AttemptPaths(attempt_dir)
    if (paths.report / "index.html").is_file():
        links.append(("report", "output/report/index.html"))
    system = attempt_dir.parent.parent.parent  # <system>/attempts/<task>/<n>
    evaluation = RunPaths(system).task_evaluation(task_id)
    if evaluation.is_file():
        try:
            scored = json.loads(evaluation.read_text("utf-8")).get("attempt")
        except (OSError, ValueError, AttributeError):
            scored = None
        if scored == number:
            links.append(("evaluation", f"../../../{evaluation.relative_to(system).as_posix()}"))
    for file in (paths.record, paths.trajectory):
        if file.is_file():
            links.append((file.name, file.name))
    logs = paths.logs
    if logs.is_dir():
        links += [(f"logs/{p.name}", f"logs/{p.name}") for p in sorted(logs.iterdir()) if p.is_file()]
    if paths.harness_logs.is_dir():
        links.append(("harness logs", "output/harness-logs/"))
    # the run root's page: written at the end of `omnidr eval`, so its system folders link to it already
    if (system.parent / "index.html").is_file() or RunPaths(system).eval_config.is_file():
        links.append(("run index", "../../../../index.html"))
    return links


def audit_attempt(attempt_dir: Path, harness: str) -> AttemptAudit:
    """Read, measure and render one attempt; writes trajectory.json and audit.html into its folder."""
    traj, origin = load_attempt_trajectory(attempt_dir, harness)
    paths = AttemptPaths(attempt_dir)
    record = _record(attempt_dir)
    if record is None and paths.finished:
        traj.warnings.append("attempt.json is not a valid attempt record; ignored")
    network = read_web_log(paths.logs, traj.warnings)
    stats = process_stats(traj, wall_time_s=record.wall_time_s if record else None, web=network)
    exchanges: list[GatewayExchange] = []
    if paths.gateway_log.is_file():
        exchanges, _ = read_gateway_log(paths.gateway_log)
    task_id, number = attempt_dir.parent.name, int(attempt_dir.name) if attempt_dir.name.isdigit() else 0
    trajectory_path, page_path = paths.trajectory, paths.audit_page
    changes = [c for c in (
        _write_changed(trajectory_path, traj.model_dump_json(indent=1), _steps_note(trajectory_path, traj, origin)),
        _write_changed(page_path, audit_page(traj, stats, origin=origin, task_id=task_id, attempt=number,
                                             record=record, logs=AttemptLogs(exchanges, network),
                                             links=page_links(attempt_dir, task_id, number)), ""),
    ) if c]
    return AttemptAudit(task_id=task_id, attempt=number, folder=str(attempt_dir), origin=origin, stats=stats,
                        reason=record.reason.value if record else None, trajectory_path=str(trajectory_path),
                        page_path=str(page_path), warnings=traj.warnings, ended_with_error=traj.ended_with_error,
                        changes=changes)


def _write_changed(path: Path, text: str, why: str) -> str | None:
    """Write `path` unless it already holds `text`; says what it did ('wrote NAME', 'rewrote NAME: WHY'), or None
    when the file was left as it was."""
    if not path.is_file():
        write_atomic(path, text)
        return f"wrote {path.name}"
    if path.read_bytes() == text.encode("utf-8"):
        return None
    write_atomic(path, text)
    return f"rewrote {path.name}" + (f": {why}" if why else "")


def _steps_note(path: Path, traj: Trajectory, origin: str) -> str:
    """How a trajectory.json already in the folder differs from the one read now, in the terms a reader checks."""
    try:
        before = Trajectory.model_validate_json(path.read_text("utf-8"))
    except (OSError, ValueError):
        return "the file there was not a readable trajectory"
    old, new = len(before.steps), len(traj.steps)
    if old != new:
        return f"it held {old} step(s), this omnidr reads {new} from {origin}"
    return f"this omnidr reads {origin} differently from the one that wrote the file (the same {new} step(s))"


def run_harness(run_dir: Path) -> str:
    """The harness named in RUN_DIR/run.json."""
    path = RunPaths(run_dir).config
    if not path.is_file():
        systems = sorted(p.parent.name for p in Path(run_dir).glob(f"*/{RUN_FILE}"))
        if systems:  # a run root of `omnidr eval`: its system folders are the run folders
            raise UserError(f"{run_dir} is a run root with {len(systems)} system folder(s); pass one of them, e.g. "
                            f"`omnidr audit {Path(run_dir) / systems[0]}`")
        raise UserError(f"{run_dir}: not a run folder (no run.json); pass the folder `omnidr run` wrote, or a system "
                        "folder of `omnidr eval` (runs/<snapshot id>/<system>)")
    try:
        config = json.loads(path.read_text("utf-8"))
    except ValueError as exc:
        raise UserError(f"{path}:{getattr(exc, 'lineno', 1)}: run.json is not valid JSON") from None
    harness = config.get("harness") if isinstance(config, dict) else None
    if not isinstance(harness, str) or not harness:
        raise UserError(f"{path}: run.json names no harness")
    return harness


def attempt_dirs(run_dir: Path, task: str | None = None) -> list[Path]:
    """Attempt folders of a run (interrupted leftovers `N.interrupted-*` are skipped), by task and number."""
    root = RunPaths(run_dir).attempts
    tasks = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    if task is not None:
        tasks = [p for p in tasks if p.name == task]
        if not tasks:
            raise UserError(f"{run_dir}: no attempts for task {task!r}")
    found = [a for t in tasks for a in sorted((p for p in t.iterdir() if p.is_dir() and p.name.isdigit()),
                                               key=lambda p: int(p.name))]
    if not found:
        raise UserError(f"{run_dir}: no attempt folders under attempts/; has `omnidr run` finished an attempt?")
    return found


def scored_trace_stats(run_dir: Path) -> list[ProcessStats]:
    """Process statistics of each task's last attempt (the one whose report is scored), from the
    trajectory.json its audit wrote; a task whose last attempt has none is left out. The input of a
    system's process medians (App. F.7: one trace per task)."""
    out = []
    run = RunPaths(Path(run_dir))
    for task in sorted(p for p in run.attempts.iterdir() if p.is_dir()) if run.attempts.is_dir() else []:
        attempts = run.attempt_folders(task.name)
        path = attempts[-1].trajectory if attempts else None
        if path is None or not path.is_file():
            continue
        try:
            traj = Trajectory.model_validate_json(path.read_text("utf-8"))
        except ValueError:
            continue
        record = _record(attempts[-1].root)
        web = read_web_log(attempts[-1].logs, [])
        out.append(process_stats(traj, wall_time_s=record.wall_time_s if record else None, web=web))
    return out


def audit_run(run_dir: Path, task: str | None = None) -> list[AttemptAudit]:
    """Audit every attempt of a run folder (or of one task)."""
    harness = run_harness(run_dir)
    return [audit_attempt(a, harness) for a in attempt_dirs(run_dir, task)]


__all__ = ["AttemptAudit", "TrajectoryFormatError", "audit_attempt", "audit_run", "load_attempt_trajectory",
           "scored_trace_stats"]
