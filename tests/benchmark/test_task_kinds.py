"""Task kinds in the snapshot: a short-answer snapshot loads its questions and protocol; a bad one is named."""

import json
import shutil
from pathlib import Path

import pytest
from testkit import run_cli, said

from omnidr.benchmark import TaskFormat as TaskKind
from omnidr.benchmark import open_snapshot, sha256_file, validate_snapshot

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
    result = run_cli("eval", "--snapshot", root, "--skip-agents")
    assert result.returncode == 2, result.stdout + result.stderr
    assert expected in result.stderr and len(said(result.stderr)) == 1


def test_report_fields_in_a_short_answer_snapshot_and_another_kinds_layout_are_refused(tmp_path):
    root = short_answer_snapshot(tmp_path / "a")
    info = json.loads((root / "snapshot.json").read_text())
    (root / "snapshot.json").write_text(json.dumps({**info, "probes_version": "probes-2"}))
    assert "belong to report snapshots" in " ".join(p.line() for p in open_snapshot(root).problems)
    (root / "snapshot.json").write_text(json.dumps({**info, "task_kind": "mcq"}))
    assert "error: videos.json: file is missing" in [p.line() for p in open_snapshot(root).problems]


ODYSSEY = Path(__file__).resolve().parents[2] / "snapshots/demo-odyssey"


def odyssey_copy(root: Path, task_id: str = "harbour-ferry", **task_changes) -> Path:
    """A copy of the VideoOdyssey demo with one question changed."""
    shutil.copytree(ODYSSEY, root, ignore=shutil.ignore_patterns("MANIFEST.json"))
    task_file = root / "tasks" / task_id / "task.json"
    task_file.write_text(json.dumps({**json.loads(task_file.read_text()), **task_changes}))
    return root


@pytest.mark.parametrize("changes, expected", [
    ({"options": ["every 20 minutes", "every 30 minutes", "every 40 minutes"]},
     "tasks/harbour-ferry/task.json: options: List should have at least 4 items"),
    ({"answer": "E"}, "tasks/harbour-ferry/task.json: answer: Input should be 'A', 'B', 'C' or 'D'"),
    ({"ccl": {"start_s": 63, "end_s": 250}},
     "tasks/harbour-ferry/task.json: ccl.end_s: 250 s is past the end of video 'harbour-walk' (240 s)"),
    ({"video": "river-trip"}, "tasks/harbour-ferry/task.json: video: unknown video 'river-trip': not in videos.json"),
])
def test_bad_question_files_exit_2_with_one_line_naming_file_and_field(tmp_path, changes, expected):
    root = odyssey_copy(tmp_path / "snap", **changes)
    result = run_cli("eval", "--snapshot", root, "--skip-agents")
    assert result.returncode == 2, result.stdout + result.stderr
    assert expected in result.stderr and len(said(result.stderr)) == 1, result.stderr


def test_an_mcq_snapshot_refuses_a_question_asked_twice_and_checks_its_media(tmp_path):
    question = json.loads((ODYSSEY / "tasks/harbour-lighthouse/task.json").read_text())["question"]
    root = odyssey_copy(tmp_path / "snap", question=question.upper())
    (root / "videos/workshop-day.srt").write_text("1\n00:00:01,000 --> 00:00:02,000\nedited\n")
    (root / "videos/harbour-walk.mp4").unlink()
    lines = [p.line() for p in validate_snapshot(root).errors]
    assert ("error: tasks/harbour-lighthouse/task.json: question: the same question on video 'harbour-walk' as "
            "task 'harbour-ferry'") in lines
    assert any(line.startswith("error: videos.json: videos[0].file: video videos/harbour-walk.mp4 is missing")
               for line in lines)
    assert any(line.startswith("error: videos.json: videos[1].subtitles.sha256: checksum mismatch") for line in lines)
    assert len(lines) == 3, lines


def test_the_odyssey_demo_validates_and_freezes(tmp_path):
    result = run_cli("snapshot", "validate", ODYSSEY)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "23 question(s) on 2 video(s): 0 error(s), 0 warning(s)" in result.stdout
    root = odyssey_copy(tmp_path / "snap")
    frozen = run_cli("snapshot", "freeze", root)
    assert frozen.returncode == 0, frozen.stdout + frozen.stderr
    files = json.loads((root / "MANIFEST.json").read_text())["files"]
    assert "videos/workshop-day.mp4" in files and "tasks/harbour-ferry/task.json" in files
    assert run_cli("snapshot", "verify", ODYSSEY).returncode == 0
