"""The scoring commands as a user runs them: aggregate, na-order, leaderboard, compare.

Commands are invoked through a small click group holding the scoring commands (CliRunner). Bad
input must raise UserError, which `omnidr.cli.main` prints as one line with exit code 2; the
last tests go through the real `omnidr` entry point once the commands are registered there.
"""

import json
import random
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from scoring_trees import atom, many, passes, tree
from testkit import DEMO, run_cli

from omnidr.benchmark import RubricTree
from omnidr.errors import UserError
from omnidr.pipeline._scoring_cli import CLI_COMMANDS
from omnidr.scoring import Leaderboard, PairedComparison, ReportScore, score_report


@click.group()
def group() -> None:
    """Test group holding the scoring commands."""


for command in CLI_COMMANDS:
    group.add_command(command)


def invoke(*args) -> "click.testing.Result":
    return CliRunner().invoke(group, [str(a) for a in args])


def user_error(*args) -> str:
    """Run a command that must fail with a UserError; return its message."""
    result = invoke(*args)
    assert isinstance(result.exception, UserError), (result.output, result.exception)
    assert result.exception.exit_code == 2
    return str(result.exception)


def write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = data.model_dump_json(indent=2) if hasattr(data, "model_dump_json") else json.dumps(data, indent=2)
    path.write_text(text, "utf-8")
    return path


def kept_tree() -> tuple[RubricTree, dict]:
    atoms = many("fc", "C-FC", 19) + [atom("fc19", "C-FC", "F1")] + many("cs", "R-CS", 9)
    atoms += [atom("cs09", "R-CS", "F1")] + many("ly", "P-LY", 2)
    d = passes([f"fc{i:02d}" for i in range(20)], 2) | passes([f"cs{i:02d}" for i in range(10)], 5) | passes(["ly00", "ly01"], 2)
    return tree("t1", atoms), d


@pytest.fixture
def files(tmp_path: Path):
    t, d = kept_tree()
    rubric = write(tmp_path / "rubric.json", t)
    decisions = write(tmp_path / "decisions.json", {"task_id": "t1", "decisions": d})
    return tmp_path, rubric, decisions


# -- aggregate ----------------------------------------------------------------------------------


def test_aggregate_prints_the_report_score(files):
    _, rubric, decisions = files
    r = invoke("aggregate", "--rubric", rubric, "--decisions", decisions)
    assert r.exit_code == 0, r.output
    assert "64.4" in r.output  # 100 * (0.8 * 5/9 + 0.2), see test_scoring_na_guard.py
    assert "N/A guard: 1 candidate(s), 1 applied [cs09], 0 retracted" in r.output


def test_aggregate_json_is_the_report_score(files):
    _, rubric, decisions = files
    r = invoke("aggregate", "--rubric", rubric, "--decisions", decisions, "--format", "json")
    assert r.exit_code == 0, r.output
    s = ReportScore.model_validate_json(r.output)
    t, d = kept_tree()
    assert s == score_report(t, d)


def test_aggregate_without_guard(files):
    _, rubric, decisions = files
    r = invoke("aggregate", "--rubric", rubric, "--decisions", decisions, "--no-na-guard", "--format", "json")
    s = ReportScore.model_validate_json(r.output)
    assert s.na_guard.applied == 0 and round(s.total, 1) == 62.8


def test_aggregate_reports_missing_decisions_as_skipped(files):
    tmp, rubric, _ = files
    t, d = kept_tree()
    del d["fc03"], d["ly01"]
    decisions = write(tmp / "partial.json", {"task_id": "t1", "decisions": d})
    r = invoke("aggregate", "--rubric", rubric, "--decisions", decisions)
    assert r.exit_code == 0, r.output
    assert "skipped: 2 atom(s) not scored, of which 2 without a decision: fc03, ly01" in r.output


