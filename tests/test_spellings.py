"""One spelling per concept: the judge as --judge NAME@URL, the snapshot as --snapshot, the same sign of every paired
difference in every table. Old spellings still work for one release, with a one-line notice on stderr."""

import json

import pytest
from testkit import DEMO, free_port, run_cli, said

from omnidr.evaluation import JudgeSettings


def test_score_takes_the_judge_as_every_command_does_and_the_old_options_still_work_with_a_notice(capsys):
    from omnidr.evaluation._cli import judge_settings

    url = "http://127.0.0.1:8000/v1"
    new = judge_settings(f"judge-x@{url}", None, 8, 120.0)
    assert new == JudgeSettings(base_url=url, model="judge-x", api_key_env="OMNIDR_JUDGE_API_KEY", concurrency=8,
                                timeout_s=120.0)
    assert capsys.readouterr().err == ""
    assert judge_settings("offline-baseline", None, 8, 120.0) is None
    assert judge_settings("openai/gpt-5-mini", None, 8, 120.0).api_key_env == "OPENAI_API_KEY"
    old = judge_settings("offline-baseline", None, 8, 120.0, base_url=url, model="judge-x")
    assert old == new
    [notice] = capsys.readouterr().err.splitlines()
    assert notice.startswith("warning: --judge-base-url URL --judge-model NAME") and f"--judge judge-x@{url}" in notice


def test_the_old_judge_options_of_score_reach_the_judge_through_the_cli(tmp_path):
    port = free_port()  # nothing listens there: the command stops on the judge, after parsing the old spelling
    run = tmp_path / "run"
    run.mkdir()
    r = run_cli("score", run, "--judge-base-url", f"http://127.0.0.1:{port}/v1", "--judge-model", "m")
    lines = said(r.stderr)
    assert r.returncode == 2 and len(lines) == 2, r.stderr
    assert lines[0] == (f"warning: --judge-base-url URL --judge-model NAME (and OMNIDR_JUDGE_BASE_URL, OMNIDR_JUDGE_MODEL) "
                        f"is deprecated and goes in the next release; use --judge m@http://127.0.0.1:{port}/v1")
    assert lines[1].startswith("error: ") and "--judge" in lines[1] and "Traceback" not in r.stderr
    half = run_cli("score", run, "--judge-model", "m")
    assert half.returncode == 2 and said(half.stderr) == [
        "error: --judge-base-url and --judge-model go together (better: --judge MODEL@BASE_URL)"]


@pytest.mark.parametrize("command", ["eval", "calibrate"])
def test_the_positional_snapshot_still_works_with_a_notice(tmp_path, command):
    missing = tmp_path / "no-such-snapshot"
    r = run_cli(command, missing, "--runs-root", tmp_path / "runs")
    lines = said(r.stderr)
    assert r.returncode == 2 and len(lines) == 2, r.stderr
    assert lines[0] == (f"warning: the positional SNAPSHOT of `omnidr {command}` is deprecated and goes in the next "
                        f"release; use --snapshot {missing}")
    assert lines[1].startswith("error: ") and f"{missing} does not exist" in lines[1]
    now = run_cli(command, "--snapshot", missing, "--runs-root", tmp_path / "runs")
    assert now.returncode == 2 and said(now.stderr) == lines[1:]  # the same error, no notice
    both = run_cli(command, DEMO, "--snapshot", missing, "--runs-root", tmp_path / "runs")
    assert both.returncode == 2 and said(both.stderr)[-1].startswith("error: two snapshots given")
    assert not (tmp_path / "runs").exists()


def test_every_paired_difference_table_names_its_sign_in_its_header():
    from omnidr.scoring import comparisons_grid

    grid = comparisons_grid([])
    assert "Δ = A − B" in grid.headers and "A the higher-ranked" in grid.title


def test_json_is_a_format_like_the_others_and_the_old_flag_still_works_with_a_notice(tmp_path):
    rubric = DEMO / "tasks" / "pendant-lamp-safety" / "rubric.json"
    atoms = json.loads(rubric.read_text("utf-8"))["atoms"]
    decisions = tmp_path / "decisions.json"
    decisions.write_text(json.dumps({"task_id": "pendant-lamp-safety", "decisions": {a["id"]: "pass" for a in atoms}}))
    new = run_cli("aggregate", "--rubric", rubric, "--decisions", decisions, "--format", "json")
    old = run_cli("aggregate", "--rubric", rubric, "--decisions", decisions, "--json")
    assert new.returncode == old.returncode == 0, new.stderr + old.stderr
    assert old.stdout == new.stdout and said(new.stderr) == []
    assert said(old.stderr) == ["warning: --json is deprecated and goes in the next release; use --format json"]
    md = run_cli("aggregate", "--rubric", rubric, "--decisions", decisions, "--format", "markdown")
    assert md.returncode == 0 and "| direction | dim | passed |" in md.stdout, md.stdout + md.stderr
