"""`omnidr eval`: the stages of DESIGN.md's data flow, joined. Stages that are not built yet
are reported as such, never simulated."""

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from omnidr.benchmark import ReportDataError, is_skeleton, read_report_data, validate_snapshot, verify_snapshot
from omnidr.benchmark._manifest import MANIFEST_FILE
from omnidr.media import ProbeError, probe_video

# Stages of the data flow that later work will add; listed so that `eval` says what it did not run.
PENDING_STAGES = (
    ("sandbox", "agent attempts in the network-logged sandbox are not built yet"),
    ("evaluator", "browser probes and the judge are not built yet"),
    ("scoring", "Omni-ART aggregation and the leaderboard are not built yet"),
)


@dataclass
class StageResult:
    name: str
    status: str  # "ok", "failed" or "not built"
    detail: str


@dataclass
class EvalResult:
    snapshot: Path
    stages: list[StageResult] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(s.status == "failed" for s in self.stages)


def run_eval(path: Path, progress: Callable[[str], None] = lambda _msg: None) -> EvalResult:
    result = EvalResult(path)
    progress("validating the snapshot")
    report = validate_snapshot(path)
    snap = report.snapshot
    atoms = sum(len(b.rubric.atoms) for b in snap.tasks.values() if b.rubric)
    detail = f"{len(snap.tasks)} tasks, {atoms} atoms, {len(report.errors)} errors, {len(report.warnings)} warnings"
    if report.errors:
        detail += "; first: " + report.errors[0].line()
    result.stages.append(StageResult("snapshot", "failed" if report.errors else "ok", detail))
    if report.errors:
        return result

    if (snap.root / MANIFEST_FILE).is_file():
        progress("verifying MANIFEST.json")
        manifest, diff = verify_snapshot(path)
        if diff.clean:
            result.stages.append(StageResult("manifest", "ok", f"{len(manifest.files)} files match {manifest.snapshot_id}"))
        else:
            names = diff.changed + diff.missing + diff.extra
            result.stages.append(StageResult("manifest", "failed", f"{len(names)} file(s) differ, e.g. {names[0]}"))
    else:
        result.stages.append(StageResult("manifest", "ok", "snapshot not frozen (run `omnidr snapshot freeze`)"))

    progress("probing source videos with ffprobe")
    lines, failed = [], False
    for task_id, bundle in snap.tasks.items():
        assert bundle.task is not None
        try:
            p = probe_video(bundle.folder / bundle.task.video.file)
            lines.append(f"{task_id} {p.duration_s:.1f} s {p.width}x{p.height}")
        except ProbeError as exc:
            failed = True
            lines.append(str(exc))
    result.stages.append(StageResult("videos", "failed" if failed else "ok", "; ".join(lines)))

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
    result.stages.append(StageResult("report contract", "failed" if failed else "ok", "; ".join(lines) or "no example reports"))

    for name, why in PENDING_STAGES:
        result.stages.append(StageResult(name, "not built", why))
    return result
