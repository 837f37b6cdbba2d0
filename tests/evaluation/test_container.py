"""`omnidr score` (`--evaluator docker`, the default): the evaluator image (pinned Chromium and Python) scores a
run folder mounted read-only, with no network for the offline judge and only a relay to the judge endpoint
otherwise, and decides exactly as the host does."""

import ipaddress

import pytest
from eval_helpers import DEMO, GOOD, TASK, write_attempt, write_run

pytestmark = [pytest.mark.docker, pytest.mark.images("evaluator")]


@pytest.fixture
def run(tmp_path):
    run = write_run(tmp_path / "run", [TASK, "nd-filter-waterfall"])
    write_attempt(run, TASK, 1, "success", report_from=GOOD)
    write_attempt(run, "nd-filter-waterfall", 1, "no_report", detail="exited 0 without a report")
    return run


def _outcomes(out_dir):
    from omnidr.evaluation import read_scored_run

    _, evaluations = read_scored_run(out_dir)
    return {e.task_id: [(a.atom_id, a.outcome, a.probe.reason if a.probe else a.verdict) for a in e.atoms] for e in evaluations}


@pytest.mark.browser
def test_the_image_scores_like_the_host_without_network(run, tmp_path):
    from omnidr.evaluation import ScoreRequest, score_run
    from omnidr.evaluation._container import score_in_container

    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    summary = score_in_container(ScoreRequest(run_dir=run, out_dir=tmp_path / "container", snapshot=DEMO))
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before  # the run folder was only read
    assert [t.task_id for t in summary.tasks] == [TASK, "nd-filter-waterfall"]
    assert summary.tasks[1].failed and summary.tasks[1].total == 0
    host = score_run(ScoreRequest(run_dir=run, out_dir=tmp_path / "host", snapshot=DEMO))
    assert _outcomes(tmp_path / "container") == _outcomes(tmp_path / "host")
    assert summary.tasks[0].total == host.tasks[0].total > 90


def test_the_judge_is_reached_through_the_relay(run, tmp_path):
    import docker
    from fake_judge import FakeJudge

    from omnidr.evaluation import JudgeSettings, ScoreRequest
    from omnidr.evaluation._container import score_in_container

    config = docker.from_env().networks.get("bridge").attrs["IPAM"]["Config"][0]
    # the host's address on Docker's default bridge (engines may leave "Gateway" out: the subnet's first host)
    bridge_ip = config.get("Gateway") or str(next(ipaddress.ip_network(config["Subnet"]).hosts()))
    judge = FakeJudge(host=bridge_ip).start()
    try:
        settings = JudgeSettings(base_url=judge.url, model="fake-judge", api_key_env="OMNIDR_TEST_JUDGE_KEY", timeout_s=20)
        summary = score_in_container(ScoreRequest(run_dir=run, out_dir=tmp_path / "out", snapshot=DEMO,
                                                   judge_settings=settings, tasks=[TASK]))
    finally:
        judge.stop()
    assert summary.judge.kind == "openai-compatible" and summary.judge_usage.failed_votes == 0
    assert judge.calls == 40 and summary.judge_usage.calls == 40
