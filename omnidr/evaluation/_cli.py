"""Click commands of the evaluation stage: `score` (a run folder) and `probe` (one report folder).

Standalone commands; the main `omnidr` group loads them on demand (STAGE_COMMANDS in omnidr/cli.py). Bad input
raises `UserError`, which `omnidr.cli.main` (or `python -m omnidr.evaluation`) turns into one
line and exit code 2.
"""

import json
import sys
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from omnidr._console import make_console, print_tables
from omnidr._options import (
    EVALUATOR_OPTION,
    JUDGE_KEY_ENV_OPTION,
    JUDGE_OPTION,
    deprecated,
    format_option,
    output_format,
    parse_judge_spec,
)
from omnidr.errors import UserError

from ._answer_run import read_answer_run
from ._evaluate import probe_folder
from ._judge import JudgeSettings
from ._models import RunEvaluation
from ._probes import Call
from ._request import ScoreRequest
from ._run import probe_run, read_run_config, read_scored_run, score_run

out = make_console()
err = make_console(stderr=True)


def judge_settings(judge: str | None, key_env: str | None, concurrency: int, timeout_s: float, base_url: str | None = None,
                   model: str | None = None) -> JudgeSettings | None:
    """Judge settings from `--judge` and `--judge-key-env`, or None for the offline baseline. `base_url` and `model`
    are the old `--judge-base-url` and `--judge-model`, kept for one release with a notice."""
    if base_url or model:
        if not (base_url and model):
            raise UserError("--judge-base-url and --judge-model go together (better: --judge MODEL@BASE_URL)")
        deprecated("--judge-base-url URL --judge-model NAME (and OMNIDR_JUDGE_BASE_URL, OMNIDR_JUDGE_MODEL)",
                   f"--judge {model}@{base_url}")
        judge = f"{model}@{base_url}"
    spec = parse_judge_spec(judge, key_env)
    if spec is None:
        return None
    return JudgeSettings(base_url=spec.base_url, model=spec.name, api_key_env=spec.key_env, concurrency=concurrency,
                         timeout_s=timeout_s)


def _print_answers(summary: RunEvaluation, out_dir: Path, fmt: str) -> None:
    _, evaluations = read_answer_run(out_dir)
    table = Table(title=f"omnidr score {summary.run_dir}")
    for col in ("task", "attempt", "answer", "ended", "verdict", "by", "reason"):
        table.add_column(col, overflow="fold")
    for ev in evaluations:
        answer = "-" if ev.answer is None else (ev.answer.strip()[:80] or "(empty)")
        if ev.verdict is None:
            verdict, by, reason = "[red]NOT FINAL[/red]", "-", ev.incomplete or ""
        else:
            verdict = "[green]correct[/green]" if ev.correct else "[red]incorrect[/red]"
            by = "rule" if ev.hard_rule else ("cache" if ev.cached else
                                              "match" if summary.judge.checks_key else "judge")
            reason = ev.verdict.reason + (f"; NOT FINAL: {ev.incomplete}" if ev.incomplete else "")
        table.add_row(ev.task_id, str(ev.attempt or "-"), escape(answer), ev.termination or "-", verdict, by,
                      escape(reason))
    print_tables(out, [table], fmt, prose={0: frozenset({2, 6})})
    u = summary.judge_usage
    if summary.judge.checks_key:
        unparseable = sum(1 for ev in evaluations if ev.unparseable)
        out.print(f"checked by {summary.judge.label} (no judge call); {unparseable} unparseable answer(s), counted "
                  "wrong", soft_wrap=True, markup=False)
    else:
        out.print(f"judge {summary.judge.label}; {u.calls} call(s), {u.cache_hits} cached verdict(s), "
                  f"{u.failed_votes} unanswered, {u.input_tokens} input + {u.output_tokens} output tokens",
                  soft_wrap=True, markup=False)
    pending = [t.task_id for t in summary.tasks if t.incomplete]
    if pending:
        out.print(f"[red]not final: {', '.join(pending)}; the accuracy below is provisional. Rerun the same command "
                  "to finish them[/red]", soft_wrap=True)
    right = sum(1 for t in summary.tasks if t.correct)
    out.print(f"accuracy {summary.mean_total:.2f}% ({right}/{len(summary.tasks)} correct); evaluations in {out_dir}",
              soft_wrap=True, markup=False)


