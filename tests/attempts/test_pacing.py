"""Admission control and stalls with a real engine: starts wait for a slot, a run whose starts keep failing stops
with one line, and an agent that stops doing anything ends as `stalled`."""

import json
from datetime import timedelta

import pytest
from attempt_helpers import DEMO, agent_argv, first_task, read_jsonl, run_attempts
from testkit import run_cli, said

from omnidr.attempts import HostPolicy, RetryPolicy

pytestmark = pytest.mark.docker


def test_with_one_start_slot_no_two_sandboxes_start_at_once(tmp_path, images, upstream_factory, real_key):
    network, _ = upstream_factory()
    tasks = json.loads((DEMO / "snapshot.json").read_text())["tasks"]
    results = run_attempts(tmp_path / "run", images, network, ["sleep:1", "report"], tasks=tasks, parallel=3,
                           host=HostPolicy(max_starts=1))
    records = [rs[-1] for rs in results.values()]
    assert [r.reason.value for r in records] == ["success"] * 3
    assert all(r.setup_s is not None and r.setup_s > 0 for r in records)
    assert sum(r.start_wait_s > 0.2 for r in records) >= 2  # two of the three queued behind the first
    spans = sorted((r.started_at + timedelta(seconds=r.start_wait_s),
                    r.started_at + timedelta(seconds=r.start_wait_s + (r.setup_s or 0))) for r in records)
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert start >= end - timedelta(seconds=0.05), spans  # each start began when the one before had ended


def test_a_run_whose_starts_keep_failing_stops_with_one_line(tmp_path, images, upstream_factory):
    """Every start fails (the engine refuses the agent's CPU limit): the run stops after the stop rule's count
    (with one slot: 6 in a row), says so in one line and exits 1, instead of retrying every task to the end."""
    network, _ = upstream_factory()
    run_dir = tmp_path / "run"
    result = run_cli("run", "--snapshot", DEMO, "--harness", "command", "--image", images["base"],
                     "--openai-base-url", "http://upstream:9000/v1", "--model", "fake-model",
                     "--outside-network", network, "--run-dir", run_dir, "--cpus", "1000", "--attempts", "1",
                     "--max-starts", "1", "--parallel", "3", "--", *agent_argv("report"), timeout=600)
    lines = said(result.stderr)
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert len(lines) == 1 and lines[0].startswith("error: 6 sandbox starts failed in a row (the last: sandbox "
                                                   "setup failed:"), lines
    assert "rerun the same command" in lines[0]
    records = [json.loads(p.read_text()) for p in (run_dir / "attempts").glob("*/*/attempt.json")]
    assert len(records) == 6 and {r["reason"] for r in records} == {"infra_error"}
    # the retries were spread out, not sent back at once: no two attempts of a task started within a second
    by_task: dict[str, list[str]] = {}
    for r in records:
        by_task.setdefault(r["task_id"], []).append(r["started_at"])
    from datetime import datetime

    for starts in by_task.values():
        times = sorted(datetime.fromisoformat(s) for s in starts)
        assert all((b - a).total_seconds() >= 0.9 for a, b in zip(times, times[1:], strict=False)), times


def test_an_agent_that_sleeps_after_one_request_ends_stalled(tmp_path, images, upstream_factory, real_key):
    network, _ = upstream_factory()
    task = first_task()
    results = run_attempts(tmp_path / "run", images, network, ["chat:1", "sleep:100000"],
                           budget={"wall_time_s": 300}, retry=RetryPolicy(), host=HostPolicy(stall_timeout_s=5))
    [record] = results[task]
    assert record.reason.value == "stalled", record.detail
    assert record.detail.startswith("stalled: no model request, no proxy request and no change under /output for ")
    assert "stall timeout 5 s" in record.detail
    assert record.wall_time_s < 30  # not the 300 s wall clock
    assert record.budget_use.requests == 1
    folder = tmp_path / "run" / "attempts" / task / "1"
    assert len(read_jsonl(folder / "logs" / "gateway.jsonl")) == 1
    saved = json.loads((folder / "attempt.json").read_text())
    assert saved["reason"] == "stalled" and saved["detail"] == record.detail


def test_a_working_agent_is_not_stalled_by_a_short_timeout(tmp_path, images, upstream_factory, real_key):
    """Model requests every second keep an attempt alive however short the stall timeout."""
    network, _ = upstream_factory()
    task = first_task()
    steps = [a for _ in range(8) for a in ("chat:1", "sleep:1")]
    results = run_attempts(tmp_path / "run", images, network, [*steps, "report"], budget={"wall_time_s": 120},
                           host=HostPolicy(stall_timeout_s=3))
    [record] = results[task]
    assert record.reason.value == "success", record.detail


def test_stall_timeout_on_the_command_line(tmp_path, images, upstream_factory):
    """`omnidr run --stall-timeout 5`: the stalled attempt is printed and recorded as such, and is retried as a
    timeout is (here --attempts 2: two stalled attempts, then the task has failed)."""
    network, _ = upstream_factory()
    task = first_task()
    run_dir = tmp_path / "run"
    result = run_cli("run", "--snapshot", DEMO, "--harness", "command", "--image", images["base"], "--task", task,
                     "--openai-base-url", "http://upstream:9000/v1", "--model", "fake-model",
                     "--outside-network", network, "--run-dir", run_dir, "--attempts", "2", "--wall-time", "300",
                     "--stall-timeout", "5", "--", *agent_argv("chat:1", "sleep:100000"), timeout=600)
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert result.stdout.count("stalled") >= 2 and "0 of 1 task(s) delivered a report" in result.stdout
    reasons = [json.loads((run_dir / "attempts" / task / str(n) / "attempt.json").read_text())["reason"]
               for n in (1, 2)]
    assert reasons == ["stalled", "stalled"]
