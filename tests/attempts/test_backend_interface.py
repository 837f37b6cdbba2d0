"""The attempt lifecycle talks to the sandbox backend interface only: a second backend, written here, runs an
attempt end to end through `run_attempts` (the agent as a local process, its model door a real gateway on
loopback), and the lifecycle's limits, records and reasons hold on it as on Docker. An unknown backend name is
refused with one line; the lifecycle's modules import nothing of Docker."""

import ast
import asyncio
import json
import socket
import subprocess
import sys
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from attempt_helpers import DEMO, first_task
from fake_upstream import USAGE, Handler

from omnidr.attempts import (
    AgentContext,
    AttemptSpec,
    DoorControl,
    ExecResult,
    Harness,
    RetryPolicy,
    RunConfig,
    RunOptions,
    SandboxLimits,
    Upstream,
    _backend,
    run_attempts,
    sandbox_backend,
)
from omnidr.benchmark import open_snapshot
from omnidr.errors import UserError
from omnidr.harness import CommandHarness
from omnidr.paths import AttemptPaths, RunPaths
from sandbox.gateway import GatewayConfig, start_gateway
from sandbox.models import Budget

ATTEMPTS = Path(__file__).resolve().parents[2] / "omnidr" / "attempts"

# The agent: one model request through its gateway, then a report where the sandbox says (standard library only).
AGENT = r"""
import json, os, sys, time, urllib.request
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": os.environ["OMNIDR_MODEL"], "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
with urllib.request.urlopen(req, timeout=30) as r:
    print("model answered", r.status, flush=True)
time.sleep(float(sys.argv[1]))
out = os.environ["OMNIDR_REPORT_DIR"]
os.makedirs(out, exist_ok=True)
open(os.path.join(out, "index.html"), "w").write("<!DOCTYPE html><title>r</title><script src='data.js'></script>")
data = {"contract": "omnidr-report-1", "title": "local", "language": "en", "query": "q", "overview": "o",
        "video": {"src": "video.mp4", "duration_s": 36},
        "timeline": [{"id": "s1", "start_s": 0, "end_s": 5, "title": "opening", "note": "what the video shows"}]}
open(os.path.join(out, "data.js"), "w").write("window.DATA = " + json.dumps(data) + ";\n")
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LoopbackSandbox:
    """One attempt: the agent is a process of this host, its output folder the attempt's own `output/`; its model
    door is the real gateway, listening on loopback in this process; its web door is a closed port."""

    def __init__(self, spec: AttemptSpec, harness: Harness, upstream_url: str):
        self.spec, self.harness, self.upstream_url = spec, harness, upstream_url
        dirs = AttemptPaths(spec.folder)
        self.port = _free_port()
        self.context = AgentContext(
            instruction_path=str(dirs.instruction), video_path=str(spec.video),
            contract_dir=str(spec.contract_dir), output_dir=str(dirs.output), report_dir=str(dirs.report),
            gateway_url=f"http://127.0.0.1:{self.port}", proxy_url=f"http://127.0.0.1:{_free_port()}",
            token="local-agent-token-0123", model=spec.model, logs_dir=str(dirs.harness_logs))
        self.control = DoorControl(self.context.gateway_url, "local-admin-token-0123")
        self.served_before = 0
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.gateway = None
        self.proc: subprocess.Popen | None = None

    def _run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def prepare(self, dirs: AttemptPaths) -> None:
        pass

    def images(self):
        return {"agent": f"local:{sys.executable}"}, {}

    def start(self, dirs: AttemptPaths, command: list[str]) -> None:
        config = GatewayConfig(
            host="127.0.0.1", port=self.port, agent_token=self.context.token, admin_token=self.control.admin_token,
            upstreams={"openai": {"base_url": self.upstream_url, "api_key": "real-upstream-key"}},
            budget=self.spec.budget, log_path=dirs.gateway_log, summary_path=dirs.gateway_state, model=self.spec.model)
        self.thread.start()
        self.gateway = self._run(start_gateway(config))
        ctx = self.context
        env = {"PATH": "/usr/bin:/bin", "OPENAI_BASE_URL": f"{ctx.gateway_url}/v1", "OPENAI_API_KEY": ctx.token,
               "OMNIDR_MODEL": ctx.model, "OMNIDR_REPORT_DIR": ctx.report_dir, **self.harness.environment(ctx)}
        with dirs.agent_log.open("wb") as console:
            self.proc = subprocess.Popen(command, env=env, cwd=dirs.output, stdout=console, stderr=subprocess.STDOUT)

    def wait(self, timeout_s: float) -> int | None:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()

    def exec(self, argv: list[str]) -> ExecResult:
        done = subprocess.run(argv, capture_output=True, check=False)
        return ExecResult(done.returncode, done.stdout)

    def copy_out(self, dirs: AttemptPaths) -> str | None:
        return None  # the agent wrote into the attempt folder itself, and its console went to agent.log

    def end_doors(self, dirs: AttemptPaths) -> None:
        if self.gateway is not None:
            self._run(self.gateway.stop())  # writes gateway_state.json
            self.gateway = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()
        self.end_doors(AttemptPaths(self.spec.folder))
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join()


class LoopbackBackend:
    name = "loopback"

    def __init__(self, upstream_url: str):
        self.upstream_url = upstream_url
        self.made: list[LoopbackSandbox] = []

    def for_run(self, attempts_root: Path) -> "LoopbackBackend":
        return self

    def close(self) -> None:
        pass

    def sandbox(self, spec: AttemptSpec, harness: Harness) -> LoopbackSandbox:
        self.made.append(LoopbackSandbox(spec, harness, self.upstream_url))
        return self.made[-1]

    def cleanup_run(self, run_id: str, mine: bool = False, run_dir: Path | None = None) -> int:
        return 0

    def host_address(self, network: str) -> str:
        return "127.0.0.1"


@pytest.fixture
def loopback(monkeypatch):
    """The loopback backend, registered by name in front of a fake model API on loopback."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    backend = LoopbackBackend(f"http://127.0.0.1:{server.server_address[1]}/v1")
    monkeypatch.setitem(_backend._BACKENDS, "loopback", lambda _client: backend)
    yield backend
    server.shutdown()


