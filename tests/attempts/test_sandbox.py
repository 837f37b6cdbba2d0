"""Attempts in the real sandbox (real Docker engine): two doors only, budgets, retries, limits, resume."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from attempt_helpers import DEMO, agent_argv, command_config, first_task, read_jsonl, run_attempts

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]


def _corpus_page():
    corpus = json.loads((DEMO / "web" / "corpus.json").read_text())
    page = next(p for p in corpus["pages"] if p["content_type"].startswith("text/html"))
    return page["url"], (DEMO / "web" / page["path"]).read_text("utf-8")


def _probe(attempt_dir: Path) -> dict:
    return {r["action"]: r for r in json.loads((attempt_dir / "output" / "probe.json").read_text())}


def test_agent_reaches_only_the_two_doors(tmp_path, client, images, upstream_factory, host_server, real_key):
    network, upstream = upstream_factory()
    ip, port = host_server
    # control: a container on the default bridge does reach the host server, so the block below is real
    control = client.containers.run(images["base"], ["python3", "-c",
        f"import socket; socket.create_connection(('{ip}', {port}), timeout=3); print('reached')"], remove=True)
    assert b"reached" in control
    url, page = _corpus_page()
    actions = [f"tcp:{ip}:{port}", f"get:{url}", "get:http://denied.example/x",
               "chat:1", f"scan:{real_key}", "report"]
    results = run_attempts(tmp_path / "run", images, network, actions, denylist=["denied.example"])
    [record] = results[first_task()]
    attempt = tmp_path / "run" / "attempts" / first_task() / "1"
    probe = _probe(attempt)

    assert record.reason.value == "success", record.detail
    assert probe[f"tcp:{ip}:{port}"]["connected"] is False
    assert probe[f"get:{url}"]["status"] == 200 and probe[f"get:{url}"]["body"] == page
    assert probe["get:http://denied.example/x"]["status"] == 403
    assert probe["chat:1"]["responses"][0]["status"] == 200
    assert probe[f"scan:{real_key}"]["hits"] == []

    network_log = read_jsonl(attempt / "logs" / "network.jsonl")
    assert any(url in (e.get("url") or "") and e["status"] == 200 for e in network_log)
    assert any("denied.example" in e["host"] and e["blocked"] and e["status"] == 403 for e in network_log)
    gateway_log = (attempt / "logs" / "gateway.jsonl").read_text()
    assert real_key not in gateway_log and json.loads(gateway_log.splitlines()[0])["status"] == 200
    seen = [json.loads(line) for line in upstream.logs().decode().splitlines() if line.startswith("{")]
    assert seen[-1]["authorization"] == f"Bearer {real_key}"  # the gateway injected the real key
    saved = json.loads((attempt / "attempt.json").read_text())
    assert set(saved["image_ids"]) == {"agent", "gateway", "egress"}
    assert saved["budget_use"]["requests"] == 1 and saved["network_blocked"] >= 1
    assert (attempt / "output" / "report" / "index.html").is_file()


def test_upstream_failures_are_retried_by_the_gateway(tmp_path, images, upstream_factory, real_key):
    network, _ = upstream_factory(fail_first=2)
    [record] = run_attempts(tmp_path / "run", images, network, ["chat:1", "report"])[first_task()]
    attempt = tmp_path / "run" / "attempts" / first_task() / "1"
    assert record.reason.value == "success"
    assert _probe(attempt)["chat:1"]["responses"][0]["status"] == 200
    [exchange] = read_jsonl(attempt / "logs" / "gateway.jsonl")
    assert exchange["retries"] == 2 and exchange["usage"]["input_tokens"] == 11
    assert record.budget_use.upstream_retries == 2


def test_a_report_that_is_no_report_is_a_failed_attempt_that_is_retried(tmp_path, images, upstream_factory, real_key):
    """App. F: an unfilled interface skeleton counts as a failure; it earns the next attempt, and the
    folder stays for the audit."""
    network, _ = upstream_factory()
    records = run_attempts(tmp_path / "run", images, network, ["skeleton"], budget={"attempts_per_task": 2})[first_task()]
    assert [r.reason.value for r in records] == ["invalid_report", "invalid_report"]
    assert records[0].detail == ("output/report/ is an unfilled interface skeleton (no timeline note, finding or "
                                 "source record)")
    assert records[0].report_path == "output/report/index.html"
    attempt = tmp_path / "run" / "attempts" / first_task() / "1"
    (attempt / "output" / "report" / "data.js").write_text("window.DATA = {broken")  # and unreadable data
    from omnidr.benchmark import report_problem

    assert report_problem(attempt / "output" / "report").startswith("not a valid report: data.js:")


@pytest.mark.parametrize("budget, exhausted", [
    ({"max_iterations": 2}, "max_iterations"),
    ({"max_total_tokens": 30}, "max_total_tokens"),
])
def test_budgets_stop_the_agent(tmp_path, images, upstream_factory, real_key, budget, exhausted):
    network, upstream = upstream_factory()
    [record] = run_attempts(tmp_path / "run", images, network, ["chat:3"], budget=budget)[first_task()]
    attempt = tmp_path / "run" / "attempts" / first_task() / "1"
    statuses = [r["status"] for r in _probe(attempt)["chat:3"]["responses"]]
    assert statuses == [200, 200, 400]
    assert record.reason.value == "budget_exhausted" and record.budget_use.exhausted == exhausted
    assert record.budget_use.requests == 2 and record.budget_use.refused_requests == 1
    chat_calls = [line for line in upstream.logs().decode().splitlines() if "/v1/chat/completions" in line]
    assert len(chat_calls) == 2  # the refused request never reached the upstream


def test_wall_clock_limit_kills_the_agent(tmp_path, images, upstream_factory, real_key):
    network, _ = upstream_factory()
    started = time.monotonic()
    [record] = run_attempts(tmp_path / "run", images, network, ["sleep:120", "report"], budget={"wall_time_s": 3})[first_task()]
    assert record.reason.value == "timeout"
    assert 2.5 <= record.wall_time_s < 15 and time.monotonic() - started < 90


def test_fork_bomb_and_disk_filling_are_contained(tmp_path, client, images, upstream_factory, real_key):
    from omnidr.attempts import RetryPolicy, SandboxLimits, Upstream
    from omnidr.harness import SystemRunOptions, run_command_harness
    from sandbox.models import Budget

    network, _ = upstream_factory()
    free_before = shutil.disk_usage(tmp_path).free
    script = ("dd if=/dev/zero of=/output/fill bs=1M 2>/dev/null; dd if=/dev/zero of=/tmp/fill bs=1M 2>/dev/null; "
              "python3 -c 'import os\nwhile True:\n  try: os.fork()\n  except OSError: pass'")
    config = command_config(images["base"], ["sh", "-c", script], Budget(wall_time_s=8, attempts_per_task=1), "deny",
                            network)
    results = run_command_harness(DEMO, tmp_path / "run", config, SystemRunOptions(
        tasks=[first_task()], limits=SandboxLimits(cpus=1, memory_mb=256, pids=64, tmpfs_mb=32, output_mb=32),
        retry=RetryPolicy(), on_note=lambda _m: None,
        upstreams=[Upstream(family="openai", base_url="http://upstream:9000/v1", key_env="OMNIDR_TEST_REAL_KEY")]))
    [record] = results[first_task()]
    assert record.reason.value == "timeout"
    fill = tmp_path / "run" / "attempts" / first_task() / "1" / "output" / "fill"
    assert fill.stat().st_size <= 33 * 2**20
    assert free_before - shutil.disk_usage(tmp_path).free < 200 * 2**20
    assert client.ping() and subprocess.run(["true"]).returncode == 0  # the host still forks and the engine answers


def _run_cli(run_dir: Path, network: str, *extra: str, agent: tuple[str, ...] = ("sleep:4", "report"),
             **kw) -> subprocess.Popen:
    tasks = json.loads((DEMO / "snapshot.json").read_text())["tasks"][:2]
    from omnidr.images import build_images

    cmd = [sys.executable, "-m", "omnidr.cli", "run", "--snapshot", str(DEMO), "--run-dir", str(run_dir),
           "--image", build_images(["base"])[0].tag, "--openai-base-url", "http://upstream:9000/v1",
           "--openai-key-env", "OMNIDR_TEST_REAL_KEY", "--outside-network", network, "--wall-time", "60",
           "--attempts", "1", *[a for t in tasks for a in ("--task", t)], *extra, "--",
           *agent_argv(*agent)]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_default_sigint, **kw)


def _default_sigint() -> None:
    """A shell runs a background job with SIGINT ignored, and Python then installs no Ctrl-C handler: a CI
    started that way would make the Ctrl-C test meaningless. The CLI under test gets the default, as in a
    terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_sigkill_of_the_runner_then_rerun_resumes(tmp_path, client, images, upstream_factory, real_key):
    network, _ = upstream_factory()
    run_dir = tmp_path / "run"
    tasks = json.loads((DEMO / "snapshot.json").read_text())["tasks"][:2]
    proc = _run_cli(run_dir, network)
    first_done = run_dir / "attempts" / tasks[0] / "1" / "attempt.json"
    second = run_dir / "attempts" / tasks[1] / "1"
    deadline = time.monotonic() + 240
    while not (first_done.exists() and second.exists()) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2)  # the second attempt is now running
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert first_done.exists() and not (second / "attempt.json").exists()
    before = first_done.read_bytes()
    run_id = json.loads((run_dir / "run.json").read_text())
    leftovers = client.containers.list(ignore_removed=True, all=True, filters={"label": "org.omnidr.run"})
    assert leftovers  # the killed runner left containers behind

    rerun = _run_cli(run_dir, network)
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out + err
    assert first_done.read_bytes() == before  # finished work kept, not redone
    assert json.loads((second / "attempt.json").read_text())["reason"] == "success"
    assert list((run_dir / "attempts" / tasks[1]).glob("1.interrupted-*"))  # the interrupted try is kept aside
    assert "2 of 2 task(s) delivered a report" in out
    from omnidr.attempts import RunConfig

    rid = RunConfig.model_validate(run_id).run_id()
    assert not client.containers.list(ignore_removed=True, all=True, filters={"label": f"org.omnidr.run={rid}"})
    assert not client.networks.list(filters={"label": f"org.omnidr.run={rid}"})