def test_aggregate_failed_report_scores_zero(files):
    tmp, rubric, _ = files
    decisions = write(tmp / "failed.json", {"task_id": "t1", "failure": "report missing"})
    r = invoke("aggregate", "--rubric", rubric, "--decisions", decisions, "--format", "json")
    s = ReportScore.model_validate_json(r.output)
    assert s.failed and s.total == 0


def test_aggregate_with_hyperparameters_file(files):
    tmp, rubric, decisions = files
    hp = write(tmp / "hp.json", {"dimension_weights": {"C": 1, "R": 0, "P": 0}})
    r = invoke("aggregate", "--rubric", rubric, "--decisions", decisions, "--hyperparameters", hp, "--format", "json")
    assert ReportScore.model_validate_json(r.output).total == pytest.approx(100 * 0.1 / 0.18)


# -- bad input ------------------------------------------------------------------------------------


def test_decision_for_an_atom_the_tree_lacks(files):
    tmp, rubric, _ = files
    _, d = kept_tree()
    bad = write(tmp / "bad.json", {"task_id": "t1", "decisions": d | {"ghost1": "pass", "ghost2": "fail"}})
    msg = user_error("aggregate", "--rubric", rubric, "--decisions", bad)
    assert "2 atom(s) the rubric tree lacks: 'ghost1', 'ghost2'" in msg


def test_unknown_direction_in_the_rubric(files):
    tmp, _, decisions = files
    t, _ = kept_tree()
    data = json.loads(t.model_dump_json())
    data["atoms"][3]["direction"] = "C-XYZ"
    rubric = write(tmp / "bad_rubric.json", data)
    assert "unknown direction 'C-XYZ' (atoms 'fc03')" in user_error("aggregate", "--rubric", rubric, "--decisions", decisions)


def test_weight_that_is_not_a_number(files):
    tmp, rubric, decisions = files
    hp = write(tmp / "hp.json", {"dimension_weights": {"C": "heavy", "R": 0.3, "P": 0.2}})
    msg = user_error("aggregate", "--rubric", rubric, "--decisions", decisions, "--hyperparameters", hp)
    assert "dimension_weights.C" in msg and "'heavy'" in msg and "number" in msg


def test_bad_decision_word_names_the_atom(files):
    tmp, rubric, _ = files
    bad = write(tmp / "bad.json", {"task_id": "t1", "decisions": {"fc00": "passed"}})
    msg = user_error("aggregate", "--rubric", rubric, "--decisions", bad)
    assert "decisions.fc00" in msg and "'passed'" in msg


def test_even_number_of_gate_votes(files):
    tmp, rubric, _ = files
    bad = write(tmp / "bad.json", {"task_id": "t1", "decisions": {"fc00": {"votes": ["pass", "fail"]}}})
    assert "2 votes cannot give a majority" in user_error("aggregate", "--rubric", rubric, "--decisions", bad)


def test_missing_and_malformed_files(files):
    tmp, rubric, _ = files
    assert "no such decisions file" in user_error("aggregate", "--rubric", rubric, "--decisions", tmp / "nope.json")
    (tmp / "broken.json").write_text("{not json", "utf-8")
    assert "malformed JSON at line 1" in user_error("aggregate", "--rubric", rubric, "--decisions", tmp / "broken.json")


# -- na-order ---------------------------------------------------------------------------------------


def test_na_order_passes_and_flags(files):
    tmp, rubric, decisions = files
    r = invoke("na-order", "--rubric", rubric, "--decisions", decisions)
    assert r.exit_code == 0, r.output
    assert "na-order check passed" in r.output
    t, d = kept_tree()
    saved = score_report(t, d)
    tampered = write(tmp / "score.json", saved.model_copy(update={"total": 90.0}))
    r = invoke("na-order", "--rubric", rubric, "--decisions", decisions, "--score", tampered, "--format", "json")
    assert r.exit_code == 1
    assert json.loads(r.output)["ok"] is False


