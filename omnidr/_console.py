"""The consoles every command prints through.

In a terminal, rich fits tables to the window. Piped or redirected (CI logs, `| less`, a file), there
is no window: rich would squeeze every table to 80 columns and break words and paths over lines
("penda/nt-la/mp-sa/fety"), so the width is then unbounded and each row stays one line. COLUMNS, when
set, wins in both cases.
"""

import os
import sys

from rich.console import Console

UNBOUNDED = 100_000


def _width(stream) -> int | None:
    if os.environ.get("COLUMNS") or stream.isatty():
        return None  # rich reads COLUMNS or the terminal itself
    return UNBOUNDED


def make_console(stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, highlight=False, width=_width(stream))
