"""Click commands of the end-to-end stage: `eval`, `compare` (run mode), `archive`, `rescore`.

Loaded on demand by the main group (STAGE_COMMANDS in omnidr/cli.py). Bad input raises `UserError`,
which `omnidr.cli.main` turns into one line and exit code 2.
"""

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

import click
from rich.markup import escape
from rich.table import Table

from omnidr._console import Fitted, make_console, print_tables
from omnidr._options import (
    EVALUATOR_OPTION,
    JUDGE_KEY_ENV_OPTION,
    JUDGE_OPTION,
    format_option,
    host_options,
    snapshot_given,
)
from omnidr.errors import UserError
from omnidr.paths import RESULT_FILES
from sandbox.models import Budget, ModelPolicy

from ._specs import CAPABILITIES, HARNESSES, SCRIPTED
from ._system_file import CONFIG_OPTION

out = make_console()
err = make_console(stderr=True)

_opts = [
    click.option("--model", default=SCRIPTED, show_default=True, envvar="OMNIDR_MODEL",
                 help="scripted (offline demo; scripted-openai / scripted-anthropic: as that kind of server), openai/NAME, "
                      "anthropic/NAME, NAME@BASE_URL (OpenAI-compatible), or NAME@anthropic+BASE_URL (Anthropic-"
                      "compatible; NAME@openai-chat+BASE_URL: without /v1/responses). reference, claude-code and codex run on "
                      "any of them (the gateway translates between the APIs); openclaw needs a real endpoint."),
    click.option("--model-key-env", default=None,
                 help="Variable holding the model key (default: OPENAI_API_KEY / ANTHROPIC_API_KEY / OMNIDR_MODEL_API_KEY)."),
    JUDGE_OPTION,
    JUDGE_KEY_ENV_OPTION,
    EVALUATOR_OPTION,
    click.option("--budget", default="default", show_default=True,
                 help="default, or KEY=VALUE,... over iterations, output_tokens, total_tokens, tool_calls, cost (US "
                      "dollars per attempt), wall_time, attempts, upstream_retries."),
    click.option("--prices", "prices_file", type=click.Path(path_type=Path, dir_okay=False), default=None,
                 help="JSON file of model prices (US dollars per million tokens) that adds to or overrides "
                      "genai-prices' table, e.g. {\"MODEL\": {\"input_per_mtok\": 3.0, \"output_per_mtok\": 15.0}}."),
    click.option("--max-connections", type=click.IntRange(min=1), default=None, metavar="N",
                 help="Upstream requests in flight at once per model API over all the run's gateways (default 64); "
                      "a 429 or 503 halves the limit and Retry-After pauses them all, successes grow it back."),
    click.option("--max-cost", type=click.FloatRange(min=0, min_open=True), default=None, metavar="USD",
                 help="US dollars this invocation may spend: attempts that could pass it are left unstarted, and a "
                      "rerun finishes them. Needs cost=USD in --budget."),
    click.option("--task", "tasks", multiple=True, help="Only this task id (repeatable); default: every task."),
    click.option("--runs-root", type=click.Path(path_type=Path), default=Path("runs"), show_default=True,
                 help="Run roots go to RUNS_ROOT/<snapshot id>/."),
    click.option("--parallel", type=click.IntRange(min=1), default=1, show_default=True, help="Tasks run at once."),
    click.option("--executor", default="local", show_default=True,
                 help="Where attempts run: local (threads here) or ray (a Ray cluster)."),
    click.option("--ray-address", default=None, help="Running Ray cluster (HOST:PORT); default: a local one."),
    click.option("--tracking-uri", default=None, help="MLflow store (default: sqlite in the run root)."),
    click.option("--provider-tools", default="default", show_default=True,
                 help="Provider-side tools (web search and fetch run by the model provider): allow (logged), deny, "
                      "denylist (the run's denylist in the tool's domain filter, denylisted results removed), or "
                      "KIND=POLICY,... over web_search, web_fetch, hosted. default: deny when the web is replayed, denylist "
                      "on the live web."),
    click.option("--wait", is_flag=True,
                 help="If another omnidr process is writing the run root, wait for it instead of stopping."),
]


