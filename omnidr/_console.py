"""The consoles every command prints through.

In a terminal, rich fits tables to the window. Piped or redirected (CI logs, `| less`, a file), there
is no window: rich would squeeze every table to 80 columns and break words and paths over lines
("penda/nt-la/mp-sa/fety"), so the width is then unbounded and each row stays one line. COLUMNS, when
set, wins in both cases.
"""

import os
import sys
from collections.abc import Callable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.table import Table

UNBOUNDED = 100_000


def _width(stream) -> int | None:
    if os.environ.get("COLUMNS") or stream.isatty():
        return None  # rich reads COLUMNS or the terminal itself
    return UNBOUNDED


def make_console(stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, highlight=False, width=_width(stream))


# --- tables that fit ---------------------------------------------------------------------------------------------
#
# A cell is whole or absent: an id, a number, a path never breaks inside (rich, squeezed, cuts them to "nd-f…" or
# folds "100./0"). A table is printed as a grid when every column gets at least its widest unbreakable cell (and
# prose columns their longest word); otherwise each row becomes a block of "header: value" lines.


def _plain(cell: object) -> str:
    from rich.text import Text

    if isinstance(cell, Text):
        return cell.plain
    return Text.from_markup(str(cell)).plain if isinstance(cell, str) else str(cell)


def _widest_word(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(w) for line in text.splitlines() for w in line.split()), default=0)


def _widest_line(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(line) for line in text.splitlines()), default=0)


def table_cells(table: Table) -> tuple[list[str], list[list[str]]]:
    """A rich table's headers and rows as plain text (markup removed)."""
    headers = [_plain(c.header) for c in table.columns]
    columns = [[_plain(cell) for cell in c.cells] for c in table.columns]
    return headers, [list(row) for row in zip(*columns, strict=True)] if columns else []


def grid_width(table: Table, prose: frozenset[int] = frozenset()) -> tuple[list[int], list[int]]:
    """Each column's narrowest and natural width (content only): a cell of a `prose` column may wrap at spaces,
    any other cell stays on one line; a header may wrap at spaces."""
    headers, rows = table_cells(table)
    narrow, natural = [], []
    for i, header in enumerate(headers):
        cells = [row[i] for row in rows]
        cell_min = max(((_widest_word if i in prose else _widest_line)(c) for c in cells), default=0)
        narrow.append(max(_widest_word(header), cell_min, 1))
        natural.append(max(_widest_line(header), max((_widest_line(c) for c in cells), default=0), 1))
    return narrow, natural


def _frame(table: Table) -> int:
    """Columns of a table's rules and padding (rich's default box and padding; see `_compact`)."""
    n = len(table.columns)
    pad = table.padding[1] + table.padding[3] if table.pad_edge or n > 1 else 0
    rules = (n - 1 + (2 if table.show_edge else 0)) if table.box else 0
    return n * pad + rules


def _compact(table: Table) -> None:
    """Drop the outer frame and the vertical rules' padding: columns separated by one space, a rule under the header."""
    from rich import box

    table.box, table.show_edge, table.padding, table.pad_edge = box.SIMPLE_HEAD, False, (0, 0, 0, 0), False


def _laid_out(table: Table, width: int, prose: frozenset[int]) -> bool:
    """Lay `table` out in `width` columns (see `fit_table`), or say that it cannot be."""
    narrow, natural = grid_width(table, prose)
    frame, compact = _frame(table), len(table.columns) - 1
    if sum(natural) <= width - frame:
        return True
    if sum(natural) <= width - compact:
        _compact(table)
        return True
    if sum(narrow) > width - frame:
        if sum(narrow) > width - compact:
            return False
        _compact(table)
    extra = width - _frame(table) - sum(narrow)
    widths = list(narrow)
    # whole headers first for the columns that need the fewest extra columns to get them; prose takes what is left
    for i in sorted(range(len(widths)), key=lambda i: natural[i] - narrow[i]):
        give = min(natural[i] - narrow[i], extra) if i in prose or natural[i] - narrow[i] <= extra else 0
        widths[i] += give
        extra -= give
    for column, w in zip(table.columns, widths, strict=True):
        column.width, column.min_width, column.no_wrap, column.overflow = w, w, False, "fold"
    return True


