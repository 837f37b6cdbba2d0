"""`omnidr` command line. Thin: each command parses options, calls one stage function, renders."""

import errno
import importlib
import json
import sys
from pathlib import Path
from typing import get_args

import click
from rich.markup import escape
from rich.table import Table

from omnidr._console import make_console, print_tables
from omnidr._offline import quiet_libraries
from omnidr._options import format_option, host_options
from omnidr._runlog import run_log
from omnidr.errors import UserError
from omnidr.paths import RunPaths
from sandbox.models import ModelPolicy

out = make_console()
err = make_console(stderr=True)

SNAPSHOT_ARG = click.argument("path", type=click.Path(path_type=Path))


# Commands that live with their stage, imported only when invoked (or listed by --help), so that
# every other command starts without loading the browser, judge and scoring stacks.
STAGE_COMMANDS = {
    "aggregate": "omnidr.pipeline._scoring_cli:aggregate",
    "leaderboard": "omnidr.pipeline._scoring_cli:leaderboard",
    "calibrate": "omnidr.reliability._cli:calibrate",
    "compare": "omnidr.pipeline._cli:compare",
    "eval": "omnidr.pipeline._cli:eval_",
    "archive": "omnidr.pipeline._archive_cli:archive",
    "rescore": "omnidr.pipeline._archive_cli:rescore",
    "export": "omnidr.pipeline._export_cli:export",
    "na-order": "omnidr.pipeline._scoring_cli:na_order",
    "audit": "omnidr.trajectory._cli:audit",
    "score": "omnidr.evaluation._cli:score",
    "probe": "omnidr.evaluation._cli:probe",
    "labels": "omnidr.reliability._cli:labels",
    "judge": "omnidr.reliability._cli:judge",
    "author": "omnidr.authoring._cli:author",
}


class _StageGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *STAGE_COMMANDS])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in STAGE_COMMANDS:
            module, attr = STAGE_COMMANDS[name].split(":")
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)


@click.group(cls=_StageGroup)
@click.version_option(package_name="omnidr")
def cli() -> None:
    """OmniDR sandbox: evaluate video-centered deep-research agents."""
    quiet_libraries()


@cli.group(short_help="Validate, freeze, verify and complete benchmark snapshots.")
def snapshot() -> None:
    """Validate, freeze, verify and complete benchmark snapshots."""


def _print_problems(report, problems) -> None:
    for p in problems:
        style = "red" if p.severity == "error" else "yellow"
        review = report.review(p) if p.severity == "warning" else None
        note = f" (accepted by {review.reviewer}: {review.reason})" if review else ""
        out.print(f"[{style}]{escape(p.line())}{escape(note)}[/{style}]", soft_wrap=True)


@snapshot.command("validate", short_help="Run the release checks of a snapshot.")
@SNAPSHOT_ARG
@click.option("--no-videos", is_flag=True, help="Skip the presence and checksum checks of source videos (and the browser check).")
def snapshot_validate(path: Path, no_videos: bool) -> None:
    """Static checks of a snapshot (schema, identifiers, directions, gates, evidence binding, ...).

    Exits 1 when there is an error; warnings are printed and need a review decision in
    reviewed-warnings.json before `snapshot freeze` accepts them.
    """
    from omnidr.pipeline import full_validation

    report = full_validation(path, check_videos=not no_videos)
    _print_problems(report, report.problems)
    snap = report.snapshot
    atoms = sum(len(b.rubric.atoms) for b in snap.tasks.values() if b.rubric)
    pending = len(report.unreviewed)
    counted = (f"{len(snap.tasks)} question(s) on {len(snap.videos)} video(s)" if snap.kind.shared_videos
               else f"{len(snap.tasks)} task(s), {atoms} atom(s)")
    summary = (f"{path}: {counted}: {len(report.errors)} error(s), "
               f"{len(report.warnings)} warning(s)" + (f", {pending} without a review decision" if pending else ""))
    if report.errors:
        out.print(f"[red]{summary}[/red]")
        sys.exit(1)
    out.print(f"[green]{summary}[/green]")