_web_opts = [
    click.option("--web", type=click.Choice(["replay", "live", "record"]), default="replay", show_default=True,
                 help="The agents' web: replay serves the snapshot's corpus offline; live is the web through the "
                      "logging proxy (denylist applied); record is live and saves what was fetched as a corpus "
                      "(SYSTEM/web/) that `omnidr snapshot add-web` adds to a snapshot."),
    click.option("--search-door", metavar="PROVIDER@URL",
                 help="A search provider the research skills query through the egress proxy: searxng@URL or "
                      "brave@URL. Default: the offline index of the snapshot's corpus."),
    click.option("--search-key-env", metavar="VAR",
                 help="Host variable holding the search door's key, which the proxy injects (default "
                      "BRAVE_SEARCH_API_KEY for brave, none for searxng)."),
    click.option("--outside-network", default=None,
                 help="Docker network the gateway and the proxy reach out on (default: bridge)."),
    click.option("--allow-net", "allow_net", multiple=True, metavar="CIDR",
                 help="A range off the public internet the egress proxy may reach on the live web, e.g. an internal "
                      "mirror (repeatable). Without it, private, loopback and link-local destinations are refused."),
    click.option("--model-policy", type=click.Choice(get_args(ModelPolicy)), default="rewrite",
                 show_default=True,
                 help="What the gateway does with a model request naming another model than the system's: send it "
                      "with the system's model (rewrite), answer 400 (refuse), or send it as named (allow)."),
    click.option("--upstream-ca", "upstream_ca", multiple=True, type=click.Path(path_type=Path), metavar="PEM",
                 help="Extra CA certificate the egress proxy trusts for the live web's HTTPS (--web live or "
                      "record), e.g. an internal mirror's; repeatable."),
]


def _with_web_opts(f):
    for opt in reversed(_web_opts):
        f = opt(f)
    return f


def default_snapshot() -> Path:
    """snapshots/demo of the working folder, else the demo next to this package."""
    here = Path("snapshots/demo")
    if here.is_dir():
        return here
    bundled = Path(__file__).resolve().parents[2] / "snapshots" / "demo"
    return bundled if bundled.is_dir() else here


def auto_harness(harness: str, snapshot: Path) -> str:
    """`auto`: the direct harness for a multiple-choice snapshot (paper 004 evaluates models directly), else the
    reference agent; any other name as given."""
    if harness != "auto":
        return harness
    from .kinds import declared_kind

    kind = declared_kind(Path(snapshot))
    return kind.default_harness if kind is not None else "reference"


def eval_options(f):
    for opt in reversed(_opts):
        f = opt(f)
    return host_options(f)


def eval_request(snapshot: Path, systems: list, options: Mapping[str, Any], runs_root: Path | None = None):
    """The request that runs `systems` (SystemSpec) on `snapshot` under the eval options (`eval_options` and the web
    options, by their Click names; what is absent takes its default): each system's `SystemConfig` is built here,
    once, and travels whole to its attempts."""
    from omnidr.attempts import STALL_TIMEOUT_S, HostPolicy, load_prices, make_executor, spend_cap

    from ._eval import EvalRequest
    from ._system_file import system_config

    configs = [system_config(spec, options) for spec in systems]
    o = options
    # The snapshot is recorded by absolute path, so `make eval` and `omnidr eval --snapshot PATH` resume the same run.
    return EvalRequest(snapshot=Path(snapshot).absolute(), configs=configs, tasks=list(o.get("tasks") or ()) or None,
                       runs_root=runs_root or Path(o.get("runs_root") or "runs"), parallel=o.get("parallel") or 1,
                       executor=make_executor(o.get("executor") or "local", o.get("ray_address")),
                       tracking_uri=o.get("tracking_uri"), wait=bool(o.get("wait")),
                       prices=load_prices(o["prices_file"]) if o.get("prices_file") else None,
                       spend=spend_cap(o.get("max_cost"), configs[0].budget or Budget()),
                       max_connections=o.get("max_connections"),
                       host=HostPolicy(max_starts=o.get("max_starts"),
                                       stall_timeout_s=o.get("stall_timeout_s") or STALL_TIMEOUT_S))


def eval_system_request(snapshot: Path, options: Mapping[str, Any]):
    """`omnidr eval`'s request: its one system (`--harness`, `--capability`, `--model`) under its options."""
    from ._specs import make_system, parse_model

    system = make_system(auto_harness(options["harness"], snapshot), options["capability"],
                         parse_model(options["model"], options["model_key_env"]))
    return eval_request(snapshot, [system], options)


def run_with_progress(request, check_examples: bool = True, console=None):
    """Run the request with a live progress display and print its stages on `console` (default: stdout)."""
    console = console or out
    from ._eval import check_request, run_eval
    from ._progress import EvalProgress

    check_request(request)

    with EvalProgress(console) as progress:
        outcome = run_eval(request, progress, check_examples=check_examples)
    _stages(outcome.result, console)
    return outcome


