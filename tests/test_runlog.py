"""The run log (`omnidr.log` in a run root): every omnidr module's records, timestamped in UTC, appended on resume."""

import logging
import re
from datetime import UTC, datetime

import pytest

from omnidr._runlog import run_log
from omnidr.paths import EvalPaths

LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z (\w+) +\S+ (\S+): (.*)$")


def _lines(root):
    return [LINE.match(line).groups() for line in EvalPaths(root).log.read_text("utf-8").splitlines()]


def test_the_run_log_records_each_stage_module_with_utc_times_and_appends_on_resume(tmp_path):
    before = datetime.now(UTC).replace(microsecond=0, tzinfo=None)
    with run_log(tmp_path, "omnidr eval demo") as path:
        logging.getLogger("omnidr.attempts._runner").warning("task-a attempt 1 ended infra_error: engine gone")
        logging.getLogger("omnidr.pipeline._checks").info("stage score s1: ok: mean 42.0")
        logging.getLogger("omnidr.attempts._runner").debug("not recorded: below INFO")
        logging.getLogger("mlflow").warning("not recorded: another package")
    assert path == tmp_path / "omnidr.log"
    lines = _lines(tmp_path)
    assert [(level, name, text) for _, level, name, text in lines] == [
        ("INFO", "omnidr._runlog", "start: omnidr eval demo"),
        ("WARNING", "omnidr.attempts._runner", "task-a attempt 1 ended infra_error: engine gone"),
        ("INFO", "omnidr.pipeline._checks", "stage score s1: ok: mean 42.0"),
        ("INFO", "omnidr._runlog", "done: omnidr eval demo"),
    ]
    stamps = [datetime.fromisoformat(t) for t, *_ in lines]
    assert stamps == sorted(stamps) and before <= stamps[0] <= datetime.now(UTC).replace(tzinfo=None)

    with pytest.raises(KeyboardInterrupt), run_log(tmp_path, "omnidr eval demo"):  # the same command, resumed
        raise KeyboardInterrupt
    logging.getLogger("omnidr.pipeline").warning("after the block: not in the file")
    texts = [text for *_, text in _lines(tmp_path)]
    assert texts[4:] == ["start: omnidr eval demo", "stopped: KeyboardInterrupt: "]
    assert not [h for h in logging.getLogger("omnidr").handlers if isinstance(h, logging.FileHandler)]


def test_a_command_that_refuses_its_input_before_making_the_run_folder_leaves_nothing(tmp_path):
    root = tmp_path / "run"
    with pytest.raises(ValueError), run_log(root, "omnidr run"):
        logging.getLogger("omnidr.attempts._runner").info("checking the options")
        raise ValueError("bad option")
    assert not root.exists()
    with run_log(root, "omnidr run"):  # lines from before the folder was made come first, in order
        logging.getLogger("omnidr.attempts._runner").info("before the folder")
        root.mkdir()
        logging.getLogger("omnidr.attempts._runner").info("after the folder")
    assert [text for *_, text in _lines(root)] == ["start: omnidr run", "before the folder", "after the folder",
                                                    "done: omnidr run"]

