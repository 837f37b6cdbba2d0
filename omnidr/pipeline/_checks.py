"""The checks `omnidr eval` runs before any agent: the snapshot, its manifest, its videos, and its
example reports read against the report contract and scored offline."""

import asyncio
import hashlib
import json
import logging
import os
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from omnidr._files import write_atomic
from omnidr.benchmark import (
    MANIFEST_FILE,
    ReportDataError,
    Snapshot,
    freeze_snapshot,
    hash_files,
    is_skeleton,
    read_report_data,
    validate_snapshot,
    verify_snapshot,
)
from omnidr.errors import UserError
from omnidr.media import ProbeError, probe_video

log = logging.getLogger(__name__)


def full_validation(path: Path, check_videos: bool = True):
    """`omnidr snapshot validate`: the benchmark's static checks plus the evaluation stage's
    empty-report check (App. E.4), which runs every M atom in Chromium. The benchmark package never
    imports the evaluator; the pipeline joins the two. `check_videos` off skips the browser check."""
    return validate_snapshot(path, check_videos=check_videos, checks=_stage_checks() if check_videos else ())


def freeze(path: Path):
    """`omnidr snapshot freeze`: the full validation, then the manifest (see `freeze_snapshot`)."""
    return freeze_snapshot(path, checks=_stage_checks())


def _stage_checks():
    from omnidr.evaluation import check_empty_reports

    return (check_empty_reports,)


@dataclass
class StageResult:
    name: str
    status: Literal["ok", "failed"]
    detail: str


@dataclass
class EvalResult:
    snapshot: Path
    stages: list[StageResult] = field(default_factory=list)

    def add(self, stage: StageResult) -> None:
        """Record a finished stage (and log it: the run log has every stage with its time)."""
        self.stages.append(stage)
        log.log(logging.INFO if stage.status == "ok" else logging.WARNING, "stage %s: %s: %s", stage.name,
                stage.status, stage.detail)

    @property
    def failed(self) -> bool:
        return any(s.status == "failed" for s in self.stages)


@dataclass
class SnapshotCheck:
    stages: list[StageResult] = field(default_factory=list)
    snapshot: Snapshot | None = None  # the opened snapshot
    snapshot_id: str = ""  # manifest id when frozen, else the snapshot's name

    def add(self, stage: StageResult) -> None:
        """Record a check (the run log gets the checks once the run root is known: `run_eval`)."""
        self.stages.append(stage)


