"""Task kinds in the snapshot: a short-answer snapshot loads its questions and protocol; a bad one is named."""

import json
import shutil
from pathlib import Path

import pytest
from testkit import run_cli

from omnidr.benchmark import TaskKind, open_snapshot, sha256_file, validate_snapshot

DEMO_VIDEO = Path(__file__).resolve().parents[2] / "snapshots/demo/tasks/pendant-lamp-safety/video.mp4"


def short_answer_snapshot(root: Path, **task_changes) -> Path:
    (root / "tasks/span").mkdir(parents=True)
    shutil.copy(DEMO_VIDEO, root / "tasks/span/video.mp4")
    (root / "snapshot.json").write_text(json.dumps(
        {"name": "mini", "version": "1", "description": "one question", "task_kind": "short_answer",
         "tasks": ["span"]}))
    (root / "hyperparameters.json").write_text(json.dumps({"research_tool_calls": 50}))
    task = {"id": "span", "question": "How long is the main span?", "answer": "1,280 m",
            "video": {"url": "https://example.org/v", "file": "video.mp4",
                      "sha256": sha256_file(root / "tasks/span/video.mp4"), "duration_s": 30.0},
            "domain": "technology", "modalities": ["text"], "formats": ["html", "pdf"],
            "access_types": ["hypermedia_transitions"], **task_changes}
    (root / "tasks/span/task.json").write_text(json.dumps(task))
    return root


def test_a_short_answer_snapshot_loads_its_question_and_protocol(tmp_path):
    snap = open_snapshot(short_answer_snapshot(tmp_path))
    assert snap.ok and snap.kind is TaskKind.short_answer
    bundle = snap.tasks["span"]
    assert bundle.question is not None and bundle.task is None and bundle.video.file == "video.mp4"
    assert snap.protocol is not None and snap.protocol.research_tool_calls == 50
    budget = snap.protocol.budget()
    assert (budget.max_tool_calls, budget.wall_time_s, budget.attempts_per_task) == (50, 3600.0, 1)
    assert validate_snapshot(tmp_path).errors == []


def test_a_report_snapshot_is_still_the_default_kind():
    snap = open_snapshot(Path(__file__).resolve().parents[2] / "snapshots/demo")
    assert snap.kind is TaskKind.report and snap.protocol is None and snap.hyperparameters is not None


@pytest.mark.parametrize("changes, expected", [
    ({"answer": "1,280 m or 1,300 m"}, "tasks/span/task.json: answer: offers alternatives"),
    ({"domain": "sports"}, "tasks/span/task.json: domain: Input should be"),
    ({"id": "other"}, "tasks/span/task.json: id: 'other' differs from its folder name 'span'"),
])
def test_bad_task_files_exit_2_with_one_line_naming_file_and_field(tmp_path, changes, expected):
    root = short_answer_snapshot(tmp_path / "snap", **changes)
    result = run_cli("eval", root, "--skip-agents")
    assert result.returncode == 2, result.stdout + result.stderr
    assert expected in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_report_fields_in_a_short_answer_snapshot_and_another_kinds_layout_are_refused(tmp_path):
    root = short_answer_snapshot(tmp_path / "a")
    info = json.loads((root / "snapshot.json").read_text())
    (root / "snapshot.json").write_text(json.dumps({**info, "probes_version": "probes-2"}))
    assert "belong to report snapshots" in " ".join(p.line() for p in open_snapshot(root).problems)
    (root / "snapshot.json").write_text(json.dumps({**info, "task_kind": "mcq"}))
    assert "error: videos.json: file is missing" in [p.line() for p in open_snapshot(root).problems]
