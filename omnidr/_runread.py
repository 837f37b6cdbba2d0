"""One reader for the records of a run: `read_run(folder)` takes an eval run root, a system folder or an
attempt folder, tells which it is, and returns what its records hold, read with each record's own model.

Every file it opens is named by `omnidr.paths`; the models come from the stages that write them (attempts,
evaluation, pipeline), imported when a folder is read, so that importing this module loads no stage."""

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, ValidationError

from omnidr.errors import UserError
from omnidr.paths import AttemptPaths, EvalPaths, RunPaths

if TYPE_CHECKING:
    from omnidr.attempts import AttemptRecord, RunConfig
    from omnidr.evaluation import RunEvaluation
    from omnidr.pipeline import EvalConfig

Record = TypeVar("Record", bound=BaseModel)


@dataclass(frozen=True)
class AttemptRun:
    """One attempt folder (`attempts/<task>/<n>/`)."""

    paths: AttemptPaths
    task_id: str
    number: int
    record: "AttemptRecord | None"
    """`attempt.json`; None while the attempt runs or after it was interrupted (the record is written last)."""


@dataclass(frozen=True)
class SystemRun:
    """One system's run folder (what `omnidr run` makes, and each system of an eval root)."""

    paths: RunPaths
    config: "RunConfig | None"
    """`run.json`; None before the runner wrote it."""
    eval_config: "EvalConfig | None"
    """`eval.json`; None in a folder of `omnidr run`."""
    attempts: dict[str, dict[int, AttemptRun]] = field(default_factory=dict)
    """Task id -> attempt number -> attempt, in task-folder and attempt order."""
    evaluation: "RunEvaluation | None" = None
    """`evaluation/summary.json`; None until the system is scored."""

    @property
    def name(self) -> str:
        return self.paths.root.name


@dataclass(frozen=True)
class RootRun:
    """An `omnidr eval` run root."""

    paths: EvalPaths
    systems: dict[str, SystemRun]
    """System folder name -> system, by name."""


def read_record(path: Path, model: type[Record], what: str) -> Record | None:
    """`path` read with `model`; None when there is no such file; a file the model refuses is one line."""
    if not path.is_file():
        return None
    try:
        return model.model_validate_json(path.read_text("utf-8"))
    except ValidationError as exc:
        e = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in e["loc"])
        raise UserError(f"{path}: not a valid {what}: {where + ': ' if where else ''}{e['msg']}"[:300]) from None
    except (UnicodeDecodeError, OSError) as exc:
        raise UserError(f"{path}: not a valid {what}: {str(exc).splitlines()[0][:200]}") from None


def _attempt_paths(folder: Path) -> AttemptPaths | None:
    """The attempt `folder` is (a finished one has its record; a running one sits at `attempts/<task>/<n>/` of a
    run folder), else None."""
    paths = AttemptPaths(folder)
    if paths.finished:
        return paths
    if folder.name.isdigit() and len(folder.parents) >= 3:
        run = RunPaths(folder.parents[2])
        if run.attempt(folder.parent.name, int(folder.name)).root == folder and run.attempts.is_dir():
            return paths
    return None


def _is_system(folder: Path) -> bool:
    paths = RunPaths(folder)
    return paths.config.is_file() or paths.eval_config.is_file() or paths.attempts.is_dir()


def _attempt(paths: AttemptPaths) -> AttemptRun:
    from omnidr.attempts import AttemptRecord

    record = read_record(paths.record, AttemptRecord, "attempt record")
    number = record.attempt if record else int(paths.root.name) if paths.root.name.isdigit() else 0
    task_id = record.task_id if record else paths.root.parent.name
    return AttemptRun(paths, task_id, number, record)


def _system(paths: RunPaths) -> SystemRun:
    from omnidr.attempts import RunConfig
    from omnidr.evaluation import RunEvaluation
    from omnidr.pipeline import EvalConfig

    tasks = sorted(f.name for f in paths.attempts.iterdir() if f.is_dir()) if paths.attempts.is_dir() else []
    attempts = {task: {int(a.root.name): _attempt(a) for a in paths.attempt_folders(task)} for task in tasks}
    return SystemRun(paths, read_record(paths.config, RunConfig, "run file"),
                     read_record(paths.eval_config, EvalConfig, "eval file"),
                     {task: found for task, found in attempts.items() if found},
                     read_record(paths.evaluation_summary, RunEvaluation, "evaluation summary"))


def read_run(folder: Path | str) -> RootRun | SystemRun | AttemptRun:
    """What `folder` holds: an attempt folder (`attempt.json`, or a numbered folder under a run's `attempts/`),
    a system folder (`run.json`, `eval.json` or `attempts/`), or an eval run root (system folders with
    `eval.json`, or `environment.json`). Anything else, or a record its model refuses, is a one-line user error."""
    folder = Path(folder)
    if not folder.is_dir():
        raise UserError(f"{folder}: no such folder; pass an eval run root, a system folder or an attempt folder")
    attempt = _attempt_paths(folder)
    if attempt is not None:
        return _attempt(attempt)
    if _is_system(folder):
        return _system(RunPaths(folder))
    root = EvalPaths(folder)
    systems = root.systems()
    if systems or root.environment.is_file():
        return RootRun(root, {s.root.name: _system(s) for s in systems})
    raise UserError(f"{folder}: not a run folder (no attempt.json, run.json, eval.json, attempts/ or system folder "
                    "inside); pass an eval run root, a system folder or an attempt folder")