def _stages(result, console=None, fmt: str = "terminal") -> None:
    console = console or out
    table = Table(title=f"omnidr eval {result.snapshot}")
    for col in ("stage", "status", "detail"):
        table.add_column(col, overflow="fold")
    for stage in result.stages:
        color = "green" if stage.status == "ok" else "red"
        table.add_row(stage.name, f"[{color}]{stage.status}[/{color}]", escape(stage.detail))
    if fmt != "terminal":
        print_tables(console, [table], fmt)
        return
    console.print(Fitted(lambda: table, frozenset({2})))
    for stage in result.stages:
        if stage.status == "failed":
            console.print(f"[red]failed: {escape(stage.name)}: {escape(stage.detail)}[/red]", soft_wrap=True)


def _where(outcome) -> None:
    if outcome.board is not None and outcome.kind is not None:  # the kind's leaderboard (and its tables)
        outcome.kind.print_board(outcome.board, outcome.run_root, out)
    if outcome.run_root is None:
        return
    root = outcome.run_root
    out.print(f"results in {root}", soft_wrap=True)
    for path in outcome.files:
        out.print(f"  {path.name:<17} {path}", soft_wrap=True)
    out.print("open them with:", soft_wrap=True)
    for line in open_hints(outcome):
        out.print(f"  {line}", soft_wrap=True)


def open_hints(outcome) -> list[str]:
    """Commands that work as printed, from any folder and without activating the venv: the
    programs by the full path of this installation, the run root by its absolute path."""
    import shlex

    bin_dir = Path(sys.executable).parent
    root = outcome.run_root
    lines = [f"xdg-open {shlex.quote(str(root / 'index.html'))}"]
    if outcome.tracking_uri and outcome.tracking_uri.startswith("sqlite:"):
        runs_url = "http://127.0.0.1:5000/#/experiments/" + (f"{outcome.experiment_id}/runs" if outcome.experiment_id else "")
        lines.append(f"{shlex.quote(str(bin_dir / 'mlflow'))} ui --backend-store-uri {shlex.quote(outcome.tracking_uri)}"
                     f"   (then {runs_url})")
    elif outcome.tracking_uri:
        lines.append(f"{outcome.tracking_uri.rstrip('/')}/#/experiments/{outcome.experiment_id or ''}")
    for s in outcome.systems:
        lines.append(f"{shlex.quote(str(bin_dir / 'omnidr'))} audit {shlex.quote(str(s.folder))}")
    return lines


@click.command("eval", short_help="Evaluate a system on a snapshot and write the run root.")
@click.argument("old_snapshot", metavar="[SNAPSHOT]", type=click.Path(path_type=Path), default=None, required=False)
@click.option("--snapshot", "snapshot", type=click.Path(path_type=Path), default=None,
              help="Snapshot folder (default: snapshots/demo, the bundled demo, offline).")
@click.option("--harness", default="auto", show_default=True, envvar="OMNIDR_HARNESS",
              help=f"One of {', '.join(HARNESSES)}; auto: direct for a multiple-choice snapshot, else reference.")
@click.option("--capability", default="full", show_default=True,
              help=f"Capability level (the paper's ladder; the research skills installed for reference, claude-code and codex): {', '.join(CAPABILITIES)}.")
@eval_options
@_with_web_opts
@CONFIG_OPTION
@click.option("--skip-agents", is_flag=True, help="Only check the snapshot and score its example reports; run no agent.")
@format_option("the results", "json and markdown print the run root's leaderboard.json or leaderboard.md (the "
               "stages' table with --skip-agents), the progress going to stderr")
@click.pass_context
def eval_(ctx: click.Context, **options) -> None:
    """Evaluate one system on a snapshot (default: the bundled demo, offline) and write the run root:
    attempts, evaluations, leaderboard.json/.md/.png, index.html and an MLflow store.

    Rerunning the same command resumes; other settings for an existing system folder are refused. The positional
    SNAPSHOT is the old spelling of --snapshot (kept for one release, with a notice).

    With `--config FILE`, the system comes from a TOML file (agent, budget, web, judge, evaluator; see
    examples/system.toml): an option given on the command line, or by its environment variable, wins over the file,
    and the file wins over the option's default. `run.json` in the system folder records the whole config.
    """
    from ._system_file import with_system_file

    o = with_system_file(ctx, options)
    fmt = o["fmt"]
    snapshot = snapshot_given(o["snapshot"], o["old_snapshot"], "eval") or default_snapshot()
    shown = out if fmt == "terminal" else err
    if o["skip_agents"]:
        from ._checks import EvalResult, check_snapshot

        result = EvalResult(snapshot)
        result.stages += check_snapshot(snapshot, lambda m: shown.print(f"  {m}", soft_wrap=True)).stages
        _stages(result, shown, fmt)
        sys.exit(1 if result.failed else 0)
    request = eval_system_request(snapshot, o)
    outcome = run_with_progress(request, console=shown)
    if fmt == "terminal":
        _where(outcome)
    elif outcome.run_root is not None and (outcome.run_root / RESULT_FILES[0]).is_file():
        click.echo((outcome.run_root / RESULT_FILES[0 if fmt == "json" else 1]).read_text("utf-8").rstrip("\n"))
    if outcome.result.failed:
        sys.exit(1)