def _print_summary(summary: RunEvaluation, out_dir: Path, fmt: str = "terminal") -> None:
    if fmt == "json":
        click.echo(summary.model_dump_json(indent=2))
        return
    if summary.task_kind.delivers_answer:
        _print_answers(summary, out_dir, fmt)
        return
    _, evaluations = read_scored_run(out_dir)
    table = Table(title=f"omnidr score {summary.run_dir}")
    for col in ("task", "attempt", "score", "C", "R", "P", "M pass", "J pass", "skipped", "note"):
        table.add_column(col, overflow="fold")
    for ev in evaluations:
        dims = {k.value: f"{v.score:.1f}" for k, v in ev.score.dimensions.items()}
        m = [a for a in ev.atoms if a.evaluator == "M"]
        j = [a for a in ev.atoms if a.evaluator == "J"]
        faults = len(ev.session.faults) if ev.session else 0
        note = ev.failure or (f"{faults} page fault(s)" if faults else "")
        if ev.incomplete:
            note = f"NOT FINAL: {ev.incomplete}" + (f"; {note}" if note else "")
        table.add_row(ev.task_id, str(ev.attempt or "-"), f"{ev.score.total:.1f}", dims.get("C", "-"), dims.get("R", "-"),
                      dims.get("P", "-"), f"{sum(a.outcome == 'pass' for a in m)}/{len(m)}",
                      f"{sum(a.outcome == 'pass' for a in j)}/{len(j)}", str(ev.skipped_atoms), note)
    print_tables(out, [table], fmt, prose={0: frozenset({9})})
    u = summary.judge_usage
    out.print(f"judge {summary.judge.key}: {u.calls} call(s), {u.cache_hits} cached vote(s), {u.failed_votes} failed vote(s), "
              f"{u.input_tokens} input + {u.output_tokens} output tokens", soft_wrap=True)
    pending = [t.task_id for t in summary.tasks if t.incomplete]
    if pending:
        out.print(f"[red]not final: {', '.join(pending)}; the mean below is provisional. Rerun the same command to "
                  "finish them[/red]", soft_wrap=True)
    out.print(f"mean score {summary.mean_total:.2f} over {len(summary.tasks)} task(s); evaluations in {out_dir}", soft_wrap=True)


@click.command("score", short_help="Score what every task of a run folder delivered.")
@click.argument("run_dir", type=click.Path(path_type=Path), required=False)
@click.option("--snapshot", "snapshot_path", type=click.Path(path_type=Path), default=None,
              help="Snapshot the run used (default: the one named in run.json).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=None,
              help="Output folder for evaluation.json files (default: RUN_DIR/evaluation).")
@click.option("--task", "tasks", multiple=True, help="Only this task id (repeatable).")
@JUDGE_OPTION
@JUDGE_KEY_ENV_OPTION
@click.option("--judge-base-url", envvar="OMNIDR_JUDGE_BASE_URL", default=None, hidden=True,
              help="Deprecated: --judge MODEL@BASE_URL.")
@click.option("--judge-model", envvar="OMNIDR_JUDGE_MODEL", default=None, hidden=True,
              help="Deprecated: --judge MODEL@BASE_URL.")
@click.option("--judge-concurrency", type=click.IntRange(min=1), default=8, show_default=True, help="Judge calls in flight.")
@click.option("--judge-timeout", "judge_timeout_s", type=click.FloatRange(min=0.1), default=120.0, show_default=True,
              help="Seconds per judge call.")
@click.option("--cache-dir", type=click.Path(path_type=Path), default=None, help="Judge cache folder (default: OUT/judge-cache).")
@EVALUATOR_OPTION
@click.option("--step", type=click.Choice(["probe", "judge"]), default=None, hidden=True,
              help="One step, in this process (what the evaluator image's containers run).")
@click.option("--probe-dir", type=click.Path(path_type=Path), default=None, hidden=True,
              help="The probe step's output, for --step judge.")
@format_option("the results", "json is summary.json", legacy_json=True)
@click.option("--wait", is_flag=True, help="If another omnidr process is writing OUT, wait for it instead of stopping.")
def score(**options) -> None:
    """Evaluate what every task of RUN_DIR delivered and write one evaluation.json per task.

    Report tasks: M atoms are decided by browser probes of the rendered report, J atoms by the
    judge (three votes for gate atoms); a task whose last attempt delivered no report, or whose
    report is missing or unreadable, scores 0 as a failure. Short-answer tasks (the snapshot's
    task kind says which): the answer judge compares each answer with the reference; no answer,
    a refusal or a failed execution is incorrect. A result that is not final (the judge did not
    answer, or the last attempt was ended by an outage) is marked so, and the command exits 1.
    """
    o = options
    settings = judge_settings(o["judge"], o["judge_key_env"], o["judge_concurrency"], o["judge_timeout_s"],
                              o["judge_base_url"], o["judge_model"])
    fmt = output_format(o["fmt"], o["as_json"])
    note = lambda m: err.print(f"  {m}", soft_wrap=True, markup=False)  # noqa: E731
    request = ScoreRequest(run_dir=o["run_dir"], out_dir=o["out_dir"], snapshot=o["snapshot_path"],
                           judge_settings=settings, tasks=o["tasks"] or None, cache_dir=o["cache_dir"],
                           evaluator=o["evaluator"], step=o["step"] or "all", probe_dir=o["probe_dir"])
    if o["step"] is not None:  # inside the evaluator image: one step, in this process, output folder given
        _score_step(request, fmt, note)
        return
    run_dir = request.run_dir
    if run_dir is None:
        raise UserError("give RUN_DIR, the run folder to score (made by `omnidr run` or `omnidr eval`)")
    target = request.target
    if settings is not None:
        from omnidr._reach import require_answer

        require_answer(settings.base_url, "judge", "--judge")
    if request.evaluator == "docker" and request.cache_dir is not None:
        raise UserError("--cache-dir applies to `--evaluator host` only: the evaluator image keeps its cache in "
                        "OUT/judge-cache")
    read_run_config(run_dir)  # a missing folder or run.json is one line, before the lock makes any folder
    from omnidr._lock import folder_lock

    with folder_lock(target, wait=o["wait"], on_wait=note):  # one driver per output folder
        if request.evaluator == "docker":
            from ._container import score_in_container

            summary = score_in_container(request.model_copy(update={"out_dir": target}), progress=note)
        else:
            summary = score_run(request.model_copy(update={"out_dir": target}), progress=note)
    _print_summary(summary, target, fmt)
    if any(t.incomplete for t in summary.tasks):
        sys.exit(1)  # a score that is not final is not a success


