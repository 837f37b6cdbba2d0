"""`omnidr author`: ARC S0-S6, stage by stage or end to end (the main group loads it on demand)."""

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from omnidr._console import make_console
from omnidr.benchmark import taxonomy
from omnidr.errors import UserError
from omnidr.pipeline import eval_options

from ._agents import ModelEndpoint
from ._criteria import run_s2, run_s3_s4
from ._demo_script import demo_script
from ._evidence_maps import run_s1a, run_s1b, run_s1c
from ._models import ROUTES, AuthoringReport, Budgets
from ._package import Package, TaskRequest, dump, init_package, resume_package
from ._review import review_package
from ._run import assembled, author_all, conclude, read_script

out = make_console()
_PACKAGE = click.argument("package", type=click.Path(path_type=Path))


def _model_options(f):
    for option in reversed([
        click.option("--model-base-url", default=None, help="OpenAI-compatible base URL of the model the evidence "
                     "agents and the model calls use (default: the scripted model, offline, playing --script)."),
        click.option("--model", default=None, help="Model name at --model-base-url."),
        click.option("--model-key-env", default="OPENAI_API_KEY", show_default=True,
                     help="Host variable holding the model key (the gateway injects it; no agent sees it)."),
        click.option("--script", "script_file", type=click.Path(path_type=Path), default=None,
                     help="The task's authoring script the scripted model plays (`omnidr author demo-script`)."),
        click.option("--web", type=click.Choice(["replay", "live", "record"]), default="replay", show_default=True,
                     help="S1b's web: the package's web/ corpus replayed offline, the live web, or the live web with "
                     "the pages read added to the package's web/ corpus."),
        click.option("--search-door", metavar="PROVIDER@URL", default=None,
                     help="A search provider S1b's sessions query through the egress proxy: searxng@URL or brave@URL "
                     "(default: the offline index of the package's corpus)."),
        click.option("--search-key-env", metavar="VAR", default=None,
                     help="Host variable holding the search door's key (default BRAVE_SEARCH_API_KEY for brave)."),
        click.option("--parallel", default=2, show_default=True, type=click.IntRange(1), help="Sessions at once."),
    ]):
        f = option(f)
    return f


def _endpoint(model_base_url, model, model_key_env, web, parallel, search_door, search_key_env) -> ModelEndpoint:
    if model_base_url and not model:
        raise UserError("--model-base-url needs --model NAME")
    return ModelEndpoint(base_url=model_base_url, model=model, key_env=model_key_env if model_base_url else None,
                         web=web, parallel=parallel, search_door=search_door, search_key_env=search_key_env)


def _note(message: str) -> None:
    out.print(message, soft_wrap=True, markup=False)


def _redo(pkg: Package, stage: str) -> None:
    """A stage run by hand makes the stages after it run again in a later `omnidr author run`."""
    pkg.draft()
    undone = pkg.redo_after(stage)
    if undone:
        _note(f"{stage.upper()} runs again: {', '.join(u.upper() for u in undone)} will run again too")


@click.group("author", short_help="Build a new task with Audited Rubric Construction (S0-S6).")
def author() -> None:
    """Build a new task package the way the paper built its own (ARC S0-S6, App. E): video and web evidence maps by
    agents in the sandbox, a reconciled fact library, generated and screened criteria, an Omni-ART, human review
    and repair. See docs/guides/authoring.md."""