# -- leaderboard and compare -----------------------------------------------------------------


def mini_snapshot(root: Path, trees: list[RubricTree]) -> Path:
    write(root / "snapshot.json", {"name": "mini", "version": "1", "description": "test", "tasks": [t.task_id for t in trees],
                                   "inventory_version": "omniart-directions-1", "probes_version": "probes-2"})
    write(root / "hyperparameters.json", {})
    for t in trees:
        write(root / "tasks" / t.task_id / "rubric.json", t)
    return root


def system_folder(root: Path, model: str, decisions: dict[str, dict | None], harness: str = "h") -> Path:
    write(root / "system.json", {"model": model, "harness": harness})
    for task, d in decisions.items():
        if d is not None:
            write(root / f"{task}.json", {"task_id": task, "decisions": d})
    return root


@pytest.fixture
def runs(tmp_path: Path):
    lc = [f"a{i:02d}" for i in range(20)]
    trees = [tree(f"t{i}", many("a", "C-LC", 20)) for i in range(4)]
    snap = mini_snapshot(tmp_path / "snap", trees)
    # good: 80 60 100 40 -> 70;  weak: 50 60 20 and no report for t3 -> 32.5
    system_folder(tmp_path / "runs" / "good", "good", {f"t{i}": passes(lc, k) for i, k in enumerate((16, 12, 20, 8))})
    system_folder(tmp_path / "runs" / "weak", "weak", {"t0": passes(lc, 10), "t1": passes(lc, 12), "t2": passes(lc, 4), "t3": None})
    return snap, tmp_path / "runs"


def test_leaderboard_terminal_markdown_json(runs):
    snap, folder = runs
    r = invoke("leaderboard", folder, "--snapshot", snap, "--replicates", 500)
    assert r.exit_code == 0, r.output
    assert "good / h" in r.output and "70.0" in r.output and "32.5" in r.output
    md = invoke("leaderboard", folder, "--snapshot", snap, "--replicates", 500, "--format", "markdown").output
    assert "| 1 | good / h | 70.0 |" in md and "| 2 | weak / h | 32.5 |" in md
    js = invoke("leaderboard", folder, "--snapshot", snap, "--replicates", 500, "--format", "json", "--pairs", "--sensitivity")
    board = Leaderboard.model_validate_json(js.output)
    assert [r.label for r in board.rows] == ["good / h", "weak / h"]
    assert board.rows[1].successes == 3 and board.rows[1].success_rate == 0.75
    c = board.comparisons[0]  # the higher-ranked system minus the lower (App. F.2)
    assert (c.a, c.b, c.mean_difference) == ("good / h", "weak / h", pytest.approx(37.5))  # A the higher-ranked
    assert board.sensitivity.rows[0].variant.name == "released"


@pytest.mark.parametrize("replicates", [200, 3000])
def test_the_snapshots_bootstrap_replicates_set_the_intervals_unless_given(runs, replicates):
    snap, folder = runs
    write(snap / "hyperparameters.json", {"bootstrap_replicates": replicates})
    board = Leaderboard.model_validate_json(invoke("leaderboard", folder, "--snapshot", snap, "--format", "json").output)
    assert board.replicates == replicates
    pair = PairedComparison.model_validate_json(invoke("compare", folder / "good", folder / "weak", "--snapshot", snap,
                                                  "--format", "json").output)
    assert pair.replicates == replicates
    given = invoke("leaderboard", folder, "--snapshot", snap, "--replicates", 150, "--format", "json").output
    assert Leaderboard.model_validate_json(given).replicates == 150


