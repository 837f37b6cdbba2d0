"""`omnidr archive RUN_ROOT`, `omnidr archive verify ARCHIVE`, `omnidr rescore ARCHIVE`."""

import sys
from datetime import UTC, datetime
from pathlib import Path

import click

from omnidr._console import make_console
from omnidr._options import EVALUATOR_OPTION, JUDGE_KEY_ENV_OPTION, JUDGE_OPTION, format_option
from omnidr.paths import RESULT_FILES

from ._archive import archive_run, rescore_archive, verify_archive

out = make_console()


class _ArchiveGroup(click.Group):
    """`omnidr archive RUN_ROOT [--out ...]` makes an archive; `omnidr archive verify ARCHIVE` checks one."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["make", *args]
        return super().parse_args(ctx, args)


@click.group("archive", cls=_ArchiveGroup, short_help="Freeze a run root into an archive, or verify one.")
def archive() -> None:
    """Freeze a run root into an archive (`omnidr archive RUN_ROOT`), or check one (`omnidr archive verify ARCHIVE`)."""


@archive.command("make", short_help="Write a frozen, hashed bundle of a run root.")
@click.argument("run_root", type=click.Path(path_type=Path))
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=None,
              help="New archive folder (default: archives/<snapshot id>-<UTC time>).")
@click.option("--snapshot", type=click.Path(path_type=Path), default=None,
              help="Snapshot the run used (default: found from the run's records).")
@click.option("--images", "save_images", is_flag=True, help="Also save every image the run used (docker save tarballs).")
def archive_make(run_root: Path, out_dir: Path | None, snapshot: Path | None, save_images: bool) -> None:
    """Write a frozen bundle of RUN_ROOT: system folders, results, snapshot, ARCHIVE.json with hashes."""
    out_dir = out_dir or Path("archives") / f"{Path(run_root).resolve().name}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    with out.status("archiving") as status:
        def progress(m: str) -> None:
            status.update(m)
            out.print(f"  {m}", soft_wrap=True)

        manifest = archive_run(run_root, out_dir, snapshot, save_images, progress=progress)
    size = sum((out_dir / p).stat().st_size for p in manifest.files) / 2**20
    out.print(f"archived {run_root} as {manifest.archive_id}: {len(manifest.files)} files ({size:.1f} MiB), "
              f"{len(manifest.systems)} system(s), {len(manifest.image_ids)} image ID(s)"
              f"{f', {len(manifest.images_saved)} image tarball(s)' if manifest.images_saved else ''}; {out_dir}",
              soft_wrap=True)


@archive.command("verify", short_help="Check an archive against its ARCHIVE.json.")
@click.argument("archive_dir", type=click.Path(path_type=Path))
def archive_verify(archive_dir: Path) -> None:
    """Check every file of ARCHIVE against ARCHIVE.json; names each changed, missing or extra file (exit 1)."""
    manifest, diff = verify_archive(archive_dir)
    for label, files in (("changed", diff.changed), ("missing", diff.missing), ("extra", diff.extra)):
        for f in files:
            out.print(f"[red]{label}: {f}[/red]", soft_wrap=True)
    n = len(diff.changed) + len(diff.missing) + len(diff.extra)
    if n:
        out.print(f"[red]{archive_dir}: does not match {manifest.archive_id}: {n} file(s) differ[/red]", soft_wrap=True)
        sys.exit(1)
    out.print(f"[green]{archive_dir}: all {len(manifest.files)} files match {manifest.archive_id}[/green]", soft_wrap=True)


@click.command("rescore", short_help="Score an archive's reports again with a judge.")
@click.argument("archive_dir", type=click.Path(path_type=Path))
@JUDGE_OPTION
@JUDGE_KEY_ENV_OPTION
@click.option("--out", "out_dir", type=click.Path(path_type=Path), required=True, help="New results folder.")
@EVALUATOR_OPTION
@click.option("--wait", is_flag=True, help="If another omnidr process is writing --out, wait for it instead of stopping.")
@format_option("the results", "json and markdown print the new leaderboard.json or leaderboard.md, the progress going "
               "to stderr")
def rescore(archive_dir: Path, judge: str, judge_key_env: str | None, out_dir: Path, evaluator: str, wait: bool,
            fmt: str) -> None:
    """Re-score the frozen reports of ARCHIVE with a judge (and this evaluator version) into a new
    results folder; no agent runs (the evaluator image scores, unless `--evaluator host`)."""
    from omnidr.scoring import AnswerLeaderboard, answer_grids, leaderboard_grids

    from ._specs import parse_judge, require_key

    endpoint = parse_judge(judge, judge_key_env)
    require_key(endpoint, "judge")
    shown = out if fmt == "terminal" else make_console(stderr=True)
    with shown.status("re-scoring") as status:
        def progress(m: str) -> None:
            status.update(m)
            shown.print(f"  {m}", soft_wrap=True)

        board, _results, record = rescore_archive(archive_dir, out_dir, endpoint, wait=wait, progress=progress,
                                                  evaluator=evaluator)
    if fmt != "terminal":
        click.echo((Path(out_dir) / RESULT_FILES[0 if fmt == "json" else 1]).read_text("utf-8").rstrip("\n"))
    else:
        out.print(answer_grids(board)["leaderboard"].rich() if isinstance(board, AnswerLeaderboard)
                  else leaderboard_grids(board)[0].rich())
    shown.print(f"re-scored {record.archive_id} with judge {record.judge} (evaluator {record.evaluator_version}) in "
              f"{record.elapsed_s:.1f} s; results in {out_dir} (leaderboard.md, index.html)", soft_wrap=True)
