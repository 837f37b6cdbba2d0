"""The live progress table of `omnidr eval` when the output is a file or a pipe (CI logs, `| tee`)."""

import io

from rich.console import Console

from omnidr.pipeline._progress import EvalProgress


def test_the_next_line_after_the_progress_table_starts_on_its_own_line():
    buffer = io.StringIO()
    console = Console(file=buffer, width=200, highlight=False)
    assert not console.is_terminal
    with EvalProgress(console) as progress:
        progress.system("reference-full-scripted", 3)
        progress.note("aggregating the run root's leaderboard")
    console.print("omnidr eval results")
    lines = buffer.getvalue().splitlines()
    assert "omnidr eval results" in lines  # not glued to the table's bottom border
    bottom = next(i for i, line in enumerate(lines) if line.startswith("└"))
    assert lines[bottom].rstrip().endswith("┘") and lines.index("omnidr eval results") > bottom
    top = max(i for i, line in enumerate(lines[:bottom]) if line.startswith("┏"))
    assert lines[top - 1].strip() == "omnidr eval"  # the final title drops the last stage's now stale name