def _init_options(f):
    for option in reversed([
        click.option("--request", required=True, help="The user request, in the task language."),
        click.option("--like", "like", type=click.Path(path_type=Path), required=True,
                     help="A report snapshot whose report contract, hyperparameters and web corpus the package uses "
                     "(for example snapshots/demo)."),
        click.option("--subcategory", required=True, help="Subcategory id from the taxonomy (it names the family)."),
        click.option("--family", default=None, help="Task family (checked against the subcategory)."),
        click.option("--language", type=click.Choice(["en", "zh"]), default="en", show_default=True),
        click.option("--query-form", type=click.Choice(["general", "video_view", "user_demand"]),
                     default="user_demand", show_default=True),
        click.option("--id", "task_id", default=None, help="Task id (default: the package folder's name)."),
        click.option("--video-url", default=None, help="Public URL of the video (default: the file's path)."),
        click.option("--route", "routes", multiple=True, type=click.Choice(list(ROUTES)),
                     help="S1b routes (repeatable; default all six of App. E.2)."),
        click.option("--max-rounds", default=4, show_default=True, type=click.IntRange(1), help="S1b round limit."),
    ]):
        f = option(f)
    return f


INIT_OPTIONS = ("request", "like", "subcategory", "family", "language", "query_form", "task_id", "video_url", "routes",
                "max_rounds")
"""The keywords `_init_options` gives a command (Click passes one keyword per option)."""


def _init(video, out_dir, options: Mapping[str, Any]):
    """S0 from the options of `_init_options` (their one reader)."""
    subcategory, family = options["subcategory"], options["family"]
    sub = taxonomy().subcategory(subcategory)
    if sub is None:
        raise UserError(f"unknown subcategory {subcategory!r}; see omnidr/benchmark/data/taxonomy.json")
    if family and family != sub.family.value:
        raise UserError(f"subcategory {subcategory!r} belongs to family {sub.family.value!r}, not {family!r}")
    task = TaskRequest(request=options["request"], language=options["language"], family=sub.family.value,
                       subcategory=subcategory, query_form=options["query_form"],
                       task_id=options["task_id"] or out_dir.name, video_url=options["video_url"],
                       routes=list(options["routes"]) or None)
    return init_package(video, task, out_dir, options["like"], Budgets(max_rounds=options["max_rounds"]))


@author.command("init", short_help="S0: write the task skeleton; acquire and probe the video.")
@click.argument("video", type=click.Path(path_type=Path))
@click.argument("out_dir", metavar="OUT", type=click.Path(path_type=Path))
@_init_options
def init(video, out_dir, **kw) -> None:
    """S0: make the package OUT for VIDEO and the request: task.json, the video (probed and hashed), the routes
    and budgets (authoring/task-draft.json)."""
    draft = _init(video, out_dir, kw)
    _note(f"S0: package {out_dir} for task {draft.id} ({len(draft.routes)} routes)")


@author.command("video-map", short_help="S1a: video evidence map (sandbox, video, no web).")
@_PACKAGE
@_model_options
def video_map(package, script_file, **kw) -> None:
    """S1a: an agent reads the video in T_win windows with the web closed and records timestamped facts."""
    _redo(Package(package), "s1a")
    vmap = run_s1a(Package(package), _endpoint(**kw), read_script(script_file), _note)
    _note(f"S1a: {len(vmap.facts)} video fact(s) kept, {len(vmap.rejected)} rejected")


@author.command("web-map", short_help="S1b: web evidence map (sandbox, web, no video), route by route.")
@_PACKAGE
@_model_options
@click.option("--max-rounds", default=None, type=click.IntRange(1), help="Round limit (default: the package's).")
def web_map(package, script_file, max_rounds, **kw) -> None:
    """S1b: one isolated session per route, rounds until two consecutive saturated rounds or the round limit."""
    _redo(Package(package), "s1b")
    wmap = run_s1b(Package(package), _endpoint(**kw), read_script(script_file), _note, max_rounds=max_rounds)
    _note(f"S1b: {len(wmap.claims)} claim(s) in {len(wmap.rounds)} round(s), stopped: {wmap.stopped}")