@snapshot.command("freeze", short_help="Validate, then write MANIFEST.json and the id.")
@SNAPSHOT_ARG
def snapshot_freeze(path: Path) -> None:
    """Validate, then write MANIFEST.json (sha256 of every file) and print the snapshot id.

    Refuses on an error, and on a warning without a review decision in reviewed-warnings.json.
    """
    from omnidr.benchmark import REVIEW_FILE
    from omnidr.pipeline import freeze

    manifest, report = freeze(path)
    if manifest is None:
        _print_problems(report, report.errors + report.unreviewed)
        why = [f"{len(report.errors)} validation error(s)"] if report.errors else []
        if report.unreviewed:
            why.append(f"{len(report.unreviewed)} warning(s) without a review decision (record each in "
                       f"{path / REVIEW_FILE}: file, field, message, decision 'accept', reviewer, reason)")
        out.print(f"[red]{escape(f'{path}: not frozen: ' + '; '.join(why))}[/red]", soft_wrap=True)
        sys.exit(1)
    out.print(f"{path}: froze {len(manifest.files)} files as [bold]{manifest.snapshot_id}[/bold] ({path / 'MANIFEST.json'})")


@snapshot.command("import-videoodyssey", short_help="Make a snapshot from the VideoOdyssey release.")
@click.argument("annotation", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("folder", metavar="OUT", type=click.Path(path_type=Path, file_okay=False))
@click.option("--videos", "videos_dir", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="The release's video folder (each video's `video_path` is relative to it).")
@click.option("--subtitles", "subtitles_dir", default=None, type=click.Path(path_type=Path, file_okay=False),
              help="The release's subtitle folder (`<video file stem>.srt`); videos without one have no subtitles.")
@click.option("--name", default=None, help="Snapshot name (default: the OUT folder's name as a label).")
@click.option("--prompt-file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="The prompt of the official-* settings, as a template with {question}, {options} and {subtitles} "
              "(e.g. the authors' wording from their README); default: ours, in their structure.")
def snapshot_import_videoodyssey(annotation: Path, folder: Path, videos_dir: Path, subtitles_dir: Path | None,
                                 name: str | None, prompt_file: Path | None) -> None:
    """Make a multiple-choice snapshot from the VideoOdyssey authors' release: ANNOTATION
    (`VideoOdyssey_V.json` or `VideoOdyssey_AV.json`), its videos and subtitles, into OUT; then validate and
    freeze it.

    Every video is hashed and its length checked with ffprobe against the annotation's `duration_minutes`;
    videos and subtitles are hard-linked into OUT (copied where a link cannot be made), and the annotation is
    kept under OUT/release/ for `omnidr export videoodyssey`.
    """
    from omnidr.media import official_protocol, plan_import, slug, write_import
    from omnidr.pipeline import freeze

    if not annotation.is_file():
        raise UserError(f"{annotation}: no such file; pass the release's VideoOdyssey_V.json or VideoOdyssey_AV.json")
    if not videos_dir.is_dir():
        raise UserError(f"{videos_dir}: no such folder; pass --videos the release's video folder")
    if subtitles_dir is not None and not subtitles_dir.is_dir():
        raise UserError(f"{subtitles_dir}: no such folder; pass --subtitles the release's subtitle folder")
    protocol = official_protocol(prompt_file)  # a bad template stops before the videos are hashed
    plan = plan_import(annotation, videos_dir, subtitles_dir, progress=lambda line: err.print(line, highlight=False))
    placed = write_import(plan, annotation, folder, name or slug(folder.resolve().name), protocol)
    with_srt = sum(1 for v, _, srt in plan.videos if srt is not None)
    out.print(f"{folder}: {len(plan.videos)} video(s) ({', '.join(placed)}), {with_srt} with subtitles, "
              f"{len(plan.tasks)} question(s), subset {plan.subset.value}", soft_wrap=True, highlight=False)
    manifest, report = freeze(folder)
    if manifest is None:
        _print_problems(report, report.errors + report.unreviewed)
        out.print(f"[red]{escape(f'{folder}: imported but not frozen; fix what is listed and run `omnidr snapshot freeze {folder}`')}[/red]",
                  soft_wrap=True)
        sys.exit(1)
    out.print(f"{folder}: froze {len(manifest.files)} files as [bold]{manifest.snapshot_id}[/bold]")


@snapshot.command("add-web", short_help="Add recorded web pages to a snapshot.")
@SNAPSHOT_ARG
@click.argument("corpora", nargs=-1, required=True, type=click.Path(path_type=Path))
def snapshot_add_web(path: Path, corpora: tuple[Path, ...]) -> None:
    """Add the pages of recorded CORPORA (e.g. runs/<id>/<system>/web from `omnidr eval --web record`) to
    the snapshot's web/ corpus. A URL the snapshot already has keeps its page. Freeze the snapshot again
    afterwards: its id changes with its web."""
    from omnidr.benchmark import SNAPSHOT_CORPUS_FILE, open_snapshot
    from sandbox.egress import CorpusError, CorpusRecorder

    if not (path / "snapshot.json").is_file():
        raise UserError(f"{path} is not a snapshot folder (no snapshot.json)")
    for corpus in corpora:
        if not (corpus / "corpus.json").is_file():
            raise UserError(f"{corpus}: no corpus.json; pass a recorded corpus folder, e.g. runs/<id>/<system>/web")
    # a page that a fact cites goes where the fact says it is (facts[].sources[].corpus_path)
    cited = {src.url: src.corpus_path for bundle in open_snapshot(path).tasks.values() if bundle.facts
             for fact in bundle.facts.facts for src in fact.sources if src.corpus_path}
    recorder = CorpusRecorder((path / SNAPSHOT_CORPUS_FILE).parent)
    for corpus in corpora:
        try:
            added, kept = recorder.add_corpus(corpus, cited)
        except CorpusError as exc:
            raise UserError(str(exc)) from None
        out.print(f"{corpus}: added {added} page(s); {kept} already in the snapshot kept", soft_wrap=True)
    out.print(f"{path / SNAPSHOT_CORPUS_FILE}: {len(recorder.pages)} page(s); run `omnidr snapshot freeze {path}` to give the "
              "snapshot its new id", soft_wrap=True)


@snapshot.command("verify", short_help="Check a snapshot against its MANIFEST.json.")
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


@snapshot.command("schema", short_help="Write the contract's data.schema.json.")
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


@snapshot.command("fetch-videos", short_help="Download and check the source videos.")
@SNAPSHOT_ARG
@click.option("--task", "tasks", multiple=True, help="Only this task id (repeatable).")
@click.option("--force", is_flag=True, help="Download even when a file with the right checksum is present.")
@click.option("--add-captions", is_flag=True,
              help="Also fetch a caption track in the task's language that task.json does not declare (the "
                   "uploader's, else the platform's automatic one), store it beside the video and record it in "
                   "task.json; freeze the snapshot again afterwards.")
def snapshot_fetch_videos(path: Path, tasks: tuple[str, ...], force: bool, add_captions: bool) -> None:
    """Download each task's source video and its declared caption tracks with yt-dlp, verify their sha256 and
    probe the video with ffprobe.

    A failing task is reported and the others go on; exits 1 if any task failed.
    """
    from omnidr.media import FetchStatus, fetch_snapshot_videos

    def show(r) -> None:
        if r.status is FetchStatus.failed:
            out.print(f"[red]failed[/red]     {r.task_id}: {r.reason}", soft_wrap=True)
        else:
            p = r.probe
            facts = (f"{p.duration_s:.1f} s, {p.width}x{p.height}, {p.fps:g} fps, "
                     f"audio {'yes (' + p.audio_codec + ')' if p.has_audio else 'no'}")
            out.print(f"[green]{r.status.value:<10}[/green] {r.task_id}: {facts}", soft_wrap=True)
            if r.reason:
                out.print(f"[yellow]warning[/yellow]    {r.task_id}: {r.reason}", soft_wrap=True)
        for c in r.captions:
            kind = "automatic" if c.automatic else "uploader's"
            what = c.reason if c.status is FetchStatus.failed else f"{c.language} ({kind})"
            note = "; recorded in task.json" if c.added and c.status is not FetchStatus.failed else ""
            out.print(f"  captions {c.status.value:<10} {c.file}: {what}{note}", soft_wrap=True, markup=False)

    with out.status("fetching source videos"):
        results = fetch_snapshot_videos(path, list(tasks) or None, force=force, on_result=show,
                                        add_captions=add_captions)
    failed = sum(r.status is FetchStatus.failed for r in results)
    out.print(f"{len(results) - failed} of {len(results)} video(s) ready")
    if any(c.added for r in results for c in r.captions):
        out.print(f"task.json changed: run `omnidr snapshot freeze {path}` to give the snapshot its new id", soft_wrap=True)
    if failed:
        sys.exit(1)


@cli.group(short_help="Build, lock and list the pinned Docker images.")
def images() -> None:
    """Build and list the pinned, content-tagged Docker images (no registry needed)."""


@images.command("build", short_help="Build the images; unchanged ones are reused.")
@click.argument("names", nargs=-1)
@click.option("--strict", is_flag=True, default=None,
              help="Refuse to build an image whose locked Debian versions the archive no longer serves "
                   "(default: OMNIDR_STRICT_IMAGES; without it such an image is built with the served versions "
                   "and a warning).")
@click.option("--jobs", type=click.IntRange(1, 16), default=4, show_default=True,
              help="Images built at once; an image starts as soon as its parent is done (the downloads and "
                   "builds of independent images overlap).")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also write each image's result to DIR/NAME.json the moment that image is done, so that "
                   "work needing only some images can start before the build ends (`make test` does).")
