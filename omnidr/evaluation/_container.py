"""`omnidr score --docker`: the same scoring inside the evaluator image.

The run folder and the snapshot are mounted read-only, the output folder writable. Without a
judge endpoint the container has no network at all. With one, the container sits alone on an
internal Docker network whose only other member is a relay (same image) that forwards TCP to the
judge's host and port; the judge's host name is pointed at the relay, so TLS stays end to end
and nothing else is reachable.
"""

import ipaddress
import os
import secrets
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from omnidr._files import write_atomic
from omnidr.errors import UserError
from omnidr.paths import SUMMARY_FILE

from ._judge import JudgeSettings
from ._models import RunEvaluation
from ._run import _snapshot_path, read_run

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # the omnidr package on the host
LABEL = "org.omnidr.evaluator"
IP_LITERAL_HOST = "judge-endpoint"
KEY_VAR = "OMNIDR_JUDGE_API_KEY"


def _judge_route(base_url: str) -> tuple[str, str, int, str]:
    """(url as the container uses it, host name to map, port, real host to relay to)."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"--judge-base-url {base_url}: give an http(s) URL")
    host = parts.hostname
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        ipaddress.ip_address(host)
        literal = True
    except ValueError:
        literal = False
    if host in ("localhost",) or (literal and ipaddress.ip_address(host).is_loopback):
        raise UserError(f"--judge-base-url {base_url}: a loopback address is not reachable from the evaluator "
                        "container; use an address the Docker host's containers can reach (e.g. the bridge gateway)")
    mapped = IP_LITERAL_HOST if literal else host
    netloc = f"{mapped}:{parts.port}" if parts.port else mapped
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)), mapped, port, host


def _wait_listening(relay, within_s: float = 60.0) -> None:
    """Wait until the relay prints that it listens: an evaluator started before that would find the judge's
    address refusing connections and stop with "the judge endpoint does not answer" (seen on a loaded host)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if b"relay: " in relay.logs(stdout=True, stderr=False):
            return
        relay.reload()
        if relay.status not in ("created", "running"):
            tail = relay.logs().decode("utf-8", "replace").strip().splitlines()[-2:]
            raise RuntimeError(f"the judge relay stopped before it listened: {' | '.join(tail) or relay.status}")
        time.sleep(0.1)
    raise RuntimeError(f"the judge relay did not listen within {within_s:g} s")


