"""`omnidr run`: attempts of one harness over snapshot tasks, from the command line."""

import os
from collections.abc import Callable
from pathlib import Path

from docker.errors import ImageNotFound

from omnidr.benchmark import open_snapshot
from omnidr.errors import UserError
from omnidr.harness import CommandHarness
from sandbox.models import Budget

from ._models import AttemptRecord, ProxyMode, RetryPolicy, SandboxLimits
from ._relay import relay_loopback_urls
from ._runner import RunConfig, open_run, run_attempts

HARNESSES = ("command",)


def run_command_harness(
    snapshot_path: Path,
    run_dir: Path,
    image: str,
    argv: list[str],
    task_ids: list[str] | None,
    model: str,
    upstreams: list[dict[str, str | None]],
    budget: Budget,
    limits: SandboxLimits,
    retry: RetryPolicy,
    proxy_mode: ProxyMode,
    denylist: list[str],
    outside_network: str,
    on_attempt: Callable[[AttemptRecord], None] = lambda _r: None,
    gateway_backoff_s: float = 1.0,
    parallel: int = 1,
) -> dict[str, list[AttemptRecord]]:
    from omnidr.images import build_images, docker_client

    snap = open_snapshot(snapshot_path)
    if not snap.ok:
        raise UserError(f"{snapshot_path}: the snapshot does not load; run `omnidr snapshot validate {snapshot_path}`")
    tasks = task_ids or list(snap.tasks)
    unknown = [t for t in tasks if t not in snap.tasks]
    if unknown:
        raise UserError(f"unknown task id(s): {', '.join(unknown)}; the snapshot has {', '.join(snap.tasks)}")
    if not argv:
        raise UserError("the command harness needs a command after `--`, e.g. `omnidr run ... -- python3 agent.py`")
    if not upstreams:
        raise UserError("no model upstream: pass --openai-base-url and/or --anthropic-base-url")
    for u in upstreams:  # keys are checked before any attempt, not discovered by three failed ones
        if u.get("key_env") and not os.environ.get(u["key_env"]):
            raise UserError(f"{u['key_env']} is not set; export the {u['family']} upstream's key in it, or drop "
                            f"--{u['family']}-key-env for an endpoint that needs none")
    client = docker_client()
    try:
        client.images.get(image)
    except ImageNotFound:
        raise UserError(f"image {image} is not on this Docker engine; build it first (e.g. `omnidr images build`)") from None
    built = {b.name: b for b in build_images(["gateway", "egress"])}
    for name, b in built.items():
        if name in ("gateway", "egress") and not b.tag:
            raise UserError(f"the {name} image cannot be built here: {b.reason}")
    config = RunConfig(
        snapshot=str(Path(snapshot_path).absolute()), tasks=tasks, harness="command", agent_image=image, command=argv, model=model,
        upstreams=upstreams, budget=budget, limits=limits, retry=retry, proxy_mode=proxy_mode, denylist=denylist,
        gateway_image=built["gateway"].tag, egress_image=built["egress"].tag,
        outside_network=outside_network,
    )
    open_run(run_dir, config)  # refuses a changed configuration before any work
    harness = CommandHarness(image_ref=image, argv=argv)
    # a model server on the host's loopback is reached through a relay, as for the other harnesses
    reach, relays = relay_loopback_urls(client, [u["base_url"] for u in upstreams], outside_network)
    try:
        return run_attempts(client, run_dir, config, snap, harness, on_attempt, gateway_backoff_s, parallel,
                            reach=reach)
    finally:
        for relay in relays:
            relay.close()
