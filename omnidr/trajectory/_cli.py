"""`omnidr audit RUN_DIR [--task ID]`: process statistics and an HTML audit page per attempt.

A standalone Click command; the main `omnidr` group registers it. Bad input raises `UserError`
(one line naming the file and line; exit code 2 through `omnidr.cli.main`).
"""

from pathlib import Path

import click
from rich.table import Table

from omnidr._console import make_console, print_tables
from omnidr._options import format_option

from ._audit import AttemptAudit, audit_run
from ._stats import summarize


def _fmt(value, digits: int = 1) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):  # with thousands separators, as the integers of the same column
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def audit_tables(audits: list[AttemptAudit]) -> list[Table]:
    """The two tables `omnidr audit` prints: process (Table 23) and phase order (Table 24)."""
    process = Table(title="Process statistics")
    for col in ("task", "#", "ended", "steps", "tool calls", "tool errors", "time (s)", "tokens", "token source",
                "runner tokens", "loops"):
        process.add_column(col, justify="left" if col in ("task", "ended", "token source") else "right")
    order = Table(title="Phase order")
    for col in ("task", "#", "video", "search", "read", "write", "verify", "other", "first write %",
                "last search %", "search after write %", "write blocks", "interleaved"):
        order.add_column(col, justify="left" if col == "task" else "right")
    for a in audits:
        s = a.stats
        # the main trajectory's counts (App. F.7); a subagent's own steps and calls follow as "+N sub"
        extra = s.steps_with_subagents - s.steps
        process.add_row(a.task_id, str(a.attempt), a.reason or "–",
                        _fmt(s.steps) + (f" (+{extra} sub)" if extra > 0 else ""),
                        _fmt(s.tool_calls) + (f" (+{s.tool_calls_with_subagents - s.tool_calls} sub)" if extra > 0 else ""),
                        _fmt(s.tool_errors), _fmt(s.wall_time_s, 0), _fmt(s.total_tokens), s.token_source or "–",
                        _fmt(s.harness_total_tokens), _fmt(len(s.failure_loops)))
        order.add_row(a.task_id, str(a.attempt), *(str(s.phase_counts[p]) for p in
                                                    ("video", "search", "read", "write", "verify", "other")),
                      _fmt(s.first_write_pct), _fmt(s.last_search_pct), _fmt(s.searches_after_write_pct),
                      _fmt(s.write_blocks), _fmt(s.interleaved))
    last = {a.task_id: a for a in sorted(audits, key=lambda a: a.attempt)}  # each task's last attempt
    if len(last) > 1:  # the paper's medians: over the configuration's tasks, one trace per task (App. F.7)
        m = summarize([a.stats for a in last.values()])
        md = m.medians
        # a median of counts prints as the counts do when it is whole (an odd number of tasks), else with one decimal
        count = lambda x: _fmt(x, 0 if x is None or float(x).is_integer() else 1)  # noqa: E731
        process.add_row(f"median of {len(last)} tasks", "", "", count(md["steps"]), count(md["tool_calls"]), count(md["tool_errors"]),
                        _fmt(md["wall_time_s"], 0), _fmt(md["total_tokens"], 0), "", _fmt(md["harness_total_tokens"], 0),
                        "", style="bold")
        order.add_row(f"median of {len(last)} tasks", "", "", "", "", "", "", "", _fmt(md["first_write_pct"]), _fmt(md["last_search_pct"]),
                      _fmt(md["searches_after_write_pct"]), count(md["write_blocks"]), _fmt(m.interleaved), style="bold")
    return [process, order]


SHORT_PROCESS = {"tool calls": "calls", "tool errors": "err", "time (s)": "s", "token source": "source",
                 "runner tokens": "runner"}
"""Short labels of the process table's headers, for a narrow terminal (printed with a legend)."""


@click.command("audit", short_help="Process statistics and audit pages of a run folder.")
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--task", "task", default=None, help="Audit only this task's attempts.")
@format_option("the tables", "with markdown and json, the notes under them go to stderr")
def audit(run_dir: Path, task: str | None, fmt: str) -> None:
    """Trajectory statistics of a run folder, and an audit page (audit.html) per attempt; names every file it
    writes or replaces in an attempt folder (trajectory.json, audit.html), and leaves unchanged ones alone."""
    audits = audit_run(run_dir, task)
    print_tables(make_console(), audit_tables(audits), fmt, short={0: SHORT_PROCESS})
    console = make_console(stderr=fmt != "terminal")
    for a in audits:
        console.print(f"{a.task_id} #{a.attempt}: steps from {a.origin}; page {a.page_path}", soft_wrap=True,
                      highlight=False, markup=False)
        for change in a.changes:
            console.print(f"  {change}", soft_wrap=True, highlight=False, markup=False)
        if a.ended_with_error:
            console.print(f"  the run ended on an error (a failed run, whatever the harness called it): "
                          f"{a.ended_with_error}", soft_wrap=True, highlight=False, markup=False)
        for warning in a.warnings[:5]:
            console.print(f"  warning: {warning}", soft_wrap=True, highlight=False, markup=False)
