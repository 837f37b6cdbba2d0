"""The evaluator image: where every score is computed by default (`--evaluator docker`).

A report is scored by two containers of the image, one after the other:

- the probe step runs the report's JavaScript in Chromium: no network at all, no judge key in its environment or
  files, the run folder and the snapshot read-only, and its output written to a folder of its own (never the
  output folder, so that it cannot touch earlier evaluations or the judge cache). It runs as an unprivileged user
  with Chromium's own sandbox, which needs user namespaces: Docker's default seccomp profile forbids them, so this
  container gets `seccomp_profile()`, which allows them and refuses the system calls that would widen what a
  process in a user namespace can reach (mounts, keyrings, tracing, BPF, io_uring, modules, clocks, ...);
- the judge step holds the key and runs no browser: it reads the snapshot and what the probe step wrote (regular
  files only, copied without following links), judges, scores and writes the output folder. Without a judge
  endpoint it has no network; with one, it sits alone on an internal Docker network whose only other member is a
  relay (same image) that forwards TCP to the judge's host and port; the judge's host name is pointed at the
  relay, so TLS stays end to end and nothing else is reachable.

Short-answer and multiple-choice tasks run no browser: one container (the judge step's layout, with the run
folder read-only) scores them.
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

from ._models import RunEvaluation
from ._request import ScoreRequest
from ._run import _snapshot_path, read_run_config

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # the omnidr package on the host
LABEL = "org.omnidr.evaluator"
IP_LITERAL_HOST = "judge-endpoint"
KEY_VAR = "OMNIDR_JUDGE_API_KEY"


def judge_route(base_url: str) -> tuple[str, str, int, str]:
    """(url as the container uses it, host name to map, port, real host to relay to)."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"--judge {base_url}: give an http(s) URL")
    host = parts.hostname
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        ipaddress.ip_address(host)
        literal = True
    except ValueError:
        literal = False
    if host in ("localhost",) or (literal and ipaddress.ip_address(host).is_loopback):
        raise UserError(f"judge endpoint {base_url}: a loopback address is not reachable from the evaluator image; "
                        "serve the judge on an address the Docker host's containers reach (e.g. the bridge gateway, "
                        "172.17.0.1), or score on this machine with --evaluator host")
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


BLOCKED_SYSCALLS = (
    "acct", "add_key", "bpf", "clock_adjtime", "clock_settime", "create_module", "delete_module", "fanotify_init",
    "finit_module", "fsconfig", "fsmount", "fsopen", "fspick", "get_kernel_syms", "init_module", "io_uring_enter",
    "io_uring_register", "io_uring_setup", "ioperm", "iopl", "kcmp", "kexec_file_load", "kexec_load", "keyctl",
    "lookup_dcookie", "mount", "mount_setattr", "move_mount", "name_to_handle_at", "nfsservctl", "open_by_handle_at",
    "open_tree", "perf_event_open", "pidfd_getfd", "pivot_root", "process_vm_readv", "process_vm_writev", "ptrace",
    "query_module", "quotactl", "quotactl_fd", "reboot", "request_key", "setns", "settimeofday", "stime", "swapoff",
    "swapon", "syslog", "sysfs", "_sysctl", "umount", "umount2", "uselib", "userfaultfd", "ustat", "vm86", "vm86old",
)
"""System calls the probe container may not make (EPERM). Our choice, not Docker's list: Docker's default profile
refuses user namespaces, which Chromium's sandbox needs, so this profile allows them (clone and unshare with
namespace flags, chroot) and refuses what a process could do with a namespace's capabilities or outside any
container's business. The container also drops every capability and cannot gain one (no-new-privileges)."""

PROBE_USER = "65534:65534"
"""The probe container's user when the host user is root (Chromium's sandbox does not start as root)."""