@format_option("the table of results", "with markdown and json, the build's progress goes to stderr")
def images_build(names: tuple[str, ...], strict: bool | None, jobs: int, results_dir: Path | None, fmt: str) -> None:
    """Build NAMES (default: every image) and their parents; unchanged images are reused.

    An image that fails to build is reported and the others go on; the command then exits 1."""
    from omnidr.images import build_images, record_results

    shown = out if fmt == "terminal" else err
    with shown.status("building images") as status:
        def progress(m: str) -> None:
            status.update(m)
            shown.print(f"  {m}", soft_wrap=True)

        results = build_images(list(names) or None, strict=strict, refresh=True, progress=progress, jobs=jobs,
                               on_done=record_results(results_dir) if results_dir is not None else None)
    table = Table(title="images")
    for col in ("image", "status", "tag", "image id", "seconds", "drift"):
        table.add_column(col, justify="right" if col in ("seconds", "drift") else "left")
    for r in results:
        table.add_row(r.name, r.status, r.tag or "-", r.image_id[7:19] if r.image_id else "-", f"{r.seconds:.1f}",
                      str(len(r.drift)) if r.drift else "-")
    print_tables(out, [table], fmt)
    for r in results:
        if r.status in ("skipped", "failed"):
            colour = "yellow" if r.status == "skipped" else "red"
            shown.print(f"[{colour}]{r.status} {r.name}: {r.reason}[/{colour}]", soft_wrap=True)
    if any(r.status == "failed" for r in results):
        sys.exit(1)


