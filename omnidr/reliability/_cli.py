"""`omnidr labels import`, `omnidr judge stability`, `omnidr judge agreement` and `omnidr calibrate` (the main group
loads them on demand)."""

import sys
from pathlib import Path

import click

from omnidr._console import make_console
from omnidr._options import EVALUATOR_OPTION, JUDGE_KEY_ENV_OPTION, JUDGE_SPELLINGS, format_option, snapshot_given
from omnidr.errors import UserError
from omnidr.harness import HARNESSES
from omnidr.pipeline import eval_options
from omnidr.scoring import Grid, pct

from ._agreement import Agreement, agreement
from ._plots import group_bars
from ._stability import Stability, score_repeats, stability_of
from ._store import RELIABILITY_DIR, import_labels, log_reliability, machine_reports, stored_labels

_ROOT = click.argument("run_root", type=click.Path(path_type=Path))


@click.group("labels", short_help="Import human labels of generated reports.")
def labels() -> None:
    """Human labels of generated reports (paper App. A.5-A.6)."""


@labels.command("import", short_help="Check a labels file and add it to a run root.")
@click.argument("file", type=click.Path(path_type=Path))
@_ROOT
def labels_import(file: Path, run_root: Path) -> None:
    """Check a JSON Lines labels FILE against RUN_ROOT's evaluations and add it to RUN_ROOT/labels/labels.jsonl.

    Each line: {"rater", "system", "task", "atom", "verdict": "pass"|"fail"|"na"}, or a holistic
    rating {"rater", "system", "task", "rating": 1-5}. A later label of the same rater replaces an earlier one.
    """
    new, target = import_labels(file, run_root)
    atoms = sum(1 for x in new if x.atom is not None)
    reports = len({x.report for x in new})
    make_console().print(f"imported {atoms} atom label(s) and {len(new) - atoms} rating(s) by "
                         f"{len({x.rater for x in new})} rater(s) on {reports} report(s) into {target}", soft_wrap=True)


@click.group("judge", short_help="Measure how far the judge can be trusted.")
def judge() -> None:
    """How far the judge can be trusted: repeat-scoring stability, agreement with human labels."""


@judge.command("stability", short_help="Score reports again; measure the judge's stability.")
@_ROOT
@click.option("--repeats", default=3, show_default=True, type=click.IntRange(2), help="Times each report is scored.")
@click.option("--judge", "judge_text", default=None,
              help=f"The judge: {JUDGE_SPELLINGS}, as for `omnidr eval` (default: the judge the run root was scored "
                   "with).")
@JUDGE_KEY_ENV_OPTION
@click.option("--snapshot", "snapshot", type=click.Path(path_type=Path), default=None,
              help="The snapshot the run used (default: the path its run.json names).")
@click.option("--replicates", default=2000, show_default=True, type=click.IntRange(100),
              help="Bootstrap replicates over reports.")
@EVALUATOR_OPTION
@format_option("the results", "json and markdown print the file written to RUN_ROOT/reliability/")
def judge_stability(run_root: Path, repeats: int, judge_text: str | None, judge_key_env: str | None,
                    snapshot: Path | None, replicates: int, evaluator: str, fmt: str) -> None:
    """Score every delivered report of RUN_ROOT REPEATS times with an empty judge cache and report the
    share of applicable criteria whose decision is not unanimous: per report, per direction and
    overall (App. E.4). The repeats, votes included, stay in RUN_ROOT/reliability/stability/."""
    from omnidr.pipeline import judge_settings, parse_judge, read_eval_config, require_key

    if judge_text is None:
        configs = [c for p in sorted(Path(run_root).glob("*/")) if (c := read_eval_config(p)) is not None]
        endpoint = configs[0].judge if configs else parse_judge(None)
    else:
        endpoint = parse_judge(judge_text, judge_key_env)
    require_key(endpoint, "judge")
    out = make_console(stderr=fmt != "terminal")
    with out.status("scoring again") as status:
        def progress(m: str) -> None:
            status.update(m)
            out.print(f"  {m}", soft_wrap=True)

        outcomes, key = score_repeats(run_root, repeats, judge_settings(endpoint), snapshot, progress=progress,
                                      evaluator=evaluator)
    result = stability_of(outcomes, key, replicates=replicates)
    _publish(run_root, "stability", result, stability_grids(result), {
        "non_unanimous_mean": result.mean_rate.value, "non_unanimous_pooled": result.pooled_rate,
        "repeats": float(result.repeats)},
        lambda path: group_bars(path, [d.direction for d in result.by_direction],
                                     {"non-unanimous": [d.rate for d in result.by_direction]},
                                     "non-unanimous share of applicable criteria (%)"), out, fmt)


