"""The reference workflow's hyperparameters (paper App. D.3) reach the agent from hyperparameters.json."""

from omnidr.attempts import AgentContext
from omnidr.benchmark import Hyperparameters
from omnidr.harness import HARNESSES


def _command(hp: Hyperparameters | None) -> list[str]:
    adapter = HARNESSES["reference"].make("omnidr/reference:any", "full", [], hp)
    ctx = AgentContext("/input/instruction.txt", "/input/video.mp4", "/input/contract", "/output", "/output/report",
                       "http://gateway:8080", "http://proxy:3128", "token-x", "m", "/output/harness-logs")
    return adapter.command(ctx)


def test_window_length_repair_rounds_and_budgets_follow_the_hyperparameters():
    released = _command(None)
    # T_win 300 s, R_max 3, B_web 25, B_video 5, B_doc 3, B_anchor 3
    assert released[-6:] == ["--window-s", "300", "--max-repairs", "3", "--budgets", "web=25,video=5,document=3,anchor=3"]
    changed = _command(Hyperparameters(window_s=120, max_repair_rounds=1,
                                       budgets={"web_sources": 4, "related_videos": 0, "documents": 1, "records_per_anchor": 2}))
    assert changed[-6:] == ["--window-s", "120", "--max-repairs", "1", "--budgets", "web=4,video=0,document=1,anchor=2"]