def test_leaderboard_writes_the_analysis_tables_of_any_system_folders(runs, tmp_path):
    import csv

    snap, folder = runs
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "mine.csv").write_text("a user's own file\n")  # never touched
    r = invoke("leaderboard", folder, "--snapshot", snap, "--replicates", 300, "--tables", tmp_path / "tables")
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in (tmp_path / "tables").iterdir())
    assert names == sorted(["mine.csv", *(f"{n}.{x}" for n in ("paired", "by_family", "by_subcategory", "by_query_form",
                                                               "directions", "difficulty", "coverage_failures",
                                                               "sensitivity")
                                          for x in ("csv", "md"))])
    # one system: the paired table of the earlier call goes, the user's file stays
    assert invoke("leaderboard", folder / "good", "--snapshot", snap, "--replicates", 300, "--tables",
                  tmp_path / "tables").exit_code == 0
    assert not (tmp_path / "tables" / "paired.csv").exists() and (tmp_path / "tables" / "mine.csv").is_file()
    r = invoke("leaderboard", folder, "--snapshot", snap, "--replicates", 300, "--tables", tmp_path / "tables")
    [pair] = list(csv.DictReader((tmp_path / "tables" / "paired.csv").open()))
    assert (pair["A"], pair["B"], pair["Avg A - B"], pair["W/T/L"]) == ("good / h", "weak / h", "+37.5", "3/1/0")
    assert pair["steps A / B"] == "- / -"  # decisions folders hold no trajectory
    # the mini snapshot has no task.json: every task is "unlabelled"
    [group] = list(csv.DictReader((tmp_path / "tables" / "by_family.csv").open()))
    # successful-report means (App. F.4): weak's missing t3 is left out, (50 + 60 + 20) / 3; all systems pooled
    # (80 + 60 + 100 + 40 + 50 + 60 + 20) / 7
    assert group == {"family": "unlabelled", "tasks": "4", "good / h": "70.0", "weak / h": "43.3",
                     "all systems": "58.6"}


def test_leaderboard_task_filter(runs):
    snap, folder = runs
    js = invoke("leaderboard", folder, "--snapshot", snap, "--task", "t2", "--replicates", 100, "--format", "json")
    board = Leaderboard.model_validate_json(js.output)
    assert board.task_ids == ["t2"] and board.rows[0].avg == pytest.approx(100.0)


def test_compare(runs):
    snap, folder = runs
    r = invoke("compare", folder / "good", folder / "weak", "--snapshot", snap, "--replicates", 1000, "--format", "json")
    assert r.exit_code == 0, r.output
    c = PairedComparison.model_validate_json(r.output)
    # per task: 80-50, 60-60, 100-20, 40-0 -> wins 3, ties 1; mean 37.5
    assert (c.wins, c.ties, c.losses, c.mean_difference) == (3, 1, 0, pytest.approx(37.5))
    md = invoke("compare", folder / "good", folder / "weak", "--snapshot", snap, "--replicates", 100, "--format", "markdown")
    assert "| good / h | weak / h | +37.5 |" in md.output


def test_leaderboard_bad_inputs(runs, tmp_path):
    snap, folder = runs
    assert "no such folder" in user_error("leaderboard", tmp_path / "nope", "--snapshot", snap)
    (tmp_path / "empty").mkdir()
    assert "no system.json" in user_error("leaderboard", tmp_path / "empty", "--snapshot", snap)
    write(folder / "weak" / "t9.json", {"task_id": "t9", "decisions": {}})
    assert "task 't9', which has no rubric tree" in user_error("leaderboard", folder, "--snapshot", snap)


def test_compare_needs_two_system_folders(runs):
    snap, folder = runs
    assert "A and B must each be one system folder" in user_error("compare", folder, folder / "weak", "--snapshot", snap)


# -- the demo snapshot, end to end ----------------------------------------------------------------

needs_demo = pytest.mark.skipif(not (DEMO / "tasks").is_dir(), reason="demo snapshot not present")


