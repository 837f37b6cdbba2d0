"""`omnidr score RUN_DIR` on hand-built run folders: delivered reports are scored, a missing and
an unreadable report count as failures scoring 0, re-scoring with the cache calls no judge, and
evaluations from different judges are not mixed."""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from eval_helpers import GOOD, ROOT, TASK, demo_inputs, read_json, write_attempt, write_run

pytestmark = pytest.mark.browser

TASKS = [TASK, "nd-filter-waterfall", "sky-blue-rayleigh"]


@pytest.fixture
def run_dir(tmp_path):
    run = write_run(tmp_path / "run", TASKS)
    write_attempt(run, TASK, 1, "success", report_from=GOOD)
    write_attempt(run, "nd-filter-waterfall", 1, "timeout", detail="killed at the wall-clock limit")
    write_attempt(run, "nd-filter-waterfall", 2, "success", report_from=None)  # says success, delivered nothing
    broken = write_attempt(run, "sky-blue-rayleigh", 1, "success", report_from=GOOD)
    (broken / "output" / "report" / "index.html").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00garbage\xff\xfe")
    return run


def _score(*args):
    from omnidr.evaluation import score

    result = CliRunner().invoke(score, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.media  # the visual criteria get frames cut by ffmpeg
def test_score_writes_an_evaluation_per_report_and_fails_missing_and_unreadable(run_dir, tmp_path):
    out = tmp_path / "out"
    result = _score(run_dir, "--out", out)
    assert "offline baseline" in result.output  # the stand-in judge is announced
    summary = read_json(out / "summary.json")
    by_task = {t["task_id"]: t for t in summary["tasks"]}
    assert [t["task_id"] for t in summary["tasks"]] == TASKS
    assert by_task[TASK]["failed"] is False and by_task[TASK]["total"] > 90 and by_task[TASK]["attempt"] == 1
    missing = by_task["nd-filter-waterfall"]
    assert missing["failed"] and missing["total"] == 0 and missing["attempt"] == 2
    assert "missing report" in missing["failure_reason"]
    unreadable = by_task["sky-blue-rayleigh"]
    assert unreadable["failed"] and unreadable["total"] == 0 and "unreadable report" in unreadable["failure_reason"]
    assert summary["mean_total"] == pytest.approx(by_task[TASK]["total"] / 3, abs=1e-3)
    assert summary["judge"]["kind"] == "offline-baseline"

    ev = read_json(out / TASK / "evaluation.json")
    assert ev["report"] == f"attempts/{TASK}/1/output/report/index.html" and len(ev["report_sha256"]) == 64
    assert len(ev["atoms"]) == 45 and all(a["outcome"] in ("pass", "fail", "na") for a in ev["atoms"])
    m = [a for a in ev["atoms"] if a["evaluator"] == "M"]
    assert all(a["probe"]["status"] == "pass" and a["rationale"] for a in m)
    j = [a for a in ev["atoms"] if a["evaluator"] == "J"]
    assert all(len(a["votes"]) == (3 if a["gate"] else 1) for a in j)
    assert {d["direction"] for d in ev["score"]["directions"]} >= {"P-RI", "C-FC"} and ev["score"]["na_guard"] is not None
    assert ev["evaluator_version"] and ev["judge"]["prompt_version"] and ev["session"]["browser_version"]
    failed = read_json(out / "nd-filter-waterfall" / "evaluation.json")
    assert failed["atoms"] == [] and failed["score"]["failed"] and failed["score"]["total"] == 0
    # the saved decisions re-aggregate to the same score without any judge
    from omnidr.evaluation import read_evaluation
    from omnidr.scoring import score_report

    saved = read_evaluation(out / TASK / "evaluation.json")
    again = score_report(demo_inputs().rubric, saved.decisions(), demo_inputs().hyperparameters)
    assert again.total == saved.score.total


def test_last_attempt_failure_scores_zero(tmp_path):
    run = write_run(tmp_path / "run", [TASK])
    write_attempt(run, TASK, 1, "agent_error", detail="exit code 3")
    out = tmp_path / "out"
    _score(run, "--out", out)
    summary = read_json(out / "summary.json")
    assert summary["tasks"][0]["failed"] and "agent_error" in summary["tasks"][0]["failure_reason"]


@pytest.mark.network
def test_rescoring_with_the_cache_calls_no_judge_and_judges_are_not_mixed(tmp_path, fake_judge):
    from omnidr.errors import UserError
    from omnidr.evaluation import system_decisions

    run = write_run(tmp_path / "run", [TASK])
    write_attempt(run, TASK, 1, "success", report_from=GOOD)
    fake_judge.script = {"C-VF-01": ["Yes", "No", "Yes"]}
    model = ["--judge", f"fake-judge@{fake_judge.url}"]
    _score(run, "--out", tmp_path / "a", *model)
    first_calls = fake_judge.calls
    assert first_calls == 28 + 3 * 4  # 32 J atoms, of which 4 in gate directions take 3 votes each
    _score(run, "--out", tmp_path / "a", *model)
    assert fake_judge.calls == first_calls, "re-scoring an unchanged report called the judge"
    a = read_json(tmp_path / "a" / TASK / "evaluation.json")
    assert a["judge"]["kind"] == "openai-compatible" and a["judge_usage"]["cache_hits"] == first_calls
    assert a["judge_usage"]["calls"] == 0
    vf = next(x for x in a["atoms"] if x["atom_id"] == "C-VF-01")
    assert sorted(v["verdict"] for v in vf["votes"]) == ["no", "yes", "yes"] and vf["outcome"] == "pass"

    _score(run, "--out", tmp_path / "b")  # the offline baseline
    judge, systems = system_decisions([tmp_path / "a"])
    assert judge.kind == "openai-compatible" and systems[0].system.model == "fake-model"
    with pytest.raises(UserError, match="different judges"):
        system_decisions([tmp_path / "a", tmp_path / "b"])


def test_bad_run_folder_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "empty").mkdir()
    r = subprocess.run([sys.executable, "-m", "omnidr.evaluation", "score", str(tmp_path / "empty")],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"error: {tmp_path / 'empty'}: no run.json; pass a run folder made by `omnidr run`"]


def test_probe_command_prints_each_probe(tmp_path):
    from omnidr.evaluation import probe

    result = CliRunner().invoke(probe, [str(GOOD), "--snapshot", str(ROOT / "snapshots" / "demo"), "--task", TASK, "--format", "json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert len(data["results"]) == 13 and all(r["status"] == "pass" for r in data["results"])


def test_probe_arguments_parse():
    from omnidr.evaluation._cli import _parse_probe

    call = _parse_probe("source_budget:source_type=web,min_count=5")
    assert call.name == "source_budget" and call.params == {"source_type": "web", "min_count": 5}
    assert _parse_probe("video_plays").params == {}
