"""`omnidr author`: ARC S0-S6, stage by stage or end to end (the main group loads it on demand)."""

import json
from pathlib import Path

import click

from omnidr._console import make_console
from omnidr.benchmark import taxonomy
from omnidr.errors import UserError

from ._agents import ModelEndpoint
from ._criteria import run_s2, run_s3_s4
from ._demo_script import demo_script
from ._evidence_maps import run_s1a, run_s1b, run_s1c
from ._models import ROUTES, AuthoringReport, Budgets
from ._package import Package, TaskRequest, dump, init_package
from ._review import review_package
from ._run import author_all, conclude, read_script

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


def _init(video, out_dir, request, like, subcategory, family, language, query_form, task_id, video_url,  # noqa: PLR0913
          routes, max_rounds):
    """S0 from the options of `_init_options` (Click passes one keyword per option; this is their one reader)."""
    sub = taxonomy().subcategory(subcategory)
    if sub is None:
        raise UserError(f"unknown subcategory {subcategory!r}; see omnidr/benchmark/data/taxonomy.json")
    if family and family != sub.family.value:
        raise UserError(f"subcategory {subcategory!r} belongs to family {sub.family.value!r}, not {family!r}")
    task = TaskRequest(request=request, language=language, family=sub.family.value, subcategory=subcategory,
                       query_form=query_form, task_id=task_id or out_dir.name, video_url=video_url,
                       routes=list(routes) or None)
    return init_package(video, task, out_dir, like, Budgets(max_rounds=max_rounds))


@author.command("init", short_help="S0: write the task skeleton; acquire and probe the video.")
@click.argument("video", type=click.Path(path_type=Path))
@click.argument("out_dir", metavar="OUT", type=click.Path(path_type=Path))
@_init_options
def init(video, out_dir, **kw) -> None:
    """S0: make the package OUT for VIDEO and the request: task.json, the video (probed and hashed), the routes
    and budgets (authoring/task-draft.json)."""
    draft = _init(video, out_dir, **kw)
    _note(f"S0: package {out_dir} for task {draft.id} ({len(draft.routes)} routes)")


@author.command("video-map", short_help="S1a: video evidence map (sandbox, video, no web).")
@_PACKAGE
@_model_options
def video_map(package, script_file, **kw) -> None:
    """S1a: an agent reads the video in T_win windows with the web closed and records timestamped facts."""
    vmap = run_s1a(Package(package), _endpoint(**kw), read_script(script_file), _note)
    _note(f"S1a: {len(vmap.facts)} video fact(s) kept, {len(vmap.rejected)} rejected")


@author.command("web-map", short_help="S1b: web evidence map (sandbox, web, no video), route by route.")
@_PACKAGE
@_model_options
@click.option("--max-rounds", default=None, type=click.IntRange(1), help="Round limit (default: the package's).")
def web_map(package, script_file, max_rounds, **kw) -> None:
    """S1b: one isolated session per route, rounds until two consecutive saturated rounds or the round limit."""
    wmap = run_s1b(Package(package), _endpoint(**kw), read_script(script_file), _note, max_rounds=max_rounds)
    _note(f"S1b: {len(wmap.claims)} claim(s) in {len(wmap.rounds)} round(s), stopped: {wmap.stopped}")


@author.command("reconcile", short_help="S1c: merge the maps into the fact library.")
@_PACKAGE
@_model_options
def reconcile(package, script_file, **kw) -> None:
    """S1c: merge equivalent statements keeping provenance, keep conflict edges, compute verification states."""
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
    candidates = run_s2(Package(package), _endpoint(**kw), read_script(script_file), _note)
    _note(f"S2: {len(candidates)} candidate(s)")


@author.command("assemble", short_help="S3 and S4: screen the candidates, assemble and check the Omni-ART.")
@_PACKAGE
def assemble(package) -> None:
    """S3 screening (reasons kept, difficulty computed) and S4 assembly (slots, N/A reasons, caps), then the static
    checks of `snapshot validate`."""
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


@author.command("review", short_help="S5/S6: human review labels, repair routing, freeze or exclude.")
@_PACKAGE
@click.argument("labels", type=click.Path(path_type=Path))
def review(package, labels) -> None:
    """S5 human review of the package from a LABELS file (JSON Lines: round, rater, item, label), then S6."""
    pkg = Package(package)
    pkg.draft()
    _show(review_package(pkg, labels, _previous(pkg)), pkg)


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
def run(video, out_dir, request, like, subcategory, family, language, query_form, task_id, video_url,  # noqa: PLR0913
        routes, max_rounds, script_file, labels, **kw) -> None:  # Click passes one keyword per option
    """S0-S6: init, the evidence maps, reconciliation, generation, screening, assembly, review and repair."""
    endpoint = _endpoint(**kw)
    script = read_script(script_file)
    _init(video, out_dir, request, like, subcategory, family, language, query_form, task_id, video_url, routes,
          max_rounds)
    _show(author_all(Package(out_dir), endpoint, script, labels, _note), Package(out_dir))


@author.command("finish", short_help="S6 without review: freeze a package that passes the static checks.")
@_PACKAGE
def finish_cmd(package) -> None:
    """Freeze an assembled package on the static checks alone (no human review round)."""
    pkg = Package(package)
    _show(conclude(pkg, *run_s3_s4(pkg), None), pkg)


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
