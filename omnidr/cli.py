"""`omnidr` command line. Thin: each command parses options, calls one stage function, renders."""

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from omnidr.errors import UserError

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

SNAPSHOT_ARG = click.argument("path", type=click.Path(path_type=Path))


@click.group()
@click.version_option(package_name="omnidr")
def cli() -> None:
    """OmniDR sandbox: evaluate video-centered deep-research agents."""


@cli.group()
def snapshot() -> None:
    """Validate, freeze, verify and complete benchmark snapshots."""


def _print_problems(problems) -> None:
    for p in problems:
        style = "red" if p.severity == "error" else "yellow"
        out.print(f"[{style}]{p.line()}[/{style}]", soft_wrap=True)


@snapshot.command("validate")
@SNAPSHOT_ARG
@click.option("--no-videos", is_flag=True, help="Skip the presence and checksum checks of source videos.")
def snapshot_validate(path: Path, no_videos: bool) -> None:
    """Static checks of a snapshot (schema, identifiers, directions, gates, evidence binding, ...).

    Exits 1 when there is an error; warnings are printed and need a review decision.
    """
    from omnidr.benchmark import validate_snapshot

    report = validate_snapshot(path, check_videos=not no_videos)
    _print_problems(report.problems)
    snap = report.snapshot
    atoms = sum(len(b.rubric.atoms) for b in snap.tasks.values() if b.rubric)
    summary = f"{path}: {len(snap.tasks)} task(s), {atoms} atom(s): {len(report.errors)} error(s), {len(report.warnings)} warning(s)"
    if report.errors:
        out.print(f"[red]{summary}[/red]")
        sys.exit(1)
    out.print(f"[green]{summary}[/green]")


@snapshot.command("freeze")
@SNAPSHOT_ARG
def snapshot_freeze(path: Path) -> None:
    """Validate, then write MANIFEST.json (sha256 of every file) and print the snapshot id."""
    from omnidr.benchmark import freeze_snapshot

    manifest, report = freeze_snapshot(path)
    if manifest is None:
        _print_problems(report.errors)
        out.print(f"[red]{path}: not frozen: {len(report.errors)} validation error(s)[/red]")
        sys.exit(1)
    out.print(f"{path}: froze {len(manifest.files)} files as [bold]{manifest.snapshot_id}[/bold] ({path / 'MANIFEST.json'})")


@snapshot.command("verify")
@SNAPSHOT_ARG
def snapshot_verify(path: Path) -> None:
    """Check every file against MANIFEST.json; names each changed, missing or extra file."""
    from omnidr.benchmark import verify_snapshot

    manifest, diff = verify_snapshot(path)
    for label, files in (("changed", diff.changed), ("missing", diff.missing), ("extra", diff.extra)):
        for f in files:
            out.print(f"[red]{label}: {f}[/red]")
    if not diff.clean:
        n = len(diff.changed) + len(diff.missing) + len(diff.extra)
        out.print(f"[red]{path}: does not match {manifest.snapshot_id}: {n} file(s) differ[/red]")
        sys.exit(1)
    out.print(f"[green]{path}: all {len(manifest.files)} files match {manifest.snapshot_id}[/green]")


@snapshot.command("schema")
@SNAPSHOT_ARG
def snapshot_schema(path: Path) -> None:
    """Write the contract's data.schema.json from the ReportData model."""
    from omnidr.benchmark import data_schema, open_snapshot

    snap = open_snapshot(path)
    if snap.contract_file is None:
        raise UserError(f"{path}: no task names a report contract; fix task.json's 'contract' field")
    target = (snap.root / snap.contract_file).parent / "data.schema.json"
    target.write_text(json.dumps(data_schema(), indent=2, ensure_ascii=False) + "\n", "utf-8")
    out.print(f"wrote {target}")


@snapshot.command("fetch-videos")
@SNAPSHOT_ARG
@click.option("--task", "tasks", multiple=True, help="Only this task id (repeatable).")
@click.option("--force", is_flag=True, help="Download even when a file with the right checksum is present.")
def snapshot_fetch_videos(path: Path, tasks: tuple[str, ...], force: bool) -> None:
    """Download each task's source video with yt-dlp, verify its sha256 and probe it with ffprobe.

    A failing task is reported and the others go on; exits 1 if any task failed.
    """
    from omnidr.media import FetchStatus, fetch_snapshot_videos

    def show(r) -> None:
        if r.status is FetchStatus.failed:
            out.print(f"[red]failed[/red]     {r.task_id}: {r.reason}", soft_wrap=True)
            return
        p = r.probe
        facts = f"{p.duration_s:.1f} s, {p.width}x{p.height}, {p.fps:g} fps, audio {'yes (' + p.audio_codec + ')' if p.has_audio else 'no'}"
        out.print(f"[green]{r.status.value:<10}[/green] {r.task_id}: {facts}", soft_wrap=True)
        if r.reason:
            out.print(f"[yellow]warning[/yellow]    {r.task_id}: {r.reason}", soft_wrap=True)

    with out.status("fetching source videos"):
        results = fetch_snapshot_videos(path, list(tasks) or None, force=force, on_result=show)
    failed = sum(r.status is FetchStatus.failed for r in results)
    out.print(f"{len(results) - failed} of {len(results)} video(s) ready")
    if failed:
        sys.exit(1)


@cli.command("eval")
@click.argument("path", type=click.Path(path_type=Path), default=Path("snapshots/demo"))
def eval_(path: Path) -> None:
    """Run the evaluation pipeline on a snapshot (default: the bundled demo), offline.

    Runs every stage that exists in this version and says which stages are not built yet.
    """
    from omnidr.pipeline import run_eval

    result = run_eval(path, progress=lambda msg: out.print(f"  {msg}", soft_wrap=True))
    table = Table(title=f"omnidr eval {path}")
    table.add_column("stage")
    table.add_column("status")
    table.add_column("detail", overflow="fold")
    colors = {"ok": "green", "failed": "red", "not built": "yellow"}
    for stage in result.stages:
        table.add_row(stage.name, f"[{colors[stage.status]}]{stage.status}[/{colors[stage.status]}]", stage.detail)
    out.print(table)
    for stage in result.stages:
        if stage.status == "failed":
            out.print(f"[red]failed: {stage.name}: {stage.detail}[/red]", soft_wrap=True)
    if result.failed:
        sys.exit(1)


def main() -> None:
    try:
        cli(standalone_mode=True)
    except UserError as exc:
        err.print(f"error: {exc}", soft_wrap=True, markup=False)
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