@author.command("reconcile", short_help="S1c: merge the maps into the fact library.")
@_PACKAGE
@_model_options
def reconcile(package, script_file, **kw) -> None:
    """S1c: merge equivalent statements keeping provenance, keep conflict edges, compute verification states."""
    _redo(Package(package), "s1c")
    result = run_s1c(Package(package), _endpoint(**kw), read_script(script_file), _note)
    states: dict[str, int] = {}
    for e in result.entries:
        states[e.record.verification.value] = states.get(e.record.verification.value, 0) + 1
    _note(f"S1c: {len(result.entries)} record(s), {len(result.conflicts)} conflict edge(s), "
          + ", ".join(f"{k} {v}" for k, v in sorted(states.items())))


@author.command("generate", short_help="S2: candidate criteria from the fact library (a model call).")
@_PACKAGE
@_model_options
def generate(package, script_file, **kw) -> None:
    """S2: one model call through the gateway turns the library into candidate criteria."""
    _redo(Package(package), "s2")
    candidates = run_s2(Package(package), _endpoint(**kw), read_script(script_file), _note)
    _note(f"S2: {len(candidates)} candidate(s)")


@author.command("assemble", short_help="S3 and S4: screen the candidates, assemble and check the Omni-ART.")
@_PACKAGE
def assemble(package) -> None:
    """S3 screening (reasons kept, difficulty computed) and S4 assembly (slots, N/A reasons, caps), then the static
    checks of `snapshot validate`."""
    _redo(Package(package), "s4")
    screening, assembly = run_s3_s4(Package(package))
    _note(f"S3: kept {len(screening.kept)}, removed {len(screening.removed)}; S4: "
          f"{sum(len(v) for v in assembly.placed.values())} atom(s), {len(assembly.na_reasons)} N/A, "
          f"{len(assembly.capped)} capped; {len(assembly.errors)} error(s), {len(assembly.warnings)} warning(s)")


def _show(report: AuthoringReport, pkg: Package | None = None) -> None:
    for row in report.attrition:
        _note(f"{row.step}: candidates {row.candidates}, accepted {row.accepted}, repaired {row.repaired}, "
              f"excluded {row.excluded} ({row.decision})")
    for r in report.reviews:
        unanimity = "n/a" if r.unanimity is None else f"{r.unanimity:.1%}"
        _note(f"review round {r.round}: item correctness {r.item_correctness:.1%} ({r.correct_items}/{r.items}), "
              f"unanimity {unanimity} ({r.unanimous_items}/{r.three_rater_items})")
    _note(f"package {report.task_id}: {report.status}" + (f" ({report.note})" if report.note else ""))
    manifest = pkg.root / "MANIFEST.json" if pkg is not None else None
    if pkg is not None and manifest is not None and report.status == "frozen" and manifest.is_file():
        _note(f"frozen as {json.loads(manifest.read_text('utf-8'))['snapshot_id']}; evaluate it with "
              f"`omnidr eval {pkg.root}`")


@author.command("review", short_help="S5/S6: human review labels, repair by the stages that erred, freeze or exclude.")
@_PACKAGE
@click.argument("labels", type=click.Path(path_type=Path))
@_model_options
def review(package, labels, script_file, **kw) -> None:
    """S5 human review of the package from a LABELS file (JSON Lines: round, rater, item, label, note), then S6:
    each incorrect fact goes back to S1a or S1b and each incorrect criterion to S2-S4, run again with the model
    (--model-base-url, or the scripted model with --script). Rounds already decided are kept: append each new
    round's labels to the file and run the command again. Without a model, S6 removes what review found incorrect."""
    pkg = Package(package)
    pkg.draft()
    endpoint = _endpoint(**kw)
    script = read_script(script_file)
    if endpoint.base_url is None and script is None:
        _note("S6: no model given (--model-base-url, or --script for the scripted model): a repair removes what "
              "review found incorrect, without replacements")
    _show(review_package(pkg, labels, _previous(pkg), endpoint, script, _note), pkg)


def _previous(pkg: Package) -> list:
    if not pkg.report_file.is_file():
        return []
    old = AuthoringReport.model_validate_json(pkg.report_file.read_text("utf-8"))
    return [r for r in old.attrition if not r.step.startswith("S5/S6")]


