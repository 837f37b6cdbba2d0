"""Terminal tables that fit: no id or number is ever broken or cut; too narrow a window gets one block per row."""

import io
import json
import re

import pytest
from click.testing import CliRunner
from rich.console import Console
from rich.table import Table

from omnidr._console import fit_table, print_tables

IDS = ("pendant-lamp-safety", "nd-filter-waterfall", "sky-blue-rayleigh")


def process_table() -> Table:
    t = Table(title="Process statistics")
    for col in ("task", "#", "ended", "steps", "tool calls", "tool errors", "time (s)", "tokens", "token source",
                "runner tokens", "loops"):
        t.add_column(col, justify="left" if col in ("task", "ended", "token source") else "right")
    for i, task in enumerate(IDS):
        t.add_row(task, "1", "success", str(20 + i), "11", "0", "41", f"{80_916 + i:,}", "gateway", "–", "0")
    t.add_row("median of 3 tasks", "", "", "21", "11", "0", "41", "80,917", "", "–", "", style="bold")
    t.add_row("a-task-with-prose", "2", "agent_error", "3", "1", "1", "4", "1,024", "gateway", "–", "0")
    return t


def render(table: Table, width: int, prose=frozenset()) -> str:
    buf = io.StringIO()
    Console(width=width, file=buf, color_system=None).print(fit_table(table, width, prose))
    return buf.getvalue()


def assert_whole(text: str, words: tuple[str, ...]) -> None:
    """Every id and number of the table appears whole on one line, and no line ends inside one."""
    for w in words:
        assert w in text, f"{w!r} is not whole in:\n{text}"
    assert "…" not in text
    assert not re.search(r"[\d,.]\n\s*[│┃]?\s*[\d,.]", text)


@pytest.mark.parametrize("width", [40, 60, 80, 90, 104, 120, 200])
def test_a_table_keeps_every_id_and_number_whole_at_any_width(width):
    text = render(process_table(), width)
    assert max(len(line.rstrip()) for line in text.splitlines()) <= width
    assert_whole(text, (*IDS, "80,916", "80,917", "80,918", "1,024", "agent_error", "median of 3 tasks"))


def test_a_wide_window_gets_the_grid_and_a_narrow_one_a_block_per_row():
    wide = render(process_table(), 200)
    assert "┃ task                ┃ # ┃" in wide and "│ pendant-lamp-safety │ 1 │" in wide
    narrow = render(process_table(), 60)
    assert "task: pendant-lamp-safety" in narrow and re.search(r"\n  tokens +80,916", narrow)
    assert "task: median of 3 tasks" in narrow and "token source" in narrow


def test_prose_wraps_at_spaces_and_its_words_stay_whole():
    t = Table(title="images")
    for col in ("image", "tag", "description"):
        t.add_column(col)
    t.add_row("reference", "omnidr/reference:938799c956c4f029",
              "Runtime of the reference agent and of the research skills every agent image carries: Python, ffmpeg")
    text = render(t, 80, frozenset({2}))
    assert "│ reference │ omnidr/reference:938799c956c4f029 │" in text  # the grid, the description wrapped
    assert all(w in text for w in ("Runtime", "research", "carries:", "Python,"))
    text = render(t, 50, frozenset({2}))
    assert "image: reference" in text and "omnidr/reference:938799c956c4f029" in text


def test_markdown_and_json_hold_the_same_cells():
    from omnidr.cli import cli

    r = CliRunner().invoke(cli, ["harnesses", "--format", "json"])
    assert r.exit_code == 0, r.output
    [table] = json.loads(r.output)
    assert table["title"] == "harnesses" and [row["harness"] for row in table["rows"]][:2] == ["reference", "claude-code"]
    md = CliRunner().invoke(cli, ["harnesses", "--format", "markdown"]).output
    assert md.startswith("**harnesses**") and "| harness | API | image |" in md and "| reference | openai-chat |" in md
    buf = io.StringIO()
    print_tables(Console(file=buf, width=80), [process_table()], "terminal")
    assert "task: pendant-lamp-safety" in buf.getvalue()