@needs_demo
def test_demo_snapshot_leaderboard(tmp_path):
    from omnidr.scoring import snapshot_trees

    trees, _ = snapshot_trees(DEMO)
    rng = random.Random(0)
    for model, p in (("strong", 0.8), ("weak", 0.3)):
        d = {t: {a.id: ("pass" if rng.random() < p else "fail") for a in tree_.atoms} for t, tree_ in trees.items()}
        system_folder(tmp_path / "runs" / model, model, d)
    r = invoke("leaderboard", tmp_path / "runs", "--snapshot", DEMO, "--replicates", 2000, "--format", "json")
    assert r.exit_code == 0, r.output
    board = Leaderboard.model_validate_json(r.output)
    assert [x.system.model for x in board.rows] == ["strong", "weak"]
    assert board.task_ids == sorted(trees)
    for row in board.rows:
        assert row.successes == len(trees) and 0 <= row.avg_ci_low <= row.avg <= row.avg_ci_high <= 100


@needs_demo
def test_demo_rubric_aggregate(tmp_path):
    task = "pendant-lamp-safety"
    rubric = DEMO / "tasks" / task / "rubric.json"
    atoms = json.loads(rubric.read_text("utf-8"))["atoms"]
    decisions = write(tmp_path / "d.json", {"task_id": task, "decisions": {a["id"]: "pass" for a in atoms}})
    s = ReportScore.model_validate_json(invoke("aggregate", "--rubric", rubric, "--decisions", decisions, "--format", "json").output)
    assert s.total == pytest.approx(100.0)


# -- through the real `omnidr` entry point --------------------------------------------------------




def test_entry_point_bad_input_is_one_line_exit_2(files):
    tmp, rubric, _ = files
    bad = write(tmp / "bad.json", {"task_id": "t1", "decisions": {"ghost": "pass"}})
    r = run_cli("aggregate", "--rubric", rubric, "--decisions", bad)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["error: task t1: decisions name 1 atom(s) the rubric tree lacks: 'ghost'"]
    assert "Traceback" not in r.stdout + r.stderr


def test_entry_point_aggregate(files):
    _, rubric, decisions = files
    r = run_cli("aggregate", "--rubric", rubric, "--decisions", decisions, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert round(ReportScore.model_validate_json(r.stdout).total, 1) == 64.4


def test_leaderboard_asks_for_the_snapshot_when_no_run_json_names_it(runs):
    snap, folder = runs
    assert "no run.json under the folders given names the snapshot they ran on; pass --snapshot PATH" in user_error(
        "leaderboard", folder, "--replicates", 200)  # hand-made decisions folders record none
    assert "no such folder" in user_error("leaderboard", folder / "nope")  # a wrong folder says so first


def test_the_snapshot_a_run_root_ran_on_is_read_from_its_run_json(runs, tmp_path):
    from omnidr.pipeline._inputs import recorded_snapshot

    snap, _ = runs
    root = tmp_path / "root"
    for system in ("a", "b"):  # system folders as `omnidr eval` writes them (eval.json marks one)
        write(root / system / "eval.json", {})
        write(root / system / "run.json", {"snapshot": str(snap)})
    assert recorded_snapshot([root]) == snap.resolve() == recorded_snapshot([root / "a", root / "b"])
    other = mini_snapshot(tmp_path / "other", [])
    write(root / "b" / "run.json", {"snapshot": str(other)})
    with pytest.raises(UserError, match="ran on different snapshots"):
        recorded_snapshot([root])
    write(root / "b" / "run.json", {"snapshot": str(tmp_path / "gone")})
    with pytest.raises(UserError, match="is not found from here; pass --snapshot PATH"):
        recorded_snapshot([root])


def test_the_terminal_names_each_system_by_its_folder_with_a_legend(runs):
    snap, folder = runs
    r = invoke("leaderboard", folder, "--snapshot", snap, "--replicates", 200, "--pairs")
    assert r.exit_code == 0, r.output
    assert "system good: good / h" in r.output and "system weak: weak / h" in r.output
    assert "│ good " in r.output and "│ good / h" not in r.output  # in the tables, the folder's name
    assert "Δ = A − B" in r.output