def test_changed_configuration_of_a_run_folder_is_refused(tmp_path, images, upstream_factory, real_key):
    network, _ = upstream_factory()
    run_dir = tmp_path / "run"
    first = _run_cli(run_dir, network)
    first.communicate(timeout=300)
    again = _run_cli(run_dir, network, "--max-iterations", "7")
    out, err = again.communicate(timeout=60)
    assert again.returncode == 2
    assert "different configuration (budget.max_iterations: 500 -> 7)" in err and "Traceback" not in err


def test_docker_engine_unreachable_is_one_line(tmp_path):
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    r = subprocess.run([sys.executable, "-m", "omnidr.cli", "run", "--run-dir", str(tmp_path / "r"), "--image", "x",
                        "--openai-base-url", "http://upstream:9000/v1", "--", "true"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "cannot reach the Docker engine" in r.stderr


def test_ctrl_c_stops_the_run_keeps_what_is_finished_and_a_rerun_resumes(tmp_path, client, images, upstream_factory,
                                                                        real_key):
    network, _ = upstream_factory()
    run_dir = tmp_path / "run"
    tasks = json.loads((DEMO / "snapshot.json").read_text())["tasks"][:2]
    agent = ("sleep:20", "report")
    proc = _run_cli(run_dir, network, agent=agent)
    first = run_dir / "attempts" / tasks[0] / "1"
    deadline = time.monotonic() + 240
    while not (first / "logs").exists() and time.monotonic() < deadline:  # the first attempt is running
        time.sleep(0.2)
    time.sleep(1.5)
    os.killpg(proc.pid, signal.SIGINT)
    t0 = time.monotonic()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    assert time.monotonic() - t0 < 60
    assert "interrupted; rerun the same command to resume" in err and "Traceback" not in err
    assert not (first / "attempt.json").exists()  # stopped, not finished: no made-up outcome
    assert not (run_dir / "attempts" / tasks[1]).exists()  # the queued task never started
    from omnidr.attempts import RunConfig

    rid = RunConfig.model_validate_json((run_dir / "run.json").read_text()).run_id()
    assert not client.containers.list(ignore_removed=True, all=True, filters={"label": f"org.omnidr.run={rid}"})  # nothing keeps running
    assert not client.networks.list(filters={"label": f"org.omnidr.run={rid}"})

    rerun = _run_cli(run_dir, network, agent=agent)
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out + err
    assert "2 of 2 task(s) delivered a report" in out
    assert list((run_dir / "attempts" / tasks[0]).glob("1.interrupted-*"))