@images.command("lock", short_help="Rewrite the images' Debian locks.")
@click.argument("names", nargs=-1)
def images_lock(names: tuple[str, ...]) -> None:
    """Rewrite the Debian locks of NAMES (default: every image with one) from what the archive serves now."""
    from omnidr.images import lock_images

    with out.status("resolving against the Debian archive") as status:
        changes = lock_images(list(names) or None, progress=lambda m: status.update(m))
    for name, drift in changes.items():
        lock = f"images/{name}/packages.lock"
        if not drift:
            out.print(f"{lock}: unchanged", soft_wrap=True)
            continue
        added = [d for d in drift if not d.locked]
        out.print(f"{lock}: {len(drift)} change(s)", soft_wrap=True)
        for d in drift:
            if d.locked:
                out.print(f"  {d.line()}", soft_wrap=True)
        if added:
            out.print(f"  {len(added)} package(s) newly locked: {', '.join(d.package for d in added[:8])}"
                      + (", ..." if len(added) > 8 else ""), soft_wrap=True)


@images.command("list", short_help="List the images, their tags and drift.")
@format_option("the table")
def images_list(fmt: str) -> None:
    """Every image folder, its content tag as last resolved here, and whether the engine has it built."""
    from omnidr.images import list_images

    table = Table(title="images")
    for col in ("image", "parent", "tag", "built", "drift", "description"):
        table.add_column(col, overflow="fold")
    for row in list_images():
        drift = len(row["packages"]["drift"])
        table.add_row(row["name"], row["parent"] or "-", row["tag"] or "(not resolved here yet)",
                      "yes" if row["image_id"] else "no", str(drift) if drift else "-", row["description"])
    print_tables(out, [table], fmt, prose={0: frozenset({5})})