def fit_table(table: Table, width: int, prose: frozenset[int] = frozenset(),
              short: dict[str, str] | None = None) -> RenderableType:
    """`table` laid out in `width` columns with no cell broken inside (see above). The first layout that fits: rich's
    frame with every header on one line, the same without the frame's rules and padding, either of the two with
    headers wrapped at spaces (and prose cells at spaces); then the same with the `short` labels of some headers and
    a legend line under the table; else the rows as blocks (with the full headers)."""
    if not table.columns:
        return table
    full = [c.header for c in table.columns]
    if _laid_out(table, width, prose):
        return table
    used: dict[str, str] = {}
    for header, label in (short or {}).items():  # one short label more at a time, in the order given
        shortened = next((c for c in table.columns if c.header == header), None)
        if shortened is None:
            continue
        shortened.header, used[header] = label, label
        if _laid_out(table, width, prose):
            from rich.console import Group
            from rich.text import Text

            return Group(table, Text("; ".join(f"{s}: {h}" for h, s in used.items()), overflow="fold"))
    for restored, original in zip(table.columns, full, strict=True):
        restored.header = original
    return vertical(table)


class Fitted:
    """A table that fits itself to the width it is printed at (`fit_table`), built anew for each printing."""

    def __init__(self, make: Callable[[], Table], prose: frozenset[int] = frozenset(),
                 short: dict[str, str] | None = None):
        self.make, self.prose, self.short = make, prose, short

    def __rich_console__(self, console: Console, options: ConsoleOptions):
        yield fit_table(self.make(), options.max_width, self.prose, self.short)


def vertical(table: Table) -> RenderableType:
    """The table's rows as blocks: the first cell as the block's heading, then one `header  value` line per other
    cell (empty cells left out; a long value wraps under itself); the title on top."""
    from rich.console import Group
    from rich.padding import Padding
    from rich.text import Text

    headers, rows = table_cells(table)
    parts: list[RenderableType] = []
    if table.title:
        parts.append(Text(_plain(table.title), style="bold"))
    for row in rows:
        parts.append(Text(f"{headers[0]}: {row[0]}" if row[0] else headers[0], style="bold"))
        block = Table.grid(padding=(0, 2))
        block.add_column(no_wrap=True)
        block.add_column(overflow="fold")
        for h, v in zip(headers[1:], row[1:], strict=True):
            if v.strip():
                block.add_row(h, v)
        parts.append(Padding(block, (0, 0, 0, 2), expand=False))
    return Group(*parts)


def markdown_table(table: Table) -> str:
    """The table as a Markdown table under its title in bold (markup removed)."""
    headers, rows = table_cells(table)
    right = {i for i, c in enumerate(table.columns) if c.justify == "right"}
    lines = [f"**{_plain(table.title)}**", ""] if table.title else []
    lines += ["| " + " | ".join(headers) + " |",
              "| " + " | ".join("---:" if i in right else ":---" for i in range(len(headers))) + " |"]
    lines += ["| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def table_records(table: Table) -> dict:
    """The table as JSON-ready data: its title and one object per row, keyed by header."""
    headers, rows = table_cells(table)
    return {"title": _plain(table.title) if table.title else "", "rows": [dict(zip(headers, r, strict=True)) for r in rows]}


def print_tables(console: Console, tables: list[Table], fmt: str = "terminal",
                 prose: dict[int, frozenset[int]] | None = None, short: dict[int, dict[str, str]] | None = None) -> None:
    """Print tables in a format of TABLE_FORMATS: fitted to the console (terminal), Markdown, or one JSON document
    (a list of tables). `prose` maps a table's position to its columns that may wrap at spaces, `short` to the short
    labels of its headers for a narrow terminal."""
    import json

    import click

    if fmt == "json":
        click.echo(json.dumps([table_records(t) for t in tables], indent=2, ensure_ascii=False))
        return
    if fmt == "markdown":
        click.echo("\n\n".join(markdown_table(t) for t in tables))
        return
    for i, t in enumerate(tables):
        console.print(fit_table(t, console.width, (prose or {}).get(i, frozenset()), (short or {}).get(i)))
