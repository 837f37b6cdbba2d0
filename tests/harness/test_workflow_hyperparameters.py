"""The reference workflow's hyperparameters (paper App. D.3) reach the agent from hyperparameters.json."""

from omnidr.attempts import AgentContext
from omnidr.benchmark import Hyperparameters
from omnidr.harness import HARNESSES


def _command(hp: Hyperparameters | None) -> list[str]:
    adapter = HARNESSES["reference"].make("omnidr/reference:any", "full", [], hp)
    ctx = AgentContext("/input/instruction.txt", "/input/video.mp4", "/input/contract", "/output", "/output/report",
                       "http://gateway:8080", "http://proxy:3128", "token-x", "m", "/output/harness-logs")
    return adapter.command(ctx)


def test_window_length_and_repair_rounds_follow_the_hyperparameters():
    released = _command(None)
    assert released[-4:] == ["--window-s", "300", "--max-repairs", "3"]  # T_win 300 s, R_max 3
    changed = _command(Hyperparameters(window_s=120, max_repair_rounds=1))
    assert changed[-4:] == ["--window-s", "120", "--max-repairs", "1"]