@author.command("run", short_help="S0-S6 end to end.")
@click.argument("video", type=click.Path(path_type=Path))
@click.argument("out_dir", metavar="OUT", type=click.Path(path_type=Path))
@_init_options
@_model_options
@click.option("--labels", type=click.Path(path_type=Path), default=None,
              help="A human review labels file (S5); without it the package is frozen on the static checks alone.")
def run(video, out_dir, script_file, labels, **kw) -> None:
    """S0-S6: init, the evidence maps, reconciliation, generation, screening, assembly, review and repair."""
    init = {name: kw.pop(name) for name in INIT_OPTIONS}
    endpoint = _endpoint(**kw)
    script = read_script(script_file)
    pkg = Package(out_dir)
    if pkg.draft_file.is_file():  # an interrupted (or finished) run of the same package: resume it
        resume_package(pkg, video, init["request"], init["task_id"] or out_dir.name, init["video_url"])
        _note(f"S0: package {out_dir} exists for this video and request; resuming (stages already done are skipped)")
    else:
        _init(video, out_dir, init)
    _show(author_all(pkg, endpoint, script, labels, _note), pkg)


@author.command("finish", short_help="S6 without review: freeze a package that passes the static checks.")
@_PACKAGE
def finish_cmd(package) -> None:
    """Freeze an assembled package on the static checks alone (no human review round)."""
    pkg = Package(package)
    pkg.draft()
    _show(conclude(pkg, *assembled(pkg, _note), None), pkg)


@author.command("demo-script", short_help="Write the authoring script of a demo task for the scripted model.")
@click.argument("snapshot", type=click.Path(path_type=Path))
@click.argument("task_id")
@click.argument("file", type=click.Path(path_type=Path))
def demo_script_cmd(snapshot, task_id, file) -> None:
    """Derive the scripted model's side of every authoring session of TASK_ID from SNAPSHOT's released library and
    rubric (with seeded bad candidates for S3), into FILE."""
    try:
        script = demo_script(snapshot, task_id)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    dump(file, script)
    _note(f"wrote {file}: the authoring script of {task_id} ({len(script['s1b'])} routes)")


@author.command("calibrate", short_help="S5: behavioural calibration of the package (R1 < R2 < R3).")
@_PACKAGE
@click.option("--harness", default="reference", show_default=True, help="The harness that writes R1, R2 and R3.")
@eval_options
def calibrate_cmd(package, harness, **options) -> None:
    """S5's behavioural calibration (paper App. E.4), `omnidr calibrate`'s check on the package: one model under one
    harness writes R1 (video, no web search), R2 (full tools) and R3 (full tools and the fact library's evidence brief),
    and the task must satisfy R1 < R2 < R3 with R3 - R1 above calibration_gap. A package that fails is excluded (S6).
    The runs go to RUNS_ROOT/calibration/<snapshot id>/ (rerunning resumes); the result to the package's
    calibration.json and authoring/s5/record.json. Exit code 1 when the package fails or no result was reached."""
    from omnidr.reliability import calibration_grid, systems_line

    from ._calibration import calibrate_package, calibration_row
    from ._review import finish

    pkg = Package(package)
    pkg.draft()
    result = calibrate_package(pkg, harness, out, options)
    if result is None or result.calibration is None:
        _note(f"S5 calibration: not concluded: {result.problem if result else 'the runs produced no run root'}")
        sys.exit(1)
    out.print(calibration_grid(result.calibration, result.gap).rich())
    _note(systems_line(result.calibration))
    row, problem = calibration_row(pkg)
    _note(f"S5 calibration: {row.decision if row else 'no record'}")
    if pkg.report_file.is_file():  # the package's fate again, with the calibration in it
        _show(finish(pkg, AuthoringReport.model_validate_json(pkg.report_file.read_text("utf-8"))), pkg)
    if problem is not None:
        sys.exit(1)
