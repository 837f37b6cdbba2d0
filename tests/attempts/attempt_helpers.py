"""Helpers for sandbox tests: the probe agent's command line and a fast command-harness run."""

import json
from pathlib import Path

HERE = Path(__file__).parent
DEMO = HERE.parents[1] / "snapshots" / "demo"


def agent_argv(*actions: str) -> list[str]:
    return ["python3", "-c", (HERE / "agent_probe.py").read_text(), *actions]


def command_config(image: str, argv: list[str], budget, proxy_mode: str = "replay", network: str | None = None,
                   model: str = "fake-model", **web):
    """The system config of a command-harness run (the Python API of `omnidr run --harness command`)."""
    from omnidr.harness import Endpoint, SystemConfig, SystemSpec, WebPolicy

    agent = SystemSpec(harness="command", model=Endpoint(spec=model, name=model, base_url=None, key_env=None),
                       image=image, command=tuple(argv))
    return SystemConfig(agent=agent, budget=budget, budget_label="test",
                        web=WebPolicy.on_proxy(proxy_mode, outside_network=network, **web))


def run_attempts(run_dir: Path, images: dict, network: str, actions: list[str], tasks=None, **overrides):
    """Run the command harness through the Python API with small, fast defaults."""
    from omnidr.attempts import RetryPolicy, SandboxLimits, Upstream
    from omnidr.harness import SystemRunOptions, run_command_harness
    from sandbox.models import Budget

    budget = Budget(**{"wall_time_s": 60, "attempts_per_task": 1, **overrides.pop("budget", {})})
    limits = SandboxLimits(**{"cpus": 1.0, "memory_mb": 512, "pids": 128, **overrides.pop("limits", {})})
    config = command_config(images["base"], agent_argv(*actions), budget, overrides.pop("proxy_mode", "replay"),
                            network, denylist=tuple(overrides.pop("denylist", [])),
                            allow_nets=tuple(overrides.pop("allow_nets", ())))
    options = SystemRunOptions(
        tasks=tasks or [first_task()], limits=limits, retry=overrides.pop("retry", RetryPolicy()),
        upstreams=[Upstream(family="openai", base_url="http://upstream:9000/v1", key_env="OMNIDR_TEST_REAL_KEY")],
        gateway_backoff_s=0.05, parallel=overrides.pop("parallel", 1), prices=overrides.pop("prices", None),
        host=overrides.pop("host", None), on_note=lambda _m: None)
    assert not overrides, f"unknown overrides {sorted(overrides)}"
    return run_command_harness(DEMO, run_dir, config, options)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def first_task() -> str:
    return json.loads((DEMO / "snapshot.json").read_text())["tasks"][0]
