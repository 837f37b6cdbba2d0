"""What the scoring commands (`aggregate`, `na-order`, `leaderboard`, `compare --snapshot`) read.

They score saved decisions and never call a judge. Their inputs come in the shapes the other
commands write, and every shape is accepted as it is:

- one report's decisions: a decisions JSON (`Decisions`), or an `evaluation.json` written by
  `omnidr score` or `omnidr eval` (its atoms' decisions; its `score` is the saved ReportScore);
- a system:
  - a folder with `system.json` and one decisions JSON per task (hand-made, the scoring stage's own);
  - a system folder of `omnidr eval` (`eval.json` and `evaluation/summary.json`), labelled as the
    run root's leaderboard labels it, with its not-final tasks;
  - an output folder of `omnidr score` (`summary.json`);
- a folder of such systems, for example an eval run root (`runs/<snapshot id>/`).

This reader sits in the pipeline because it is the stage that knows all three writers; the
scoring stage itself stays pure and reads only its own files.
"""

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from omnidr.errors import UserError
from omnidr.paths import SUMMARY_FILE, RunPaths
from omnidr.scoring import SYSTEM_FILE

from ._results import ScoredSystem, distinct_labels, read_system


def _is_evaluation(path: Path) -> bool:
    """An evaluation.json (by its fields), not a decisions file."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return False  # the decisions reader reports what is wrong with it
    return isinstance(data, dict) and "evaluator_version" in data and "atoms" in data


def read_evaluation_file(path: Path):
    from omnidr.evaluation import Evaluation
    from omnidr.scoring import read_model

    return read_model(path, Evaluation, "evaluation")


def read_any_decisions(path: Path):
    """`Decisions` from a decisions JSON or from an evaluation.json."""
    from omnidr.scoring import read_decisions

    path = Path(path)
    if path.is_file() and _is_evaluation(path):
        return read_evaluation_file(path).decisions()
    return read_decisions(path)


def read_any_score(path: Path):
    """A saved `ReportScore`: a ReportScore JSON, or the `score` of an evaluation.json."""
    from omnidr.scoring import ReportScore, read_model

    path = Path(path)
    if path.is_file() and _is_evaluation(path):
        return read_evaluation_file(path).score
    return read_model(path, ReportScore, "report score")


@dataclass
class ScoringSystems:
    """The systems found under the given paths."""

    systems: list = field(default_factory=list)  # SystemDecisions, in the order found
    incomplete: dict[str, list[str]] = field(default_factory=dict)  # label -> tasks whose score is not final
    skipped: dict[str, str] = field(default_factory=dict)  # folder -> why it holds no usable system
    task_ids: list[str] | None = None  # the tasks eval folders were evaluated on (None: the snapshot's)
    folders: dict[str, Path] = field(default_factory=dict)  # label -> the system's folder


def _kind(folder: Path) -> str | None:
    if (folder / SYSTEM_FILE).is_file():
        return "decisions"
    if RunPaths(folder).eval_config.is_file():
        return "eval"
    if (folder / SUMMARY_FILE).is_file():
        return "score"
    return None


def read_any_systems(paths: Sequence[Path], restrict: bool = False) -> ScoringSystems:
    """Every system under `paths` (see the module docstring). A path that is none of the shapes, or
    a folder with no scored system, is a one-line error naming what it expects. Unless the caller
    `restrict`s the task set itself (`--task`), eval and score folders are ranked on the tasks they
    were evaluated on: the largest set they share, the others left out (decisions folders take the
    snapshot's tasks)."""
    from omnidr.evaluation import system_decisions
    from omnidr.scoring import read_system as read_decisions_folder

    out = ScoringSystems()
    found: list[ScoredSystem] = []
    for p in map(Path, paths):
        if not p.is_dir():
            raise UserError(f"{p}: no such folder; give a system folder (system.json and decisions, or one "
                            "`omnidr eval` wrote) or a folder of them, such as an eval run root")
        folders = [p] if _kind(p) else sorted(s for s in p.iterdir() if s.is_dir() and _kind(s))
        if not folders:
            raise UserError(f"{p}: holds no system: no system.json, eval.json or summary.json, and no subfolder "
                            "with one; pass a system folder or a run root of `omnidr eval`")
        for folder in folders:
            kind = _kind(folder)
            if kind == "decisions":
                decisions = read_decisions_folder(folder)
                found.append(ScoredSystem(decisions.system.label, folder, decisions))
            elif kind == "score":
                [decisions] = system_decisions([folder])[1]
                found.append(ScoredSystem(decisions.system.label, folder, decisions, tasks=[d.task_id for d in decisions.decisions]))
            else:
                got = read_system(folder)
                if isinstance(got, str):
                    if folder == p:
                        raise UserError(f"{folder}: {got}; run `omnidr eval` for it first")
                    out.skipped[folder.name] = got
                else:
                    found.append(got)
    sets = Counter(tuple(sorted(f.tasks)) for f in found if f.tasks is not None)
    if sets and not restrict:
        # as a run root's leaderboard: the largest task set the scored folders share; others are left out
        best = max(sets, key=lambda t: (len(t), sets[t]))
        out.task_ids = list(best)
        for f in [f for f in found if f.tasks is not None and tuple(sorted(f.tasks)) != best]:
            out.skipped[f.folder.name] = f"evaluated on other tasks ({len(f.tasks or [])}); pass --task to rank on those"
            found.remove(f)
    for system in distinct_labels(found):
        out.systems.append(system.decisions)
        out.folders[system.label] = system.folder
        if system.incomplete:
            out.incomplete[system.label] = system.incomplete
    if not out.systems:
        reasons = "; ".join(f"{k}: {v}" for k, v in out.skipped.items())
        raise UserError(f"no scored system under {', '.join(map(str, paths))} ({reasons}); run `omnidr eval` first")
    return out


def _named_snapshot(folder: Path) -> str | None:
    """The snapshot a system folder records: run.json of `omnidr run` and `omnidr eval`, else the summary.json of an
    `omnidr score` output folder (or of an eval folder's evaluation/)."""
    for path in (RunPaths(folder).config, folder / SUMMARY_FILE, RunPaths(folder).evaluation_summary):
        try:
            named = json.loads(path.read_text("utf-8")).get("snapshot")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(named, str) and named:
            return named
    return None


def recorded_snapshot(paths: Sequence[Path]) -> Path | None:
    """The snapshot the system folders under `paths` (as `read_any_systems` takes them) ran on, as their records
    name it; None when none names one (hand-made decisions folders). Folders that name different snapshots, or a
    snapshot not found from here, are a user error asking for --snapshot."""
    found: dict[Path, str] = {}
    for p in map(Path, paths):
        if not p.is_dir():
            continue
        for folder in [p] if _kind(p) else sorted(s for s in p.iterdir() if s.is_dir() and _kind(s)):
            named = _named_snapshot(folder)
            if named is None:
                continue
            where = next((c for c in (Path(named), folder / named) if (c / "snapshot.json").is_file()), None)
            if where is None:
                raise UserError(f"{folder} ran on the snapshot '{named}', which is not found from here; pass "
                                "--snapshot PATH")
            found[where.resolve()] = named
    if len(found) > 1:
        raise UserError(f"the systems ran on different snapshots ({', '.join(sorted(found.values()))}); pass --snapshot "
                        "PATH, the one to score them on")
    return next(iter(found), None)
