"""The registry of task kinds: the only place that knows which kinds exist."""

import json
from collections.abc import Sequence
from pathlib import Path

from omnidr.benchmark import SNAPSHOT_FILE, register_task_format
from omnidr.errors import UserError
from omnidr.paths import RunPaths

from ._protocol import TaskKind

DEFAULT_KIND = "report"
"""The kind of a snapshot (or an evaluation) that names none: OmniDR-Bench reports."""

_KINDS: dict[str, TaskKind] = {}


def register_kind(kind: TaskKind) -> TaskKind:
    """Register `kind` under its name (snapshots then declare `task_kind: <name>`); returns it. Registering another
    kind under a taken name is an error; registering the same one again is not."""
    if not isinstance(kind, TaskKind):
        raise TypeError(f"{kind!r} does not implement the TaskKind protocol")
    held = _KINDS.get(kind.name)
    if held is not None and held is not kind:
        raise ValueError(f"a task kind named {kind.name!r} is already registered")
    register_task_format(kind.name, kind.task_format)
    _KINDS[kind.name] = kind
    return kind


def registered_kinds() -> dict[str, TaskKind]:
    """Every registered kind by name."""
    return dict(_KINDS)


def kind_named(name: str | None) -> TaskKind:
    """The kind registered as `name` (the default kind for None); UserError naming the known ones otherwise."""
    kind = _KINDS.get(getattr(name, "value", name) or DEFAULT_KIND)
    if kind is None:
        raise UserError(f"task kind {name!r} is not registered; this sandbox runs {', '.join(_KINDS)} tasks")
    return kind


def declared_kind(snapshot: Path) -> TaskKind | None:
    """The kind `snapshot.json` declares, None when the file is unreadable or names no registered kind (the
    snapshot check says why)."""
    try:
        name = json.loads((Path(snapshot) / SNAPSHOT_FILE).read_text("utf-8")).get("task_kind", DEFAULT_KIND)
    except (OSError, ValueError, AttributeError):
        return None
    return _KINDS.get(name) if isinstance(name, str) else None


def snapshot_kind(snapshot: Path) -> TaskKind:
    """The kind of a loadable snapshot (the default kind when it declares none)."""
    from omnidr.benchmark import open_snapshot

    return kind_named(open_snapshot(snapshot).kind_name)


def folder_kind(folder: Path) -> TaskKind:
    """The kind of an evaluated system folder, by the task kind its evaluation summary names (the default kind
    when it names none or cannot be read)."""
    try:
        name = json.loads(RunPaths(Path(folder)).evaluation_summary.read_text("utf-8")).get("task_kind")
    except (OSError, ValueError, AttributeError):
        name = None
    return _KINDS.get(name or DEFAULT_KIND) or kind_named(DEFAULT_KIND)


def folders_kind(folders: Sequence[Path]) -> TaskKind:
    """The kind a set of evaluated folders is compared as: the first folder's that is not the default kind, else
    the default (so that a mix is refused by that kind's reader, which names the folder)."""
    kinds = [folder_kind(Path(f)) for f in folders]
    return next((k for k in kinds if k.name != DEFAULT_KIND), kinds[0] if kinds else kind_named(DEFAULT_KIND))