@click.command("compare", short_help="Compare systems on the same tasks under one budget.")
@click.argument("folders", nargs=-1, type=click.Path(path_type=Path))
@click.option("--system", "systems", multiple=True,
              help="HARNESS[:CAPABILITY][@MODEL] to run (repeatable, two or more); MODEL defaults to --model.")
@click.option("--snapshot", "snapshot_path", type=click.Path(path_type=Path), default=None,
              help="Snapshot folder (default: with FOLDERS, the one their run.json names; else snapshots/demo).")
@eval_options
@_with_web_opts
@CONFIG_OPTION
@format_option("the comparison", "json and markdown print the comparison file written to the run root's "
               "comparisons/, the progress going to stderr")
@click.pass_context
def compare(ctx, folders, systems, snapshot_path, fmt, **options) -> None:
    """Run two or more systems on the same tasks under the same budget, then pair each other system with
    the first (A minus B, A the higher-ranked of the two, as the paper reads a pair: paired difference,
    task-bootstrap interval, wins/ties/losses per task) and print the per-task scores, as the paper's
    harness and ablation tables.

    `omnidr compare --system reference:full --system reference:video` runs both (full minus video, when full
    scores higher);
    `omnidr compare FOLDER FOLDER ...` does the same for system folders `omnidr eval` already scored,
    running nothing (a run root stands for all its system folders). Two folders holding system.json and
    decisions get the scoring stage's comparison of the two. `--config FILE` gives the shared settings (budget,
    web, judge, evaluator, the default model) as `omnidr eval --config` does; the systems come from --system.
    """
    from ._system_file import with_system_file

    o = with_system_file(ctx, options)
    if folders:
        if systems:
            raise UserError("give either system folders or --system options, not both")
        from ._compare import compare_folders, evaluated_folders, expand_run_roots
        from ._inputs import recorded_snapshot

        snapshot_path = snapshot_path or recorded_snapshot(folders) or default_snapshot()

        missing = [f for f in folders if not Path(f).is_dir()]
        if missing:
            raise UserError(f"{missing[0]}: no such folder; pass system folders written by `omnidr eval` "
                            "(runs/<snapshot id>/<system>)")
        folders = expand_run_roots(folders)
        evaluated = [evaluated_folders([f]) for f in folders]
        if any(evaluated) and not all(evaluated):
            odd = folders[evaluated.index(False)]
            raise UserError(f"{odd} is not a system folder written by `omnidr eval` (no eval.json), unlike "
                            f"{folders[evaluated.index(True)]}; pass folders of one kind")
        if evaluated_folders(folders):
            if len(folders) < 2:
                raise UserError("compare needs two or more system folders")
            compare_folders(list(folders), snapshot_path, out if fmt == "terminal" else err, fmt)
            return
        from ._scoring_cli import Ranking, compare_two  # system.json + decisions folders

        if len(folders) != 2:
            raise UserError(f"decisions folders are compared two at a time; got {len(folders)}")
        compare_two(folders[0], folders[1], Ranking(snapshot_path=snapshot_path, tasks=tuple(o["tasks"])), fmt)
        return
    snapshot_path = snapshot_path or default_snapshot()
    if len(systems) < 2:
        raise UserError("compare needs two or more --system options (e.g. --system reference:full --system reference:video)")
    from ._compare import run_comparison
    from ._specs import parse_model, parse_system

    default_model = parse_model(o["model"], o["model_key_env"])
    specs = [parse_system(s, default_model) for s in systems]
    labels = [s.label for s in specs]
    if len(set(labels)) != len(labels):
        raise UserError(f"the systems are not distinct: {', '.join(labels)}")
    request = eval_request(snapshot_path, specs, o)
    outcome = run_with_progress(request, check_examples=False, console=out if fmt == "terminal" else err)
    if outcome.result.failed and outcome.board is None:
        sys.exit(1)
    run_comparison(outcome, request, out if fmt == "terminal" else err, fmt)
    if outcome.result.failed:
        sys.exit(1)
