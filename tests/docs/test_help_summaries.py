"""`omnidr --help` (and each group's) lists its commands with whole sentences: Click cuts a docstring's summary at
its first full stop or at the width, which printed "Behavioural calibration of SNAPSHOT (paper App." (issue 38)."""

import click
import pytest
from doc_pages import TREE
from testkit import run_cli

GROUPS = [path for path, command in TREE.items() if isinstance(command, click.Group)]


def summaries(help_text: str) -> dict[str, str]:
    """The Commands section of a help page: command -> its summary, wrapped lines joined."""
    listed: dict[str, str] = {}
    name = None
    for line in help_text.split("Commands:", 1)[1].splitlines():
        if line.startswith("  ") and not line.startswith("   ") and line.strip():
            name, _, text = line.strip().partition(" ")
            listed[name] = text.strip()
        elif line.strip() and name:
            listed[name] += " " + line.strip()
    return listed


def whole_sentence(text: str) -> bool:
    return (text.endswith(".") and not text.endswith("..") and text[:1].isupper()
            and text.count("(") == text.count(")") and text.count("`") % 2 == 0)


@pytest.mark.parametrize("columns", ["80", "200"])
@pytest.mark.parametrize("group", GROUPS, ids=lambda p: " ".join(p))
def test_every_summary_in_a_help_page_is_a_whole_sentence(group, columns) -> None:
    done = run_cli(*group[1:], "--help", env={"COLUMNS": columns})
    assert done.returncode == 0, done.stderr
    listed = summaries(done.stdout)
    ctx = click.Context(TREE[group])
    assert set(listed) == set(TREE[group].list_commands(ctx))
    cut = {name: text for name, text in listed.items() if not whole_sentence(text)}
    assert not cut, f"`{' '.join(group)} --help` at COLUMNS={columns} cuts these summaries: {cut}"


def test_the_check_tells_a_cut_summary() -> None:
    assert not whole_sentence("Behavioural calibration of SNAPSHOT (paper App.")
    assert not whole_sentence("Score one report from its rubric tree and its saved atom...")
    assert whole_sentence("Check a snapshot's behavioural calibration.")
