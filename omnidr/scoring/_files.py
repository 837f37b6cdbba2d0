"""Reading the scoring inputs from disk, with one-line errors that name the file and the field.

A system folder holds `system.json` (a `SystemKey`) and one `Decisions` JSON file per task (any
other `*.json` name); its subfolders are not read. A folder without `system.json` whose
subfolders are system folders stands for all of them.
"""

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from omnidr.benchmark import Hyperparameters, RubricTree, open_snapshot

from ._decisions import Decisions
from ._errors import ScoringInputError
from ._tables import SystemDecisions, SystemKey

SYSTEM_FILE = "system.json"

M = TypeVar("M", bound=BaseModel)


def _where(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out


def read_model(path: Path, model: type[M], what: str) -> M:
    """Parse a JSON file into `model`; any problem is a ScoringInputError naming file and field."""
    path = Path(path)
    if not path.is_file():
        raise ScoringInputError(f"{path}: no such {what} file")
    try:
        data = json.loads(path.read_text("utf-8"))
    except UnicodeDecodeError:
        raise ScoringInputError(f"{path}: not UTF-8 text; give a JSON {what} file") from None
    except json.JSONDecodeError as exc:
        raise ScoringInputError(f"{path}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = errors[0]
        where = _where(first["loc"])
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        value = f" (got {first['input']!r})" if "input" in first and not isinstance(first["input"], (dict, list)) else ""
        msg = first["msg"].removeprefix("Value error, ")
        raise ScoringInputError(f"{path}: {where + ': ' if where else ''}{msg}{value}{more}") from None


def read_rubric(path: Path) -> RubricTree:
    return read_model(path, RubricTree, "rubric tree")


def read_decisions(path: Path) -> Decisions:
    return read_model(path, Decisions, "decisions")


def read_hyperparameters(path: Path) -> Hyperparameters:
    return read_model(path, Hyperparameters, "hyperparameters")


def read_system(folder: Path) -> SystemDecisions:
    """One system folder: `system.json` and one decisions file per task."""
    folder = Path(folder)
    key = read_model(folder / SYSTEM_FILE, SystemKey, "system")
    decisions = [read_decisions(p) for p in sorted(folder.glob("*.json")) if p.name != SYSTEM_FILE]
    return SystemDecisions(system=key, decisions=decisions)


def system_folders(paths: Sequence[Path]) -> list[Path]:
    """Expand the given paths to system folders (see the module docstring)."""
    found: list[Path] = []
    for p in map(Path, paths):
        if not p.is_dir():
            raise ScoringInputError(f"{p}: no such folder; give a system folder (with {SYSTEM_FILE}) or a folder of them")
        if (p / SYSTEM_FILE).is_file():
            found.append(p)
            continue
        subs = sorted(s for s in p.iterdir() if (s / SYSTEM_FILE).is_file())
        if not subs:
            raise ScoringInputError(f"{p}: holds no {SYSTEM_FILE} and no subfolder with one; each system folder needs {SYSTEM_FILE}")
        found.extend(subs)
    return found


def read_systems(paths: Sequence[Path]) -> list[SystemDecisions]:
    return [read_system(f) for f in system_folders(paths)]


def snapshot_trees(path: Path) -> tuple[dict[str, RubricTree], Hyperparameters | None]:
    """The rubric trees and hyperparameters of a snapshot; a tree or hyperparameters file that
    does not load is an error naming it."""
    snap = open_snapshot(path)
    relevant = [p for p in snap.problems if p.severity == "error"
                and (p.file.endswith("rubric.json") or p.file in ("snapshot.json", "hyperparameters.json"))]
    if relevant:
        raise ScoringInputError(f"{path}: {relevant[0].line()}")
    trees = {t: b.rubric for t, b in snap.tasks.items() if b.rubric is not None}
    if not trees:
        raise ScoringInputError(f"{path}: the snapshot has no rubric tree")
    return trees, snap.hyperparameters