@cli.command("harnesses", short_help="List the harnesses a system can run under.")
@format_option("the table")
def harnesses(fmt: str) -> None:
    """List the harnesses a system can run under: API, image and its CLI, levels, tools."""
    from omnidr.harness import HARNESSES
    from omnidr.images import load_specs
    from sandbox.models import API_LABEL

    specs = load_specs()
    table = Table(title="harnesses")
    for col in ("harness", "API", "image", "CLI", "levels", "scripted model", "tools"):
        table.add_column(col, overflow="fold")
    for h in HARNESSES.values():
        cli_spec = specs[h.image].cli if h.image in specs else None
        table.add_row(h.name, API_LABEL[h.api], h.image or "(--image)",
                      f"{cli_spec.command} {cli_spec.version}" if cli_spec else "-",
                      "input settings (MODALITY-NNNf-WINDOW)" if h.settings else ", ".join(h.capabilities),
                      "yes" if h.scripted else "no", h.skills + (f"; {h.note}" if h.note else ""))
    print_tables(out, [table], fmt, prose={0: frozenset({4, 6})})


@cli.command("run", context_settings={"ignore_unknown_options": False},
             short_help="Run agent attempts in the sandbox, without scoring.")
@click.option("--snapshot", "snapshot_path", type=click.Path(path_type=Path), default=Path("snapshots/demo"), show_default=True,
              help="Snapshot folder whose tasks run.")
@click.option("--task", "tasks", multiple=True, help="Task id (repeatable); default: every task of the snapshot.")
# the registry's names (omnidr.harness.HARNESSES; importing it here would slow every command; a test keeps them equal)
@click.option("--harness", type=click.Choice(["command", "reference", "claude-code", "codex", "openclaw", "direct"]),
              default="command", show_default=True,
              help="`command` runs --image with the command after `--`; the others run their own image (the reference "
                   "agent, Claude Code, Codex) on the endpoint given with --openai-base-url or --anthropic-base-url "
                   "(the gateway translates when it speaks another API), or on the scripted model when none is given.")
@click.option("--capability", type=click.Choice(["interface_only", "video", "text_web", "multimodal", "full"]),
              default="full", show_default=True, help="Capability level (the paper's ladder): which research skills the reference agent, Claude Code or Codex gets.")
@click.option("--image", help="Agent image (command harness).")
@click.option("--run-dir", type=click.Path(path_type=Path), required=True, help="Run folder; rerunning resumes it.")
@click.option("--model", default=None, help="Model name the agent asks the gateway for.")
@click.option("--openai-base-url", help="OpenAI-compatible upstream the gateway forwards to (e.g. https://api.openai.com/v1).")
@click.option("--openai-key-env", help="Host environment variable holding the OpenAI upstream key.")
@click.option("--anthropic-base-url", help="Anthropic-compatible upstream (e.g. https://api.anthropic.com/v1).")
@click.option("--anthropic-key-env", help="Host environment variable holding the Anthropic upstream key.")
@click.option("--max-iterations", type=click.IntRange(min=1), default=500, show_default=True, help="Model requests per attempt.")
@click.option("--max-output-tokens", type=click.IntRange(min=1), default=64000, show_default=True, help="Per-request output tokens (clamped).")
@click.option("--max-total-tokens", type=click.IntRange(min=1), default=None, help="Total tokens per attempt.")
@click.option("--max-tool-calls", type=click.IntRange(min=0), default=None, help="Tool calls per attempt.")
@click.option("--max-attempt-cost", "max_attempt_cost", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="USD", help="US dollars per attempt, each exchange priced at the model's price (the gateway "
                                  "refuses requests once it is spent).")
@click.option("--max-cost", type=click.FloatRange(min=0, min_open=True), default=None, metavar="USD",
              help="US dollars this invocation may spend: attempts that could pass it are left unstarted, and a "
                   "rerun finishes them. Needs --max-attempt-cost.")
@click.option("--max-connections", type=click.IntRange(min=1), default=None, metavar="N",
              help="Upstream requests in flight at once per model API over all the run's gateways (default 64); a "
                   "429 or 503 halves the limit and Retry-After pauses them all, successes grow it back.")