def stability_grids(s: Stability) -> list[Grid]:
    m = s.mean_rate
    interval = "" if m.low is None else f", 95% CI [{pct(m.low)}, {pct(m.high)}]"
    head = (f"Repeat-scoring stability: judge {s.judge}, {s.repeats} repeats; non-unanimous "
            f"{pct(m.value)} of applicable criteria on average over {m.n} report(s){interval}; pooled "
            f"{pct(s.pooled_rate)}")
    reports = Grid(head, ["system", "task", "applicable", "non-unanimous", "rate", "atoms"],
                   [[r.system, r.task, str(r.applicable), str(len(r.non_unanimous)), pct(r.rate),
                     ", ".join(r.non_unanimous[:8]) + (" ..." if len(r.non_unanimous) > 8 else "")] for r in s.reports],
                   frozenset({2, 3, 4}))
    directions = Grid("By direction (pooled over reports)", ["direction", "applicable", "non-unanimous", "rate"],
                      [[d.direction, str(d.applicable), str(d.non_unanimous), pct(d.rate)] for d in s.by_direction],
                      frozenset({1, 2, 3}))
    return [reports, directions]


@judge.command("agreement", short_help="Compare the judge with human labels.")
@_ROOT
@click.option("--replicates", default=2000, show_default=True, type=click.IntRange(100),
              help="Bootstrap replicates over reports.")
@click.option("--seed", default=0, show_default=True, type=int, help="Bootstrap seed.")
@format_option("the results", "json and markdown print the file written to RUN_ROOT/reliability/")
def judge_agreement(run_root: Path, replicates: int, seed: int, fmt: str) -> None:
    """Human unanimity, machine agreement with the human majority, kappas and Spearman against the
    holistic ratings, with bootstrap intervals and per dimension and direction; written to
    RUN_ROOT/reliability/agreement.json and .md."""
    result = agreement(stored_labels(run_root), machine_reports(run_root), replicates=replicates, seed=seed)
    _publish(run_root, "agreement", result, agreement_grids(result), {
        "unanimity": result.unanimity.value, "machine_agreement": result.machine_agreement.value,
        "cohen_kappa": result.cohen_kappa, "fleiss_kappa": result.fleiss_kappa, "spearman": result.spearman.value},
        lambda path: group_bars(path, [g.group for g in result.by_direction],
                                     {"human unanimity": [g.unanimity for g in result.by_direction],
                                      "machine = majority": [g.machine_agreement for g in result.by_direction]},
                                     "share of labelled atoms (%)"), fmt=fmt)


def _publish(run_root: Path, name: str, result, grids: list[Grid], metrics: dict, plot, out=None,
             fmt: str = "terminal") -> None:
    """RUN_ROOT/reliability/<name>.json, .md and .png (by direction), the tables on the console (or the .json or
    the .md on stdout, by `fmt`), the figures in MLflow."""
    folder = Path(run_root) / RELIABILITY_DIR
    folder.mkdir(parents=True, exist_ok=True)
    files = [folder / f"{name}.json", folder / f"{name}.md", folder / f"{name}.png"]
    files[0].write_text(result.model_dump_json(indent=2), "utf-8")
    plot(files[2])
    files[1].write_text("\n\n".join(g.markdown() for g in grids) + f"\n\n![{name} by direction]({files[2].name})\n",
                        "utf-8")
    out = out or make_console(stderr=fmt != "terminal")
    if fmt == "terminal":
        for g in grids:
            out.print(g.rich())
    else:
        click.echo(files[0 if fmt == "json" else 1].read_text("utf-8").rstrip("\n"))
    uri = log_reliability(run_root, name, metrics, files)
    out.print(f"wrote {files[0]} and {files[1]}" + (f"; logged to MLflow {uri}" if uri else ""), soft_wrap=True)


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def agreement_grids(a: Agreement) -> list[Grid]:
    def ci(e, fmt) -> str:
        return "-" if e.low is None else f"[{fmt(e.low)}, {fmt(e.high)}]"

    main = Grid(
        f"Agreement: {a.reports} report(s), {a.atoms} labelled atom(s), raters {', '.join(a.raters)} "
        f"({a.replicates} bootstrap replicates over reports)",
        ["measure", "value", "95% CI", "over"],
        [["human unanimity", pct(a.unanimity.value), ci(a.unanimity, pct), f"{a.unanimity.n} atoms with 2+ labels"],
         ["machine = human majority", pct(a.machine_agreement.value), ci(a.machine_agreement, pct),
          f"{a.machine_agreement.n} atoms"],
         ["Cohen's kappa (machine, majority)", _num(a.cohen_kappa), "", f"{a.machine_agreement.n} atoms"],
         ["Fleiss' kappa (raters)", _num(a.fleiss_kappa), "", f"atoms with {a.fleiss_raters} labels"],
         ["Spearman (total, rating)", _num(a.spearman.value), ci(a.spearman, _num), f"{a.spearman.n} rated reports"]],
        frozenset({1, 2}))
    groups = [Grid(f"By {name}", [name, "atoms", "unanimity", "machine = majority"],
                   [[g.group, str(g.atoms), pct(g.unanimity), pct(g.machine_agreement)] for g in rows],
                   frozenset({1, 2, 3}))
              for name, rows in (("dimension", a.by_dimension), ("direction", a.by_direction))]
    return [main, *groups]


