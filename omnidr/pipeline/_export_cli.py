"""`omnidr export videoodyssey RUN_ROOT --system LABEL OUT.json`: results in another benchmark's own format."""

from pathlib import Path

import click

from omnidr._console import make_console

out = make_console()


@click.group("export", short_help="Write results in a benchmark's own format.")
def export() -> None:
    """Write a scored system's results in a benchmark's own result format (`omnidr export videoodyssey ...`)."""


@export.command("videoodyssey", short_help="Write a VideoOdyssey result file.")
@click.argument("run_root", type=click.Path(path_type=Path, file_okay=False))
@click.argument("out_file", metavar="OUT.json", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--system", required=True, help="The system: its folder name in RUN_ROOT or its leaderboard label.")
@click.option("--snapshot", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="The imported snapshot the run used (default: the one its scoring recorded).")
def export_videoodyssey_cmd(run_root: Path, out_file: Path, system: str, snapshot: Path | None) -> None:
    """Write SYSTEM's answers on a snapshot made by `omnidr snapshot import-videoodyssey` as the release's result
    file (the annotation with `predicted_answer` per question), which the authors' `scripts/test_acc.py` reads
    unchanged, and print the official accuracy (predictions that are not A-D skipped, as that scorer does)."""
    from ._videoodyssey import export_videoodyssey

    done = export_videoodyssey(run_root, system, out_file, snapshot)
    acc = done.accuracy
    overall = f"{acc.overall.accuracy:.2f}%" if acc.overall.accuracy is not None else "-"
    out.print(f"wrote {done.path}: {done.asked} of {done.questions} question(s) answered by the run "
              f"({done.no_reply} without a reply: {'API_Error'}; {done.unread} without a readable letter: Error)",
              soft_wrap=True, highlight=False)
    out.print(f"official accuracy {overall} ({acc.overall.correct}/{acc.overall.total}), invalid_prediction "
              f"{acc.invalid}", soft_wrap=True, highlight=False)