@click.option("--prices", "prices_file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="JSON file of model prices (US dollars per million tokens) that adds to or overrides genai-prices' "
                   "table, e.g. {\"MODEL\": {\"input_per_mtok\": 3.0, \"output_per_mtok\": 15.0}}.")
@click.option("--wall-time", "wall_time_s", type=click.FloatRange(min=0.1), default=36000.0, show_default=True, help="Seconds per attempt.")
@click.option("--attempts", type=click.IntRange(min=1), default=3, show_default=True, help="Attempts per task.")
@click.option("--retry-on", multiple=True, type=click.Choice(["no_report", "invalid_report", "timeout", "stalled", "agent_error",
                                                              "budget_exhausted"]),
              help="Failure reasons that earn another attempt (repeatable; default: all). infra_error is always retried; "
                   "stalled is retried whenever timeout is.")
@click.option("--proxy-mode", type=click.Choice(["log", "intercept", "record", "replay", "deny"]), default="replay",
              show_default=True,
              help="Egress proxy mode; replay serves the snapshot's web corpus offline.")
@click.option("--denylist", multiple=True, help="Host (or host/path) the egress proxy answers 403 and provider-side "
              "search filters exclude (repeatable); the benchmark's release repository is always on it.")
@click.option("--provider-tools", default="default", show_default=True,
              help="Provider-side tools (web search and fetch run by the model provider): allow (logged), deny, "
                   "denylist, or KIND=POLICY,... over web_search, web_fetch, hosted. default: deny in replay and "
                   "deny modes, denylist on the live web.")
@click.option("--outside-network", default="bridge", show_default=True, help="Docker network the gateway and proxy use to reach out.")
@click.option("--allow-net", "allow_net", multiple=True, metavar="CIDR",
              help="A range off the public internet the egress proxy may reach on purpose, e.g. an internal mirror "
                   "(repeatable). Without it, private, loopback and link-local destinations are refused.")
@click.option("--model-policy", type=click.Choice(get_args(ModelPolicy)), default="rewrite", show_default=True,
              help="What the gateway does with a model request naming another model than --model: send it with "
                   "--model (rewrite), answer 400 (refuse), or send it as named (allow). A provider's search model is "
                   "refused while provider-side web search is deny.")
@click.option("--search-door", metavar="PROVIDER@URL",
              help="A web search provider the research skills query through the egress proxy: searxng@URL (its JSON "
                   "API) or brave@URL (the Brave Search API). Default: the offline index of the snapshot's corpus.")
@click.option("--search-key-env", metavar="VAR",
              help="Host environment variable holding the search door's key, which the proxy injects (default "
                   "BRAVE_SEARCH_API_KEY for brave, none for searxng).")
@click.option("--cpus", type=float, default=2.0, show_default=True, help="CPUs the agent container may use.")
@click.option("--memory-mb", type=int, default=4096, show_default=True, help="Memory limit of the agent container (MiB).")
@click.option("--pids", type=int, default=512, show_default=True, help="Process limit of the agent container.")
@click.option("--parallel", type=click.IntRange(min=1), default=1, show_default=True, help="Tasks run at once.")
@host_options
@click.option("--wait", is_flag=True, help="If another omnidr process is writing --run-dir, wait for it instead of stopping.")
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def run(**options) -> None:
    """Run agent attempts in the sandbox: `omnidr run --harness command --image IMAGE --run-dir DIR -- CMD ARGS`."""
    from omnidr.attempts import cost_text
    from omnidr.harness import run_harness

    def show(r) -> None:
        color = "green" if r.delivered else "red"
        out.print(f"[{color}]{r.reason.value:<16}[/{color}] {r.task_id} attempt {r.attempt}: {r.detail} "
                  f"({r.wall_time_s:.1f} s, {r.budget_use.requests} requests, "
                  f"{r.budget_use.input_tokens + r.budget_use.output_tokens} tokens, {cost_text(r.budget_use.cost)})",
                  soft_wrap=True)

    run_dir = Path(options["run_dir"])
    config, run_options = run_inputs(options, show, lambda m: out.print(f"[yellow]{m}[/yellow]"))
    with out.status("running attempts"), run_log(run_dir, " ".join(sys.argv)):
        results = run_harness(options["snapshot_path"], run_dir, config, run_options)
    done = sum(1 for rs in results.values() if rs and rs[-1].delivered)
    out.print(f"{done} of {len(results)} task(s) delivered a report; artifacts in {RunPaths(run_dir).attempts}/",
              soft_wrap=True)
    if done < len(results):
        sys.exit(1)