def check_snapshot(path: Path, progress: Callable[[str], None] = lambda _msg: None,
                   check_examples: bool = True) -> SnapshotCheck:
    """Validate the snapshot and its manifest, probe its videos, and (with `check_examples`) read and
    score its example reports offline."""
    if not Path(path).is_dir():
        raise UserError(f"snapshot folder {path} does not exist; pass SNAPSHOT=<folder> (the demo is snapshots/demo)")
    result = SnapshotCheck()
    progress("validating the snapshot")
    passed = _BrowserChecks(Path(path))
    if passed.empty_reports_ok:
        kept = passed.cached if check_examples and passed.cached is not None else passed.record
        assert kept is not None
        what = "browser checks" if kept is passed.cached else "empty-report check"
        progress(f"the {what} passed on {kept['checked_at']} for these files, this omnidr code and this Chromium: "
                 "not run again")
        report = validate_snapshot(path)  # the static checks; the empty-report check passed on the same inputs
    else:
        report = validate_snapshot(path, checks=(passed.empty_report_check,))
    snap = report.snapshot
    from .kinds import kind_named  # the kinds use this module's stage results

    task_kind = kind_named(snap.kind_name) if not report.errors else None
    what = task_kind.describe_tasks(snap) if task_kind is not None else f"task kind {snap.kind_name}"
    detail = f"{len(snap.tasks)} tasks, {what}, {len(report.errors)} errors, {len(report.warnings)} warnings"
    if report.errors:  # bad input: one line, exit 2
        more = f" ({len(report.errors)} errors; `omnidr snapshot validate {path}` lists them all)" \
            if len(report.errors) > 1 else ""
        raise UserError(f"{path}: {report.errors[0].line().removeprefix('error: ')}{more}")
    result.add(StageResult("snapshot", "ok", detail))
    result.snapshot = snap
    result.snapshot_id = snap.info.name if snap.info is not None else Path(path).name
    if (snap.root / MANIFEST_FILE).is_file():
        progress("verifying MANIFEST.json")
        manifest, diff = verify_snapshot(path)
        result.snapshot_id = manifest.snapshot_id
        if diff.clean:
            result.add(StageResult("manifest", "ok", f"{len(manifest.files)} files match {manifest.snapshot_id}"))
        else:
            names = diff.changed + diff.missing + diff.extra
            result.add(StageResult("manifest", "failed", f"{len(names)} file(s) differ, e.g. {names[0]}"))
    else:
        result.add(StageResult("manifest", "ok", "snapshot not frozen (run `omnidr snapshot freeze`)"))

    progress("probing source videos with ffprobe")
    lines, failed = [], False
    assert task_kind is not None  # a snapshot with errors was refused above
    for name, file in task_kind.source_videos(snap).items():
        try:
            p = probe_video(file)
            lines.append(f"{name} {p.duration_s:.1f} s {p.width}x{p.height}")
        except ProbeError as exc:
            failed = True
            lines.append(str(exc))
    result.add(StageResult("videos", "failed" if failed else "ok", "; ".join(lines)))
    if not task_kind.example_reports:  # example reports and their contract belong to the report kind
        return result

    progress("reading the example reports against the report contract")
    assert snap.info is not None and snap.contract is not None
    lines, failed = [], False
    for label, folder in snap.info.reports.items():
        try:
            data = read_report_data(snap.root / folder, snap.contract.data_file)
        except ReportDataError as exc:
            failed = True
            lines.append(f"{label}: {exc}")
            continue
        kind = "unfilled skeleton" if is_skeleton(data) else f"{len(data.findings)} findings, {len(data.sources)} sources"
        lines.append(f"{label}: {kind}")
    result.add(StageResult("report contract", "failed" if failed else "ok", "; ".join(lines) or "no example reports"))

    if not check_examples or failed:
        passed.save(None)  # the empty-report check's pass alone, for the next command
    else:
        if passed.cached is not None:
            note = f" (as checked {passed.cached['checked_at']}; same snapshot files, omnidr code and Chromium)"
            result.stages.extend(StageResult(st["name"], st["status"], st["detail"] + note)
                                 for st in passed.cached["stages"])
        else:
            progress("evaluating the example reports (browser probes, offline baseline judge)")
            stages = _evaluate_examples(snap)
            result.stages.extend(stages)
            passed.save(stages)
    return result


