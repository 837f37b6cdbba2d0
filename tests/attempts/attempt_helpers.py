"""Helpers for sandbox tests: the probe agent's command line and a fast command-harness run."""

import json
from pathlib import Path

HERE = Path(__file__).parent
DEMO = HERE.parents[1] / "snapshots" / "demo"


def agent_argv(*actions: str) -> list[str]:
    return ["python3", "-c", (HERE / "agent_probe.py").read_text(), *actions]


def run_attempts(run_dir: Path, images: dict, network: str, actions: list[str], tasks=None, **overrides):
    """Run the command harness through the Python API with small, fast defaults."""
    from omnidr.attempts import RetryPolicy, SandboxLimits, Upstream
    from omnidr.harness import run_command_harness
    from sandbox.models import Budget

    budget = Budget(**{"wall_time_s": 60, "attempts_per_task": 1, **overrides.pop("budget", {})})
    limits = SandboxLimits(**{"cpus": 1.0, "memory_mb": 512, "pids": 128, **overrides.pop("limits", {})})
    return run_command_harness(
        DEMO, run_dir, images["base"], agent_argv(*actions), tasks or [first_task()],
        model="fake-model",
        upstreams=[Upstream(family="openai", base_url="http://upstream:9000/v1", key_env="OMNIDR_TEST_REAL_KEY")],
        budget=budget, limits=limits, retry=overrides.pop("retry", RetryPolicy()),
        proxy_mode=overrides.pop("proxy_mode", "replay"), denylist=overrides.pop("denylist", []),
        outside_network=network, gateway_backoff_s=0.05, allow_nets=overrides.pop("allow_nets", ()),
        parallel=overrides.pop("parallel", 1), prices=overrides.pop("prices", None), host=overrides.pop("host", None),
    )


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def first_task() -> str:
    return json.loads((DEMO / "snapshot.json").read_text())["tasks"][0]