def _score_step(request: ScoreRequest, fmt: str, note) -> None:
    """One step of `score`, in this process (what the evaluator image's containers run), output folder given."""
    if request.out_dir is None or (request.step == "judge") != (request.run_dir is None):
        raise UserError("--step probe takes RUN_DIR and --out; --step judge takes --probe-dir and --out, no RUN_DIR")
    if request.step == "probe":
        assert request.run_dir is not None
        probe_run(request.run_dir, request.out_dir, request.snapshot, request.tasks, progress=note)
        return
    summary = score_run(request.model_copy(update={"tasks": None, "cache_dir": None}), progress=note)
    _print_summary(summary, request.out_dir, fmt)


def _parse_probe(spec: str) -> Call:
    """`name` or `name:key=value,key=value` (values parsed as JSON when they can be)."""
    name, _, rest = spec.partition(":")
    params = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise UserError(f"--probe {spec}: write parameters as key=value")
        try:
            params[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            params[key.strip()] = value
    return Call(name=name.strip(), params=params)


@click.command("probe", short_help="Run browser probes on one report folder.")
@click.argument("report_dir", type=click.Path(path_type=Path))
@click.option("--snapshot", "snapshot_path", type=click.Path(path_type=Path), default=None,
              help="Snapshot whose task gives the probes (its M atoms) and the source video's duration.")
@click.option("--task", "task_id", default=None, help="Task id in --snapshot.")
@click.option("--probe", "probes", multiple=True,
              help="Probe to run instead, as name or name:key=value,... (repeatable), e.g. timestamp_seeks:time_s=24.")
@click.option("--screenshots", type=click.Path(path_type=Path), default=None, help="Write screenshots to this folder.")
@format_option("the results", "json holds the results and the session", legacy_json=True)
def probe(report_dir: Path, snapshot_path: Path | None, task_id: str | None, probes: tuple[str, ...],
          screenshots: Path | None, fmt: str, as_json: bool) -> None:
    """Run browser probes on one report folder and print what each found (no judge, no score).

    Give --snapshot and --task to run the task's M atoms, or --probe to name probes directly.
    """
    if not Path(report_dir).is_dir():
        raise UserError(f"{report_dir}: no such report folder; pass the folder that holds the report's entry page "
                        "(e.g. an attempt's output/report)")
    outcome, calls = probe_folder(report_dir, [_parse_probe(p) for p in probes], snapshot_path, task_id, screenshots)
    ordered = [outcome.result(c) for c in calls]
    if (fmt := output_format(fmt, as_json)) == "json":
        click.echo(json.dumps({"results": [r.model_dump(mode="json") for r in ordered],
                               "session": outcome.session.model_dump(mode="json")}, indent=2, ensure_ascii=False))
        return
    table = Table(title=f"omnidr probe {report_dir}")
    for col in ("probe", "params", "result", "reason"):
        table.add_column(col, overflow="fold")
    for r in ordered:
        color = "green" if r.status == "pass" else "red"
        table.add_row(r.name, json.dumps(r.params) if r.params else "", f"[{color}]{r.status}[/{color}]", escape(r.reason))
    print_tables(out, [table], fmt, prose={0: frozenset({3})})
    s = outcome.session
    for f in s.faults:
        out.print(f"[yellow]fault {f.kind}: {f.detail}[/yellow]", soft_wrap=True)
    if s.blocked_total:
        out.print(f"[yellow]{s.blocked_total} request(s) outside the report folder were refused[/yellow]")

"""Click commands to register on the `omnidr` group."""