class _BrowserChecks:
    """The two checks of `check_snapshot` that run Chromium (the empty-report check of every M atom, App. E.4,
    and the scoring of the example reports) take seconds on every `omnidr eval`, and their outcome is fixed by
    the snapshot's files, the omnidr code and the Chromium build. A pass is kept under the user's cache
    (`$XDG_CACHE_HOME/omnidr/checks`, else `~/.cache/omnidr/checks`), keyed by those three; a later eval on the
    same three reuses it and says so. Commands that do not score the example reports (`compare`, `calibrate`)
    keep and reuse the empty-report check's pass alone (a record whose `stages` is null). A failure is never
    kept: it is checked again every time. Removing the folder makes the next eval run the checks again."""

    def __init__(self, root: Path):
        self.key = _browser_checks_key(root)
        self.empty_reports_ok = False
        self.record: dict | None = None  # a kept pass: at least the empty-report check's
        self.cached: dict | None = None  # a kept pass of both checks
        if self.key is not None:
            try:
                found = json.loads((_checks_cache() / f"{self.key}.json").read_text("utf-8"))
                stages = found["stages"]
                if found.get("key") == self.key and (stages is None or all(st["status"] == "ok" for st in stages)):
                    self.record, self.empty_reports_ok = found, True
                    self.cached = found if stages is not None else None
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                pass  # none yet, or unreadable: the checks run

    def empty_report_check(self, snap):
        from omnidr.evaluation import check_empty_reports

        problems = check_empty_reports(snap)
        self.empty_reports_ok = not problems
        return problems

    def save(self, stages: list[StageResult] | None) -> None:
        """Keep a pass: the empty-report check found nothing and every example stage is ok (`stages` None: the
        examples were not scored; a kept pass of both is never replaced by that)."""
        if self.key is None or not self.empty_reports_ok or any(st.status != "ok" for st in stages or ()):
            return
        if stages is None and self.record is not None:
            return  # kept already
        record = {"key": self.key, "checked_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                  "stages": None if stages is None else [asdict(st) for st in stages]}
        try:
            folder = _checks_cache()
            folder.mkdir(parents=True, exist_ok=True)
            write_atomic(folder / f"{self.key}.json", json.dumps(record, indent=1))
        except OSError as exc:  # a read-only home: the checks just run every time
            log.warning("could not keep the browser checks' pass in %s: %s", _checks_cache(), exc)


def _checks_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "omnidr" / "checks"


def _browser_checks_key(root: Path) -> str | None:
    """sha256 of the snapshot's files, the omnidr and sandbox code (the evaluator, its probes, the report
    contract's reader) and `chromium --version`; None when Chromium does not answer (then nothing is reused)."""
    from omnidr.evaluation import chromium_path

    try:
        chromium = subprocess.run([chromium_path(), "--version"], capture_output=True, text=True, timeout=60,
                                  check=True).stdout.strip()
    except (UserError, OSError, subprocess.SubprocessError):
        return None
    code = hashlib.sha256()
    for package in (_PACKAGE, _PACKAGE.parent / "sandbox"):
        for file in sorted(package.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts:
                code.update(file.relative_to(package.parent).as_posix().encode() + b"\0" + file.read_bytes())
    parts = {"chromium": chromium, "code": code.hexdigest(), "files": hash_files(root.resolve())}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


_PACKAGE = Path(__file__).resolve().parents[1]


def _example_reports(snap) -> list[tuple[str, str, Path]]:
    """(label, task id, folder) of each example report; its task is the folder's parent name."""
    found = []
    for label, folder in snap.info.reports.items():
        path = snap.root / folder
        if path.parent.name in snap.tasks:
            found.append((label, path.parent.name, path))
    return found


def _evaluate_examples(snap) -> list[StageResult]:
    """Evaluate and score the example reports offline: probes in Chromium, J atoms by the baseline judge."""
    from omnidr.evaluation import (
        BaselineJudge,
        ChromiumBrowser,
        TaskInputs,
        evaluate_report,
    )

    examples = _example_reports(snap)
    if not examples:
        return [StageResult("evaluator", "ok", "no example report names a task of the snapshot"),
                StageResult("scoring", "ok", "nothing to score")]
    judge = BaselineJudge()

    async def go(tmp: Path):
        async with ChromiumBrowser() as browser:
            out = []
            for label, task_id, folder in examples:
                b = snap.tasks[task_id]
                inputs = TaskInputs(rubric=b.rubric, task=b.task, facts=b.facts, hyperparameters=snap.hyperparameters,
                                    contract=snap.contract)
                out.append((label, await evaluate_report(browser, judge, folder, inputs, tmp / label)))
            return out

    with tempfile.TemporaryDirectory(prefix="omnidr-eval-") as tmp:
        try:
            evaluations = asyncio.run(go(Path(tmp)))
        except UserError as exc:
            return [StageResult("evaluator", "failed", str(exc)), StageResult("scoring", "failed", "nothing was evaluated")]
    lines, scores, skipped = [], [], 0
    for label, ev in evaluations:
        m = [a for a in ev.atoms if a.evaluator == "M"]
        j = [a for a in ev.atoms if a.evaluator == "J"]
        skipped += ev.skipped_atoms
        free = " (content-free report)" if ev.session and ev.session.content_free else ""
        note = f"failure: {ev.failure}" if ev.failure else (
            f"M {sum(a.outcome == 'pass' for a in m)}/{len(m)} pass{free}, J {sum(a.outcome == 'pass' for a in j)}/{len(j)} pass")
        lines.append(f"{label} ({ev.task_id}): {note}")
        dims = ", ".join(f"{k.value} {v.score:.1f}" for k, v in ev.score.dimensions.items())
        scores.append(f"{label}: {ev.score.total:.1f}" + (f" ({dims})" if dims else ""))
    judge_note = f"judge {judge.identity.key} (offline lexical stand-in, not comparable with a model judge)"
    return [
        StageResult("evaluator", "failed" if skipped else "ok", f"{judge_note}; " + "; ".join(lines)),
        StageResult("scoring", "ok", "Omni-ART score " + "; ".join(scores)),
    ]