def score_in_container(
    run_dir: Path,
    out_dir: Path,
    snapshot: Path | None,
    settings: JudgeSettings | None,
    tasks: Sequence[str] | None = None,
    progress: Callable[[str], None] = lambda _m: None,
    outside_network: str = "bridge",
    timeout_s: float = 7200.0,
) -> RunEvaluation:
    """Run `python -m omnidr.evaluation score` in the evaluator image and return its summary."""
    from docker.errors import APIError
    from requests.exceptions import ConnectionError as RequestsConnectionError
    from requests.exceptions import ReadTimeout

    from omnidr.images import build_images, docker_client

    run_dir = Path(run_dir).resolve()
    snapshot_dir = _snapshot_path(run_dir, read_run(run_dir), snapshot).resolve()
    out_dir = Path(out_dir).resolve()
    client = docker_client(timeout_s=600)
    built = build_images(["evaluator"], progress=progress)[-1]
    if not built.tag:
        raise UserError(f"the evaluator image is {built.status}: {built.reason}; fix that and retry, or drop "
                        "`--docker` to score on the host")
    out_dir.mkdir(parents=True, exist_ok=True)  # only once there is something to score with
    image = client.images.get(built.tag)
    env_list = image.attrs.get("Config", {}).get("Env") or []
    volumes = {
        str(run_dir): {"bind": "/data/run", "mode": "ro"},
        str(snapshot_dir): {"bind": "/data/snapshot", "mode": "ro"},
        str(out_dir): {"bind": "/data/out", "mode": "rw"},
    }
    if "OMNIDR_PACKAGE=mounted" in env_list:
        volumes[str(PACKAGE_DIR)] = {"bind": "/opt/omnidr/omnidr", "mode": "ro"}
    command = ["score", "/data/run", "--snapshot", "/data/snapshot", "--out", "/data/out", "--json"]
    for t in tasks or ():
        command += ["--task", t]
    suffix = secrets.token_hex(4)
    labels = {LABEL: suffix}
    environment: dict[str, str] = {}
    made: list = []
    network_kwargs: dict = {"network_mode": "none"}
    try:
        if settings is not None:
            url, mapped, port, real_host = _judge_route(settings.base_url)
            internal = client.networks.create(f"omnidr-eval-{suffix}", driver="bridge", internal=True, labels=labels,
                                              options={"com.docker.network.bridge.inhibit_ipv4": "true"})
            made.append(internal)
            relay = client.containers.create(
                built.tag, entrypoint=["python", "-m", "omnidr.evaluation._relay"], command=[str(port), real_host, str(port)],
                name=f"omnidr-judge-relay-{suffix}", labels=labels, network=outside_network, volumes=(
                    {str(PACKAGE_DIR): {"bind": "/opt/omnidr/omnidr", "mode": "ro"}} if "OMNIDR_PACKAGE=mounted" in env_list else {}),
                read_only=True, cap_drop=["ALL"], security_opt=["no-new-privileges"], mem_limit="128m", pids_limit=64,
                detach=True,
            )
            made.append(relay)
            internal.connect(relay, aliases=["judge-relay"])
            relay.start()
            _wait_listening(relay)
            relay.reload()
            relay_ip = relay.attrs["NetworkSettings"]["Networks"][internal.name]["IPAddress"]
            network_kwargs = {"network": internal.name, "extra_hosts": {mapped: relay_ip}}
            command += ["--judge-base-url", url, "--judge-model", settings.model, "--judge-key-env", KEY_VAR,
                        "--judge-concurrency", str(settings.concurrency), "--judge-timeout", str(settings.timeout_s)]
            key = os.environ.get(settings.api_key_env)
            if key:
                environment[KEY_VAR] = key
        progress(f"running the evaluator in {built.tag}")
        container = client.containers.run(
            built.tag, command=command, name=f"omnidr-evaluator-{suffix}", labels=labels, volumes=volumes,
            environment=environment, user=f"{os.getuid()}:{os.getgid()}", read_only=True,
            tmpfs={"/tmp": "size=1g"}, shm_size="512m", cap_drop=["ALL"], security_opt=["no-new-privileges"],
            mem_limit="4g", pids_limit=1024, detach=True, **network_kwargs,
        )
        made.append(container)
        try:
            status = container.wait(timeout=timeout_s)
        except (ReadTimeout, RequestsConnectionError):
            container.kill()
            raise UserError(f"the evaluator container did not finish within {timeout_s:g} s") from None
        code = status.get("StatusCode", 1)
        if code != 0:
            tail = container.logs(stdout=False, stderr=True).decode("utf-8", "replace").strip().splitlines()[-3:]
            message = " | ".join(tail) or f"exit code {code}"
            if code == 2:
                raise UserError(f"evaluator container: {message.removeprefix('error: ')}")
            raise RuntimeError(f"the evaluator container failed (exit code {code}): {message}")
        summary_path = out_dir / SUMMARY_FILE
        summary = RunEvaluation.model_validate_json(summary_path.read_text("utf-8"))
        # The container saw its mount points; record the host folders they stood for.
        summary = summary.model_copy(update={"run_dir": str(run_dir), "snapshot": str(snapshot_dir)})
        write_atomic(summary_path, summary.model_dump_json(indent=2))
        return summary
    finally:
        for item in reversed(made):
            try:
                if hasattr(item, "remove") and hasattr(item, "kill"):
                    item.remove(force=True)
                else:
                    item.remove()
            except APIError:
                pass