def seccomp_profile() -> str:
    """The probe container's seccomp profile (JSON, as Docker takes it inline)."""
    import json

    return json.dumps({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
        {"names": list(BLOCKED_SYSCALLS), "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]})


def _run_step(client, tag: str, name: str, timeout_s: float, made: list, security_opt: Sequence[str] = (),
              **spec) -> None:
    """One evaluator container, run to its end; a user error inside (exit code 2) is one line here too. `spec`
    is what differs between the steps (command, labels, volumes, environment, user, network)."""
    from requests.exceptions import ConnectionError as RequestsConnectionError
    from requests.exceptions import ReadTimeout

    container = client.containers.run(
        tag, name=name, read_only=True, tmpfs={"/tmp": "size=1g"}, shm_size="512m", cap_drop=["ALL"],
        security_opt=["no-new-privileges", *security_opt], mem_limit="4g", pids_limit=1024, detach=True, **spec,
    )
    made.append(container)
    try:
        status = container.wait(timeout=timeout_s)
    except (ReadTimeout, RequestsConnectionError):
        container.kill()
        raise UserError(f"the evaluator container {name} did not finish within {timeout_s:g} s") from None
    code = status.get("StatusCode", 1)
    if code != 0:
        tail = container.logs(stdout=False, stderr=True).decode("utf-8", "replace").strip().splitlines()[-3:]
        message = " | ".join(tail) or f"exit code {code}"
        if code == 2:
            raise UserError(f"evaluator container: {message.removeprefix('error: ')}")
        raise RuntimeError(f"the evaluator container {name} failed (exit code {code}): {message}")


def score_in_container(request: ScoreRequest, progress: Callable[[str], None] = lambda _m: None,
                       timeout_s: float = 7200.0) -> RunEvaluation:
    """Score the request's run folder in the evaluator image (see the module's docstring) and return its summary,
    whatever `request.evaluator` says (`score_folder` honours it); `request.cache_dir` does not apply (the image
    keeps its cache in OUT/judge-cache)."""
    import shutil
    import tempfile

    from docker.errors import APIError

    from omnidr.benchmark import open_snapshot
    from omnidr.images import build_images, docker_client

    from ._models import IMAGE_ENV

    if request.run_dir is None:
        raise UserError("give the run folder to score")
    settings, tasks, outside_network = request.judge_settings, request.tasks, request.outside_network or "bridge"
    run_dir = Path(request.run_dir).resolve()
    snapshot_dir = _snapshot_path(run_dir, read_run_config(run_dir), request.snapshot).resolve()
    answers = open_snapshot(snapshot_dir).kind.delivers_answer
    out_dir = request.target.resolve()
    client = docker_client(timeout_s=600)
    built = build_images(["evaluator"], progress=progress)[-1]
    if not built.tag:
        raise UserError(f"the evaluator image is {built.status}: {built.reason}; fix that and retry, or pass "
                        "`--evaluator host` to score on this machine")
    out_dir.mkdir(parents=True, exist_ok=True)  # only once there is something to score with
    image = client.images.get(built.tag)
    mounted = "OMNIDR_PACKAGE=mounted" in (image.attrs.get("Config", {}).get("Env") or [])
    package = {str(PACKAGE_DIR): {"bind": "/opt/omnidr/omnidr", "mode": "ro"}} if mounted else {}
    task_args = [a for t in tasks or () for a in ("--task", t)]
    suffix = secrets.token_hex(4)
    from omnidr.attempts import LABEL_RUN_DIR

    labels = {LABEL: suffix, LABEL_RUN_DIR: str(run_dir)}  # the run folder scored, as an attempt's objects carry
    here = f"{os.getuid()}:{os.getgid()}"
    made: list = []
    probe_dir: Path | None = None
    try:
        if not answers:  # the probe step: the report's JavaScript, no key, no network, a folder of its own
            probe_dir = Path(tempfile.mkdtemp(prefix="omnidr-probe-"))
            probe_user = here if os.getuid() != 0 else PROBE_USER
            if os.getuid() == 0:
                os.chown(probe_dir, 65534, 65534)
            probe_dir.chmod(0o755)  # the judge step's user (the host's; root without capabilities) reads it
            progress(f"probing the reports in {built.tag} (no network, no judge key)")
            _run_step(client, built.tag, f"omnidr-evaluator-probe-{suffix}", timeout_s, made,
                      security_opt=[f"seccomp={seccomp_profile()}"],
                      command=["score", "/data/run", "--snapshot", "/data/snapshot", "--out", "/data/probe", "--step",
                               "probe", *task_args],
                      labels=labels,
                      volumes={str(run_dir): {"bind": "/data/run", "mode": "ro"},
                               str(snapshot_dir): {"bind": "/data/snapshot", "mode": "ro"},
                               str(probe_dir): {"bind": "/data/probe", "mode": "rw"}, **package},
                      environment={IMAGE_ENV: built.tag}, user=probe_user, network_mode="none")
        environment = {IMAGE_ENV: built.tag}
        network_kwargs: dict = {"network_mode": "none"}
        judge_args: list[str] = []
        if settings is not None:
            url, mapped, port, real_host = judge_route(settings.base_url)
            internal = client.networks.create(f"omnidr-eval-{suffix}", driver="bridge", internal=True, labels=labels,
                                              options={"com.docker.network.bridge.inhibit_ipv4": "true"})
            made.append(internal)
            relay = client.containers.create(
                built.tag, entrypoint=["python", "-m", "omnidr.evaluation._relay"], command=[str(port), real_host, str(port)],
                name=f"omnidr-judge-relay-{suffix}", labels=labels, network=outside_network, volumes=package,
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
            judge_args = ["--judge", f"{settings.model}@{url}", "--judge-key-env", KEY_VAR,
                          "--judge-concurrency", str(settings.concurrency), "--judge-timeout", str(settings.timeout_s)]
            key = os.environ.get(settings.api_key_env)
            if key:
                environment[KEY_VAR] = key
        volumes = {str(snapshot_dir): {"bind": "/data/snapshot", "mode": "ro"},
                   str(out_dir): {"bind": "/data/out", "mode": "rw"}, **package}
        if probe_dir is not None:  # the judge step reads what the probe step wrote, never the run folder
            volumes[str(probe_dir)] = {"bind": "/data/probe", "mode": "ro"}
            command = ["score", "--step", "judge", "--probe-dir", "/data/probe", "--snapshot", "/data/snapshot"]
        else:
            volumes[str(run_dir)] = {"bind": "/data/run", "mode": "ro"}
            command = ["score", "/data/run", "--snapshot", "/data/snapshot", "--evaluator", "host", *task_args]
        progress(f"{'judging' if probe_dir is not None else 'scoring the answers'} in {built.tag}")
        _run_step(client, built.tag, f"omnidr-evaluator-{suffix}", timeout_s, made,
                  command=[*command, "--out", "/data/out", "--format", "json", *judge_args], labels=labels,
                  volumes=volumes, environment=environment, user=here, **network_kwargs)
        summary_path = out_dir / SUMMARY_FILE
        summary = RunEvaluation.model_validate_json(summary_path.read_text("utf-8"))
        # The containers saw their mount points; record the host folders they stood for.
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
        if probe_dir is not None:
            shutil.rmtree(probe_dir, ignore_errors=True)


def score_folder(request: ScoreRequest, progress: Callable[[str], None] = lambda _m: None) -> RunEvaluation:
    """Score a run folder where `request.evaluator` says: `docker` (the evaluator image's containers, the default of
    every command) or `host` (this process; `request.cache_dir` applies to it only)."""
    from ._run import score_run

    request = request.model_copy(update={"out_dir": request.target})
    if request.evaluator == "docker":
        return score_in_container(request, progress=progress)
    return score_run(request, progress)