def run_inputs(o: dict, on_attempt, on_note):
    """`omnidr run`'s options (by their Click names) as the one `SystemConfig` of its system and the
    `SystemRunOptions` of the invocation."""
    from omnidr.attempts import (
        HostPolicy,
        RetryPolicy,
        SandboxLimits,
        load_prices,
        parse_allow_nets,
        parse_provider_tools,
        parse_search_door,
        spend_cap,
    )
    from omnidr.harness import Endpoints, SystemConfig, SystemRunOptions, SystemSpec, WebPolicy
    from sandbox.models import Budget

    endpoints = Endpoints(o["openai_base_url"], o["openai_key_env"], o["anthropic_base_url"], o["anthropic_key_env"])
    budget = Budget(max_iterations=o["max_iterations"], max_output_tokens=o["max_output_tokens"],
                    max_total_tokens=o["max_total_tokens"], max_tool_calls=o["max_tool_calls"],
                    max_cost_usd=o["max_attempt_cost"], wall_time_s=o["wall_time_s"], attempts_per_task=o["attempts"])
    door = parse_search_door(o["search_door"], o["search_key_env"], o["proxy_mode"]) if o["search_door"] else None
    web = WebPolicy.on_proxy(o["proxy_mode"], search_door=door, provider_tools=parse_provider_tools(o["provider_tools"], o["proxy_mode"]),
                    denylist=tuple(o["denylist"]), allow_nets=parse_allow_nets(o["allow_net"]),
                    outside_network=None if o["outside_network"] == "bridge" else o["outside_network"],
                    model_policy=o["model_policy"])
    agent = SystemSpec(harness=o["harness"], capability=o["capability"], model=endpoints.model(o["harness"], o["model"]),
                       image=o["image"], command=tuple(o["argv"]))
    config = SystemConfig(agent=agent, budget=budget, budget_label="run options", web=web)
    run_options = SystemRunOptions(
        tasks=list(o["tasks"]) or None, parallel=o["parallel"], wait=o["wait"],
        host=HostPolicy(max_starts=o["max_starts"], stall_timeout_s=o["stall_timeout_s"]),
        prices=load_prices(o["prices_file"]) if o["prices_file"] else None, spend=spend_cap(o["max_cost"], budget),
        max_connections=o["max_connections"], limits=SandboxLimits(cpus=o["cpus"], memory_mb=o["memory_mb"], pids=o["pids"]),
        retry=RetryPolicy(retry_on=list(o["retry_on"])) if o["retry_on"] else RetryPolicy(),
        upstreams=endpoints.upstreams() if o["harness"] == "command" else (), on_attempt=on_attempt, on_note=on_note)
    return config, run_options


INTERRUPTED_EXIT = 130  # 128 + SIGINT, what shells report for a Ctrl-C


def main() -> None:
    quiet_libraries()  # before any stage module imports MLflow or Ray
    try:
        code = cli.main(standalone_mode=False)
    except UserError as exc:
        err.print(f"error: {exc}", soft_wrap=True, markup=False)
        sys.exit(exc.exit_code)
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        # a fault, not a mistake: what was finished is on disk (every shared file is written to a temporary
        # name, then renamed), the attempt in flight has no attempt.json and is redone by the rerun
        where = f" writing {exc.filename}" if exc.filename else ""
        err.print(f"error: no space left on device{where}; free space there (`df -h {exc.filename or '.'}`) and rerun "
                  "the same command: finished work is kept and the rest resumes", soft_wrap=True, markup=False)
        sys.exit(1)
    except (KeyboardInterrupt, click.exceptions.Abort) as exc:
        if isinstance(exc, KeyboardInterrupt) or isinstance(exc.__cause__, KeyboardInterrupt):
            # the stages stopped their containers and kept what was finished (omnidr.attempts.stop_run)
            err.print("interrupted; rerun the same command to resume", soft_wrap=True, markup=False)
            sys.exit(INTERRUPTED_EXIT)
        err.print("Aborted!", markup=False)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
