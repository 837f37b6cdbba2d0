"""`read_run(folder)`: one reader for an eval run root, a system folder and an attempt folder, each told apart by
what it holds and read with its records' own models; any other folder is one clear error."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "evaluation"))
from answer_helpers import write_answer_attempt, write_answer_run  # noqa: E402
from mcq_helpers import QUESTIONS, write_mcq_snapshot  # noqa: E402

from omnidr._runread import AttemptRun, RootRun, SystemRun, read_run  # noqa: E402
from omnidr.errors import UserError  # noqa: E402


def _root(tmp_path) -> Path:
    """An eval run root with one multiple-choice system, scored by the option checker, whose second attempt at
    one task is still running (a numbered folder without attempt.json)."""
    from omnidr.evaluation import ScoreRequest, score_run
    from omnidr.pipeline._results import EvalConfig
    from omnidr.pipeline._specs import SystemSpec, parse_judge, parse_model
    from sandbox.models import Budget

    snapshot = write_mcq_snapshot(tmp_path / "snapshot")
    root = tmp_path / "runs" / "mcq-test"
    run = write_answer_run(root / "direct-video-64f-full-scripted", snapshot, list(QUESTIONS))
    for task_id in QUESTIONS:
        write_answer_attempt(run, task_id, 1, "success",
                             answer=dict(answer="B", termination="complete_answer", source="research"))
    config = EvalConfig(system=SystemSpec(harness="reference", capability="video-64f-full",
                                          model=parse_model("scripted")),
                        judge=parse_judge(""), budget_label="default", budget=Budget(), tasks=list(QUESTIONS),
                        snapshot_id="mcq-test")
    (run / "eval.json").write_text(config.model_dump_json(indent=2), "utf-8")
    score_run(ScoreRequest(run_dir=run))
    (run / "attempts" / "q-count" / "2" / "logs").mkdir(parents=True)  # a running attempt
    return root


def test_a_run_root_a_system_folder_and_an_attempt_folder_are_told_apart_and_read_whole(tmp_path):
    root = _root(tmp_path)
    name = "direct-video-64f-full-scripted"

    whole = read_run(root)
    assert isinstance(whole, RootRun) and list(whole.systems) == [name]

    system = read_run(root / name)
    assert isinstance(system, SystemRun) and system.name == name
    assert whole.systems[name] == system
    assert system.config is not None and system.config.tasks == list(QUESTIONS)
    assert system.eval_config is not None and system.eval_config.snapshot_id == "mcq-test"
    assert sorted(system.attempts) == sorted(QUESTIONS)
    assert list(system.attempts["q-count"]) == [1, 2]
    assert system.attempts["q-count"][1].record is not None and system.attempts["q-count"][2].record is None
    assert system.evaluation is not None and system.evaluation.task_kind.value == "mcq"
    assert sorted(t.task_id for t in system.evaluation.tasks) == sorted(QUESTIONS)

    attempt = read_run(root / name / "attempts" / "q-count" / "1")
    assert isinstance(attempt, AttemptRun) and (attempt.task_id, attempt.number) == ("q-count", 1)
    assert attempt.record is not None and attempt.record.reason.value == "success"
    running = read_run(root / name / "attempts" / "q-count" / "2")
    assert isinstance(running, AttemptRun) and (running.task_id, running.number, running.record) == ("q-count", 2, None)


def test_a_folder_that_is_none_of_them_is_one_clear_error(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("not a run")
    with pytest.raises(UserError) as err:
        read_run(tmp_path / "notes")
    assert str(err.value) == (f"{tmp_path / 'notes'}: not a run folder (no attempt.json, run.json, eval.json, attempts/ "
                              "or system folder inside); pass an eval run root, a system folder or an attempt folder")
    with pytest.raises(UserError, match="no such folder; pass an eval run root, a system folder or an attempt folder"):
        read_run(tmp_path / "missing")


def test_a_record_its_model_refuses_is_one_line_naming_the_file(tmp_path):
    attempt = tmp_path / "run" / "attempts" / "t1" / "1"
    attempt.mkdir(parents=True)
    (attempt / "attempt.json").write_text('{"schema_version": "omnidr.attempt/2"}')
    with pytest.raises(UserError) as err:
        read_run(attempt)
    [line] = str(err.value).splitlines()
    assert line.startswith(f"{attempt / 'attempt.json'}: not a valid attempt record")
    assert "this omnidr reads omnidr.attempt/1" in line