@click.command("calibrate", short_help="Check a snapshot's behavioural calibration.")
@click.argument("old_snapshot", metavar="[SNAPSHOT]", type=click.Path(path_type=Path), default=None, required=False)
@click.option("--snapshot", "snapshot", type=click.Path(path_type=Path), default=None,
              help="The snapshot to calibrate (required).")
@click.option("--harness", default="reference", show_default=True, help=f"One of {', '.join(HARNESSES)}.")
@eval_options
@format_option("the result", "json and markdown print the run root's reliability/calibration.json or .md, the progress "
               "going to stderr")
def calibrate(old_snapshot: Path | None, snapshot: Path | None, harness: str, fmt: str, **options) -> None:
    """Behavioural calibration of SNAPSHOT (paper App. E.4): one model under one harness writes three
    reports per task, R1 without web search (capability video), R2 with the full tools, R3 with the
    full tools and the task's evidence brief, and every task must satisfy R1 < R2 < R3 with R3 - R1
    above the snapshot's calibration_gap.

    The runs go to RUNS_ROOT/calibration/<snapshot id>/ (rerunning resumes). The result is written to
    SNAPSHOT/calibration.json, which `omnidr snapshot validate` and `freeze` check, and to the run
    root's reliability/calibration.json, .md and .png. Exit code 1 when a task fails the check. The positional
    SNAPSHOT is the old spelling of --snapshot (kept for one release, with a notice).
    """
    from omnidr.benchmark import MANIFEST_FILE

    from ._calibration import calibration_grid, run_calibration, systems_line

    out = make_console(stderr=fmt != "terminal")
    snapshot = snapshot_given(snapshot, old_snapshot, "calibrate")
    if snapshot is None:
        raise UserError("give --snapshot PATH, the snapshot to calibrate")
    if not Path(snapshot).is_dir():
        raise UserError(f"snapshot folder {snapshot} does not exist; pass the snapshot to calibrate")
    outcome, result = run_calibration(snapshot, harness, out, options)  # the eval options, by their Click names
    if result is None:
        sys.exit(1)
    if result.problem is not None or result.calibration is None:
        out.print(f"[red]not calibrated: {result.problem}[/red]", soft_wrap=True)
        sys.exit(1)
    if fmt == "terminal":
        out.print(calibration_grid(result.calibration, result.gap).rich())
        out.print(systems_line(result.calibration), soft_wrap=True)
    else:
        click.echo(result.files[1 if fmt == "json" else 2].read_text("utf-8").rstrip("\n"))
    for task, problem in result.failed.items():
        out.print(f"[red]calibration fails for {task}: {problem}[/red]", soft_wrap=True)
    files, uri = result.files, result.tracking_uri
    out.print(f"wrote {files[0]} and {files[2]}" + (f"; logged to MLflow {uri}" if uri else ""), soft_wrap=True)
    if (Path(snapshot) / MANIFEST_FILE).is_file():
        out.print(f"the snapshot changed: freeze it again (`omnidr snapshot freeze {snapshot}`); freezing refuses a "
                  "task that fails calibration unless a review decision keeps it", soft_wrap=True)
    if result.failed or outcome.result.failed:
        sys.exit(1)
