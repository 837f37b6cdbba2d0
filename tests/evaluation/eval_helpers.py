"""Helpers for evaluator tests: demo paths, hand-built run folders, hostile report variants."""

import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
DEMO = ROOT / "snapshots" / "demo"
TASK = "pendant-lamp-safety"
GOOD = DEMO / "reports" / TASK / "good"
SKELETON = DEMO / "reports" / TASK / "skeleton"


def demo_inputs(task_id: str = TASK):
    from omnidr.benchmark import open_snapshot
    from omnidr.evaluation import TaskInputs

    snap = open_snapshot(DEMO)
    b = snap.tasks[task_id]
    return TaskInputs(rubric=b.rubric, task=b.task, facts=b.facts, hyperparameters=snap.hyperparameters, contract=snap.contract,
                      video=b.folder / b.task.video.file)


def m_calls(task_id: str = TASK) -> list:
    return [a.probe for a in demo_inputs(task_id).rubric.atoms if a.probe is not None]


def copy_report(dest: Path, source: Path = GOOD) -> Path:
    shutil.copytree(source, dest)
    return dest


def inject(report: Path, script: str, where: str = "head") -> Path:
    """Add a script to a report's index.html: in <head> (runs before the template) or at the end of <body>."""
    index = report / "index.html"
    html = index.read_text("utf-8")
    tag = f"<script>{script}</script>"
    html = html.replace("</head>", tag + "\n</head>", 1) if where == "head" else html.replace("</body>", tag + "\n</body>", 1)
    index.write_text(html, "utf-8")
    return report


def write_attempt(run_dir: Path, task_id: str, n: int, reason: str, report_from: Path | None = None,
                  report_path: str | None = "output/report/index.html", detail: str = "") -> Path:
    """An attempt folder as `omnidr run` leaves it: attempt.json last, the report under output/report/."""
    from omnidr.attempts import AttemptReason, AttemptRecord, SandboxLimits
    from sandbox.models import Budget

    folder = run_dir / "attempts" / task_id / str(n)
    folder.mkdir(parents=True)
    if report_from is not None:
        shutil.copytree(report_from, folder / "output" / "report")
    now = datetime.now(UTC)
    record = AttemptRecord(
        task_id=task_id, attempt=n, harness="command", command=["python3", "agent.py"], reason=AttemptReason(reason),
        detail=detail, exit_code=0, started_at=now, ended_at=now, wall_time_s=1.0, budget=Budget(),
        limits=SandboxLimits(), proxy_mode="replay", report_path=report_path if reason == "success" else None,
    )
    (folder / "attempt.json").write_text(record.model_dump_json(indent=2), "utf-8")
    return folder


def write_run(run_dir: Path, tasks: list[str], snapshot: Path = DEMO, model: str = "fake-model") -> Path:
    from omnidr.attempts import RetryPolicy, RunConfig, SandboxLimits
    from sandbox.models import Budget

    run_dir.mkdir(parents=True, exist_ok=True)
    config = RunConfig(
        snapshot=str(snapshot), tasks=tasks, harness="command", agent_image="omnidr/base:test", command=["python3", "agent.py"],
        model=model, upstreams=[{"family": "openai", "base_url": "http://upstream:9000/v1", "key_env": None}],
        budget=Budget(), limits=SandboxLimits(), retry=RetryPolicy(), proxy_mode="replay",
        gateway_image="omnidr/gateway:test", egress_image="omnidr/egress:test",
    )
    (run_dir / "run.json").write_text(config.model_dump_json(indent=2), "utf-8")
    return run_dir


def read_json(path: Path) -> dict:
    return json.loads(path.read_text("utf-8"))


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text("utf-8"))
    change(data)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), "utf-8")


def run_cli(*args) -> subprocess.CompletedProcess:
    """`omnidr ARGS` in a subprocess, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "omnidr.cli", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