def _run(run_dir: Path, sleep_s: float, budget: dict) -> list:
    snap = open_snapshot(DEMO)
    harness = CommandHarness(image_ref="local", argv=[sys.executable, "-c", AGENT, str(sleep_s)])
    config = RunConfig(
        snapshot=str(DEMO), tasks=[first_task()], harness="command", agent_image="local", command=harness.argv,
        model="fake-model", upstreams=[Upstream(family="openai", base_url="http://upstream.invalid/v1")],
        budget=Budget(**{"wall_time_s": 60, "attempts_per_task": 1, **budget}), limits=SandboxLimits(),
        retry=RetryPolicy(), proxy_mode="deny", gateway_image="none", egress_image="none")
    return run_attempts(None, run_dir, config, snap, harness, RunOptions(backend="loopback"))[first_task()]


def test_an_attempt_runs_end_to_end_on_another_backend_with_the_same_records(tmp_path, loopback):
    [record] = _run(tmp_path / "run", 0, {})
    assert record.reason.value == "success", record.detail
    assert record.detail.startswith("report delivered at output/report/index.html")
    attempt = RunPaths(tmp_path / "run").attempt(first_task(), 1)
    on_disk = json.loads(attempt.record.read_text())
    assert on_disk["reason"] == "success" and on_disk["image_ids"] == {"agent": f"local:{sys.executable}"}
    # what the model door counted reaches the record, as with Docker's gateway
    assert record.budget_use.requests == 1
    assert (record.budget_use.input_tokens, record.budget_use.output_tokens) == (USAGE["prompt_tokens"],
                                                                                   USAGE["completion_tokens"])
    [exchange] = [json.loads(line) for line in attempt.gateway_log.read_text().splitlines()]
    assert exchange["status"] == 200
    assert b"model answered 200" in attempt.agent_log.read_bytes()
    assert attempt.instruction.read_text().strip()  # the instruction was written where the agent was told
    summary = json.loads(RunPaths(tmp_path / "run").attempts_summary.read_text())
    assert summary == {first_task(): ["success"]}
    [sandbox] = loopback.made
    assert sandbox.proc is not None and sandbox.proc.returncode == 0 and not sandbox.thread.is_alive()


def test_the_wall_clock_is_the_lifecycles_and_kills_an_agent_of_any_backend(tmp_path, loopback):
    [record] = _run(tmp_path / "run", 120, {"wall_time_s": 3})
    assert record.reason.value == "timeout"
    assert record.detail == "killed at the wall-clock limit of 3 s"
    assert record.exit_code is None and 3 <= record.wall_time_s < 30
    assert record.budget_use.requests == 1
    [sandbox] = loopback.made
    assert sandbox.proc is not None and sandbox.proc.returncode is not None  # killed, not left running


def test_an_unknown_backend_is_refused_with_one_line_before_anything_is_made(tmp_path):
    with pytest.raises(UserError) as refused:
        sandbox_backend("podman")
    message = str(refused.value)
    assert "\n" not in message and "podman" in message and "docker" in message
    assert refused.value.exit_code == 2
    with pytest.raises(UserError):
        run_attempts(None, tmp_path / "run", None, None, None, RunOptions(backend="podman"))  # type: ignore[arg-type]
    assert not (tmp_path / "run").exists()


def _imports(module: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
    return names


@pytest.mark.parametrize("module", ["_lifecycle.py", "_runner.py", "_executors.py", "_spec.py"])
def test_the_lifecycle_imports_nothing_of_docker(module):
    """(The registry, `_backend`, is the one place that names the Docker backend's module.)"""
    names = _imports(ATTEMPTS / module)
    docker = sorted(n for n in names if n.split(".")[0] == "docker" or n in ("._docker", "._helpers", "._relay"))
    assert not docker, f"{module} imports {docker}"
