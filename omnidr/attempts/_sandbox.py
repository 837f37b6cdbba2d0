"""One attempt in the sandbox: a private internal network, the agent on it alone, the model
gateway and the egress proxy on it and on an outside network, budgets enforced outside the agent."""

import dataclasses
import errno
import ipaddress
import json
import logging
import os
import random
import re
import secrets
import socket
import tarfile
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docker.types
import requests
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from pydantic import SecretStr

from omnidr._files import write_atomic
from omnidr.benchmark import check_report
from omnidr.images import ImagePackages, packages_of
from omnidr.paths import HARNESS_LOGS, AttemptPaths
from sandbox.egress import AGENT_CA_PATH, CA_FILE, OpenGeneration, agent_ca_environment
from sandbox.models import (
    GATEWAY_LOG,
    GATEWAY_STATE,
    MCQ_KIND,
    MEDIA_DIR,
    NETWORK_LOG,
    PROTOCOL_FILE,
    PROVIDER_WEB_LOG,
    QUESTION_FILE,
    SHORT_ANSWER_KIND,
    TASK_KIND_ENV,
    AnswerFile,
    AttemptOpen,
    Budget,
    FinalizationResult,
    FinalizeRequest,
    GatewayExchange,
    GatewayState,
    McqQuestion,
    ModelPolicy,
    ModelPricing,
    ProviderToolsPolicy,
    ProxyMode,
    SearchDoor,
    SpendCounts,
    read_answer_file,
    read_web_log,
)

from ._admission import Admission, Cancelled, NotStarted
from ._contract import AgentContext, Harness
from ._helpers import EGRESS_ADMIN_ENV, HelperPair, HelperPool, PairFailed, ca_digest, direct_session
from ._models import (
    AttemptReason,
    AttemptRecord,
    BudgetUse,
    DoorPolicy,
    SandboxLimits,
    Upstream,
)

log = logging.getLogger(__name__)

LABEL_RUN = "org.omnidr.run"
# Set by the runner on Ctrl-C: attempts stopped by it are not finished attempts (no attempt.json is
# written, so the next invocation sets the folder aside and runs the attempt again), and no new one starts.
INTERRUPTED = threading.Event()
LABEL_ATTEMPT = "org.omnidr.attempt"
# Who made an object, as `host:pid:start` (start: the process's start time in clock ticks since boot, so that
# a reused pid is not taken for the same process): the process that created it (a Ray worker, or the
# driver itself) and the driver of the run (`omnidr eval` or `run`). Cleanup removes only what a process that
# is gone left behind, never what a live driver (on another run root with the same run id) is using.
LABEL_OWNER = "org.omnidr.owner"
LABEL_DRIVER = "org.omnidr.driver"
# The run folder (absolute path) an object serves. Identical systems share a run id, so drivers on other run
# folders share the LABEL_RUN value; cleanup never touches an object labelled with another run folder.
LABEL_RUN_DIR = "org.omnidr.run-dir"
GATEWAY_PORT = 8080
PROXY_PORT = 3128
SANDBOX_POOL = ipaddress.ip_network("198.18.0.0/15")
"""Addresses of the attempts' internal networks (RFC 2544 benchmarking range, never a real destination); the
egress proxy refuses them, so an agent cannot reach the sandbox's own networks through it."""
SANDBOX_SUBNETS = list(SANDBOX_POOL.subnets(new_prefix=28))
SUBNET_TRIES = 20
# The agent's /etc/resolv.conf: a resolver where nothing listens (the agent's own loopback, port 53 closed), one
# try, so that every lookup but the hosts file's two doors fails at once.
RESOLV_CONF = ("# OmniDR sandbox: no resolver. The model gateway and the egress proxy are in /etc/hosts; the proxy\n"
               "# resolves the web's names.\nnameserver 127.0.0.1\noptions attempts:1 timeout:1\n")
AGENT_UID = "1000:1000"
HELPER_START_TIMEOUT_S = 60.0
ANSWER_KIND_VALUES = (SHORT_ANSWER_KIND, MCQ_KIND)  # kinds delivered as /output/answer.json (TaskKind's ANSWER_KINDS)
PROTOCOL_PATH = f"/input/{PROTOCOL_FILE}"  # a short-answer snapshot's protocol, as the agent sees it
FINALIZE_TIMEOUT_S = 900.0  # two requests of at most 4,000 output tokens each, with the gateway's retries


@dataclass(frozen=True)
class AttemptSpec:
    """Everything one attempt needs besides the harness."""

    run_id: str
    task_id: str
    attempt: int
    folder: Path  # the attempt's artifact folder on the host
    video: Path  # source video on the host
    instruction: str
    contract_dir: Path | None  # the report contract (report kind); None for a kind without one
    model: str
    upstreams: tuple[Upstream, ...]
    budget: Budget
    limits: SandboxLimits
    gateway_image: str
    egress_image: str
    proxy_mode: ProxyMode = "deny"
    replay_dir: Path | None = None  # web corpus served in replay mode
    captions: tuple[Path, ...] = ()  # caption tracks fetched with the video, mounted beside it
    denylist: tuple[str, ...] = ()
    # provider-side tools (searches that run at the model provider): applied and logged by the gateway
    provider_tools: ProviderToolsPolicy = field(default_factory=lambda: ProviderToolsPolicy.every("deny"))
    outside_network: str = "bridge"  # where the gateway and proxy reach the world (or a fake upstream)
    search_door: SearchDoor | None = None  # a search provider the skills reach through the proxy (which holds its key)
    upstream_ca: tuple[Path, ...] = ()  # extra CAs the proxy trusts for the live web's HTTPS (intercept, record)
    allow_nets: tuple[str, ...] = ()  # ranges off the public internet the proxy may reach (--allow-net)
    capability: str | None = None  # the system's capability level; below text_web the caller closed the web
    model_policy: ModelPolicy = "rewrite"  # what the gateway does with a request for another model than `model`
    pricing: ModelPricing | None = None  # the price the gateway charges every exchange at; None: unpriced
    upstream_limit: tuple[str, str] | None = None  # the run's shared upstream limiter (URL, token); None: none
    gateway_backoff_s: float = 1.0
    report_entry: str = "index.html"
    report_data_file: str = "data.js"
    extra_labels: dict[str, str] = field(default_factory=dict)
    task_kind: str = "report"  # what the agent delivers: a report folder, or (short_answer) /output/answer.json
    protocol_file: Path | None = None  # short_answer: the protocol, mounted at /input/protocol.json
    finalize: FinalizeRequest | None = None  # short_answer: the finalization stage run when research gave no answer
    context_handling: str | None = None  # short_answer: paper-compaction (reference agent) or harness-native
    question: McqQuestion | None = None  # mcq: written to input/question.json, mounted at /input/question.json
    media_dir: Path | None = None  # mcq: the prepared frames, subtitles and audio, mounted at /input/media


def _now() -> datetime:
    return datetime.now(UTC)


def _start_ticks(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot, /proc/PID/stat field 22), None if it is gone. A
    zombie (state Z: killed, not yet reaped by its parent, as a SIGKILLed Ray worker is for a moment) is gone:
    it makes nothing more."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def owner_id() -> str:
    """This driver process, as the LABEL_OWNER of the objects it makes."""
    return f"{socket.gethostname()}:{os.getpid()}:{_start_ticks(os.getpid())}"


def owner_alive(owner: str | None) -> bool:
    """Whether the driver named by a LABEL_OWNER value still runs. An object without one (made before owners
    were labelled) is a leftover; one from another host is never judged from here, so it counts as alive."""
    if not owner or owner.count(":") < 2:
        return False
    host, pid, start = owner.rsplit(":", 2)
    if host != socket.gethostname():
        return True
    return pid.isdigit() and _start_ticks(int(pid)) == start


def dns_exposure(engine_version: str, host_resolv_conf: str) -> str | None:
    """A one-line warning when the Docker engine is one that forwards its embedded resolver's queries from the
    host's namespace, internal networks included (CVE-2024-29018: fixed in 23.0.11, 25.0.4 and 26.0.0), and
    the host's resolver is on loopback (systemd-resolved's 127.0.0.53, as on most Ubuntu hosts). The agent is
    given no resolver (RESOLV_CONF), so only a program that writes DNS packets to 127.0.0.11 itself could use
    that channel; None when there is nothing to warn of."""
    digits = [int(x) for x in re.findall(r"\d+", engine_version)[:3]]
    if len(digits) < 3:
        return None
    version = tuple(digits)
    fixed = version >= (26, 0, 0) or (25, 0, 4) <= version < (26, 0, 0) or (23, 0, 11) <= version < (24, 0, 0)
    servers = re.findall(r"^\s*nameserver\s+(\S+)", host_resolv_conf, re.MULTILINE)
    loopback = [s for s in servers if s.startswith("127.") or s == "::1"]
    if fixed or not loopback:
        return None
    return (f"warning: Docker engine {engine_version} forwards DNS queries of containers on internal networks from the "
            f"host's namespace, and this host's resolver is on loopback ({loopback[0]}) (CVE-2024-29018): the agent "
            "gets no resolver, but a program that queries 127.0.0.11 directly could reach the outside; upgrade the "
            "engine (23.0.11, 25.0.4, 26.0.0 or later) or point the host's resolv.conf at a non-loopback resolver")


def _wait_port(ip: str, port: int, container, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        container.reload()
        if container.status in ("exited", "dead"):
            logs = container.logs(tail=5).decode("utf-8", "replace").strip().replace("\n", " | ")
            raise RuntimeError(f"{container.name} exited during start: {logs}")
        try:
            socket.create_connection((ip, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{container.name} did not listen on {ip}:{port} within {timeout_s:.0f} s")


def _short(exc: BaseException, limit: int = 300) -> str:
    """An exception as one line of a record: its type and its first line, cut to `limit` characters."""
    text = (str(exc).strip().splitlines() or [""])[0]
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _vanished(gone: list[str]) -> str | None:
    """The infra_error detail for containers of the attempt that are no longer on the engine."""
    if not gone:
        return None
    text = (f"the {' and '.join(gone)} container{'s' if len(gone) > 1 else ''} vanished during the attempt (removed "
            "from outside, or the Docker engine restarted)")
    if "output keeper" in gone:
        text += "; the agent's output, held in a tmpfs volume by the keeper, is lost"
    return text


def _mtime(path: Path) -> float:
    """When a file was last written (epoch seconds), 0 when there is none."""
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _outage_requests(gateway_log: Path) -> int:
    """Exchanges that failed on the upstream's side (`GatewayExchange.upstream_outage`)."""
    n = 0
    try:
        lines = gateway_log.read_text("utf-8").splitlines()
    except OSError:
        return 0
    for line in lines:
        try:
            n += GatewayExchange.model_validate_json(line).upstream_outage
        except ValueError:
            continue  # a last line cut short by a kill
    return n


class AttemptSandbox:
    """Creates, runs and tears down the containers and networks of one attempt."""

    def __init__(self, client, spec: AttemptSpec, harness: Harness, pool: HelperPool | None = None,
                 admission: Admission | None = None):
        self.client = client
        self.admission = admission or Admission()  # start slots and the run's stop rule (see _admission)
        self.spec = dataclasses.replace(spec, folder=spec.folder.resolve())  # bind mounts need absolute paths
        self.harness = harness
        # a pool of reused helper pairs (see _helpers); record mode writes its corpus into the attempt's folder
        # from the proxy's start, so its pairs serve one attempt each
        self.pool = pool if pool is not None and spec.proxy_mode != "record" and self.spec.folder.is_relative_to(
            pool.root) else None
        self.pair: HelperPair | None = None
        self._served_since: datetime | None = None  # when the pair began serving this attempt (its log lines)
        self.suffix = f"{spec.run_id[:12]}-{secrets.token_hex(3)}"
        me = owner_id()
        self.labels = {LABEL_RUN: spec.run_id, LABEL_ATTEMPT: f"{spec.task_id}/{spec.attempt}", LABEL_OWNER: me,
                       LABEL_DRIVER: me, **spec.extra_labels}
        self.containers: list = []
        self.networks: list = []
        self.volumes: list = []
        self.doors: dict[str, str] = {}  # alias (gateway, proxy) -> its address on the attempt's internal network
        self.agent_ip: str | None = None  # the agent's fixed address on that network: the doors serve it alone
        self.gateway_ip: str | None = None  # where the controller reaches the gateway (its outside network)
        self.token = "omnidr-attempt-" + secrets.token_hex(16)
        self.admin_token = "omnidr-admin-" + secrets.token_hex(16)
        self.generation = f"{spec.task_id}/{spec.attempt}/{self.suffix}"

    # -- layout on the host ------------------------------------------------------------------
    def _dirs(self) -> AttemptPaths:
        dirs = AttemptPaths(self.spec.folder)
        for d in (dirs.output, dirs.logs, dirs.control, dirs.input):
            d.mkdir(parents=True, exist_ok=True)
        dirs.logs.chmod(0o777)  # written by the helpers' non-root users
        if self.pool is not None:
            # a pooled pair sees the attempt folders under the pool's root at their own paths: its non-root users
            # must be able to pass through every folder from that root down to the attempt's control folder
            folder = dirs.control
            while True:
                folder.chmod(folder.stat().st_mode | 0o001)
                if folder == self.pool.root:
                    break
                folder = folder.parent
        return dirs

    def run(self) -> AttemptRecord:
        spec = self.spec
        dirs = self._dirs()
        started = _now()
        t0 = time.monotonic()
        ctx = AgentContext(
            instruction_path="/input/instruction.txt",
            video_path="/input/" + spec.video.name,
            contract_dir="/input/contract",
            output_dir="/output",
            report_dir="/output/report",
            gateway_url=f"http://gateway:{GATEWAY_PORT}",
            proxy_url=f"http://proxy:{PROXY_PORT}",
            token=self.token,
            model=spec.model,
            logs_dir=f"/output/{HARNESS_LOGS}",
        )
        (dirs.input / "instruction.txt").write_text(spec.instruction, "utf-8")
        if spec.question is not None:
            (dirs.input / QUESTION_FILE).write_text(spec.question.model_dump_json(indent=2), "utf-8")
        record = dict(
            task_id=spec.task_id, attempt=spec.attempt, harness=self.harness.name, command=[], task_kind=spec.task_kind,
            started_at=started, budget=spec.budget, limits=spec.limits, proxy_mode=spec.proxy_mode,
            doors=DoorPolicy(capability=spec.capability, proxy_mode=spec.proxy_mode,
                             web=spec.proxy_mode != "deny" or spec.provider_tools.opens_provider_web,
                             provider_tools=spec.provider_tools, model=spec.model, model_policy=spec.model_policy,
                             denylist_entries=len(spec.denylist), allow_nets=list(spec.allow_nets)),
        )
        image_ids: dict[str, str] = {}
        exit_code = None
        admission = self.admission
        try:
            # the sandbox starts in a start slot (see _admission): from its first object to its agent's start
            try:
                with admission.gate.slot(INTERRUPTED) as waited_s:
                    if admission.breaker.stopped:  # the run stopped while this attempt waited: it never starts
                        raise NotStarted(admission.breaker.reason)
                    record["start_wait_s"] = round(waited_s, 3)
                    setup_t0 = time.monotonic()
                    try:
                        command = self.harness.command(ctx)
                        record["command"] = command
                        image_ids, record["image_packages"] = self._images()
                        internal, output = self._setup(dirs)
                        agent = self._create_agent(dirs, internal, ctx, command, output)
                        agent.start()
                    except (DockerException, RuntimeError, OSError, requests.exceptions.RequestException) as exc:
                        detail = f"sandbox setup failed: {exc}"
                        admission.breaker.failed(detail)
                        return self._finish(record, AttemptReason.infra_error, detail, None, t0, image_ids, dirs)
                    record["setup_s"] = round(time.monotonic() - setup_t0, 3)
                    admission.breaker.started()
            except Cancelled:  # Ctrl-C while queued: INTERRUPTED is set, so nothing is written
                return self._finish(record, AttemptReason.infra_error, "interrupted while waiting for a start slot",
                                    None, t0, image_ids, dirs)
            run_t0 = time.monotonic()
            timed_out, fault, stalled = False, None, None
            try:
                exit_code, timed_out, stalled = self._wait(agent, dirs, run_t0)
            except (DockerException, requests.exceptions.RequestException) as exc:
                fault = f"the Docker engine failed while the agent ran: {_short(exc)}"
            wall = time.monotonic() - run_t0
            # Engine faults end the attempt as infra_error (retried, not counted), with what happened, keeping
            # whatever could still be copied: a container removed from outside, an engine restart, a failed copy.
            containers = {"agent": agent, "model gateway": self.gateway, "egress proxy": self.proxy,
                          "output keeper": self.keeper}
            try:
                gone = self._gone(containers)
                fault = fault or _vanished(gone)
                if "agent" not in gone:
                    dirs.agent_log.write_bytes(agent.logs(stdout=True, stderr=True))
                if "output keeper" not in gone:
                    self._copy_output(self.keeper, dirs)
            except (DockerException, requests.exceptions.RequestException, tarfile.TarError) as exc:
                # removed while being read (`docker rm -f` takes a moment) names the container; else the error
                try:
                    vanished = _vanished(self._gone(containers))
                except (DockerException, requests.exceptions.RequestException):
                    vanished = None
                fault = fault or vanished or f"the attempt's output could not be copied from the Docker engine: {_short(exc)}"
            if spec.task_kind in ANSWER_KIND_VALUES and fault is None:
                self._settle_answer(dirs, record, timed_out or stalled is not None, exit_code)
            self._end_helpers(dirs)
            use = self._gateway_state(dirs)
            if fault is not None:
                return self._finish(record, AttemptReason.infra_error, fault, exit_code, t0, image_ids, dirs,
                                    wall_s=wall, use=use)
            if spec.task_kind in ANSWER_KIND_VALUES:
                reason, detail = self._answer_reason(dirs, record, use, stalled)
            else:
                reason, detail = self._reason(dirs, timed_out, exit_code, wall, use, stalled)
            return self._finish(record, reason, detail, exit_code, t0, image_ids, dirs, wall_s=wall, use=use)
        finally:
            self.cleanup()

    # -- pieces ------------------------------------------------------------------------------
    def _wait(self, agent, dirs: AttemptPaths, run_t0: float) -> tuple[int | None, bool, str | None]:
        """Wait for the agent to exit; kill it at the wall-clock limit, or when it has stalled. Returns its exit
        code (None when killed), whether the wall clock killed it, and the stall's detail (None: no stall).

        A stall is `stall_timeout_s` (HostPolicy) with no model request (no write to gateway.jsonl), no proxy
        request (no write to network.jsonl) and no change under /output (the newest modification time there, read
        through the output keeper). The engine is asked every `poll_s`; the two logs' times are read on the host
        each time, and /output only when they alone would call the attempt stalled (at most once per timeout
        while nothing changes there), so a working agent costs no exec at all."""
        wall_s = self.spec.budget.wall_time_s
        stall_s = self.admission.policy.stall_timeout_s
        poll_s = min(60.0, max(0.5, stall_s / 10))
        started = time.time()
        output_at = started  # the newest change under /output seen so far (epoch seconds)
        while True:
            left = run_t0 + wall_s - time.monotonic()
            if left <= 0:
                self._kill(agent)
                return None, True, None
            step = min(left, poll_s)
            asked = time.monotonic()
            try:
                result = agent.wait(timeout=step)
                return int(result.get("StatusCode", -1)), False, None
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
                if time.monotonic() - asked < step / 2:  # answered at once: the engine went away, not the clock
                    raise
            now = time.time()
            last = max(output_at, *(_mtime(dirs.logs / name) for name in (GATEWAY_LOG, NETWORK_LOG)))
            if now - last < stall_s:
                continue
            output_at = max(output_at, self._output_changed_at() or output_at)
            quiet = now - max(last, output_at)
            if quiet >= stall_s:
                self._kill(agent)
                return None, False, (
                    f"stalled: no model request, no proxy request and no change under /output for {quiet:.0f} s "
                    f"(stall timeout {stall_s:g} s), {now - started:.0f} s after the agent started; killed")

    @staticmethod
    def _kill(agent) -> None:
        try:
            agent.kill()
        except APIError:
            pass  # exited meanwhile

    def _output_changed_at(self) -> float | None:
        """The newest modification time under /output (epoch seconds: the keeper's tmpfs runs on the host's
        clock), read in the output keeper; None when it cannot be read."""
        try:
            code, out = self.keeper.exec_run(["find", "/output", "-printf", "%T@\\n"])
        except (DockerException, requests.exceptions.RequestException):
            return None
        times = [float(t) for t in (out or b"").split() if t.replace(b".", b"").isdigit()]
        return max(times) if code == 0 and times else None

    def _images(self) -> tuple[dict[str, str], dict[str, ImagePackages]]:
        """Role -> image ID, and role -> the package versions the image records."""
        ids, packages = {}, {}
        for role, ref in (("agent", self.harness.image()), ("gateway", self.spec.gateway_image),
                          ("egress", self.spec.egress_image)):
            try:
                image = self.client.images.get(ref)
            except ImageNotFound:
                raise RuntimeError(f"image {ref} ({role}) is not built; run `omnidr images build`") from None
            ids[role], packages[role] = image.id, packages_of(image)
        return ids, packages

    def _setup(self, dirs: AttemptPaths):
        """The attempt's internal network with its gateway and proxy, and its output volume with the keeper.

        The helpers (a pair of the pool, or two new ones) and the output are made at once; new helpers boot
        meanwhile, and their ports are waited for only then (the agent needs the proxy's CA, written before it
        listens). A failure of one still lets the others finish, so cleanup finds them all. (Making the next
        attempt's network and output while the agent runs was measured, and not kept: on two cores that work
        slows the running agent's start more than it saves; see issue 17's note.)"""
        if self.pool is not None:
            self.pair = self.pool.take(self._pair_key())
        internal = self._network(f"omnidr-{self.suffix}", internal=True)
        with ThreadPoolExecutor(max_workers=4) as threads:
            output_made = threads.submit(self._make_output)
            self._helpers(dirs, internal, threads)
        return internal, output_made.result()

    def _network(self, name: str, internal: bool):
        # inhibit_ipv4: the host takes no address on this bridge, so the agent cannot reach services
        # listening on the host itself (an internal network only stops forwarding, not host-bound traffic).
        options = {"com.docker.network.bridge.inhibit_ipv4": "true"} if internal else {}
        # The internal network's /28 is drawn from SANDBOX_POOL, which the proxy refuses (--refuse-net), so an agent
        # cannot reach another attempt's network through it; a /28 another network holds is answered "overlaps".
        for tries_left in range(SUBNET_TRIES - 1, -1, -1) if internal else (0,):
            subnet = str(random.choice(SANDBOX_SUBNETS))
            ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=subnet)]) if internal else None
            try:
                net = self.client.networks.create(name, driver="bridge", internal=internal, labels=self.labels,
                                                  check_duplicate=True, options=options, ipam=ipam)
            except APIError as exc:
                if internal and tries_left and "overlap" in str(exc):
                    continue
                raise
            break
        if internal:  # the agent's own address, fixed: the doors serve it alone (the last host of the /28)
            self.agent_ip = str(ipaddress.ip_network(subnet)[-2])
        self.networks.append(net)
        return net

    def _pair_key(self) -> tuple:
        """What a helper pair is made with (its images, mounts, keys, policies): a pair serves only attempts
        that agree on all of it. Per attempt (and so not here): the token, the budget, the log files, the CA."""
        spec = self.spec
        return (spec.run_id, spec.gateway_image, spec.egress_image, spec.outside_network, spec.proxy_mode,
                spec.replay_dir, spec.denylist, spec.upstreams, spec.search_door, spec.upstream_ca, spec.allow_nets,
                spec.provider_tools.model_dump_json(), spec.gateway_backoff_s,
                spec.pricing.model_dump_json() if spec.pricing else None, spec.upstream_limit,
                self.pool.root if self.pool else None)

    def _helpers(self, dirs: AttemptPaths, internal, threads: ThreadPoolExecutor) -> None:
        """The attempt's gateway and proxy on its internal network: a pair of the pool, sealed after its last
        attempt and now opened for this one and checked; else two new containers (added to the pool)."""
        if self.pair is not None:
            try:
                self._reuse(self.pair, dirs, internal, threads)
                return
            except PairFailed as exc:
                log.warning("%s attempt %d: a reused helper pair failed its opening (%s); it is removed and new "
                            "helpers start", self.spec.task_id, self.spec.attempt, exc)
                assert self.pool is not None
                self.pool.discard(self.pair)
                self.pair = None
                self.doors.clear()
        started = (threads.submit(self._start_gateway, dirs, internal), threads.submit(self._start_proxy, dirs, internal))
        gateway_ip, proxy_ip = (f.result() for f in started)
        self.gateway_ip = gateway_ip
        _wait_port(gateway_ip, GATEWAY_PORT, self.gateway, HELPER_START_TIMEOUT_S)
        _wait_port(proxy_ip, PROXY_PORT, self.proxy, HELPER_START_TIMEOUT_S)
        if self.pool is not None:
            self.pair = HelperPair(self._pair_key(), self.gateway, self.proxy, gateway_ip, proxy_ip, GATEWAY_PORT,
                                   PROXY_PORT, self.admin_token, generation=self.generation,
                                   ca_sha256=ca_digest(dirs.control / "ca" / CA_FILE))
            self.pool.add(self.pair)
            self.containers = [c for c in self.containers if c not in (self.gateway, self.proxy)]  # the pool's now

    def _reuse(self, pair: HelperPair, dirs: AttemptPaths, internal, threads: ThreadPoolExecutor) -> None:
        """Take `pair` off the last attempt's network (confirmed by the engine: the last agent, which was only on
        that network, can no longer reach it), then open it for this attempt and join this attempt's network."""
        spec = self.spec
        ca_dir = self._ca_dir(dirs)
        gateway_body = AttemptOpen(generation=self.generation, agent_token=SecretStr(self.token), budget=spec.budget,
                                   log_path=dirs.gateway_log, summary_path=dirs.gateway_state,
                                   web_log_path=dirs.logs / PROVIDER_WEB_LOG, agent_address=self.agent_ip)
        proxy_body = OpenGeneration(generation=self.generation, log_path=str(dirs.logs / NETWORK_LOG),
                                    ca_out=str(ca_dir) if ca_dir else None, agent_address=self.agent_ip)
        self._served_since = _now()
        self.gateway, self.proxy, self.admin_token = pair.gateway, pair.proxy, pair.admin_token
        self.gateway_ip = pair.gateway_ip
        try:
            pair.drop_stale()  # before `open`: a last agent still alive would otherwise be served as this one
        except DockerException as exc:
            raise PairFailed(f"leaving the last attempt's network failed: {_short(exc)}") from None
        steps = (threads.submit(pair.open, gateway_body, proxy_body, ca_dir / CA_FILE if ca_dir else None),
                 threads.submit(self._attach, pair.gateway, internal, "gateway"),
                 threads.submit(self._attach, pair.proxy, internal, "proxy"))
        for step in steps:
            try:
                step.result()
            except DockerException as exc:
                raise PairFailed(f"attaching it to the attempt's network failed: {_short(exc)}") from None

    def _attach(self, container, internal, alias: str) -> None:
        internal.connect(container, aliases=[alias])
        container.reload()
        # the agent finds the door by its hosts file, not by a resolver (see _create_agent)
        self.doors[alias] = container.attrs["NetworkSettings"]["Networks"][internal.name]["IPAddress"]

    def _helper_path(self, host: Path, fallback: str) -> str:
        """Where a helper sees `host`: the same path under a pool's shared root, else its own mount."""
        return str(host) if self.pool is not None else fallback

    def _helper(self, name: str, image: str, command: list[str], volumes: dict, environment: dict, internal, alias: str):
        if self.pool is not None:  # a pair that may serve later attempts sees the run's attempt folders
            volumes = {k: v for k, v in volumes.items() if v["mode"] == "ro" and v["bind"] != "/control"}
            volumes[str(self.pool.root)] = {"bind": str(self.pool.root), "mode": "rw"}
        labels = {**self.labels, LABEL_ATTEMPT: "helper-pair"} if self.pool is not None else self.labels
        container = self.client.containers.create(
            image, command=command, name=f"omnidr-{alias}-{self.suffix}", labels=labels,
            network=self.spec.outside_network, volumes=volumes, environment=environment,
            cap_drop=["ALL"], security_opt=["no-new-privileges"], read_only=True,
            tmpfs={"/tmp": "size=64m"}, mem_limit="512m", pids_limit=256, detach=True,
        )
        self.containers.append(container)  # until a pool owns it (see _helpers)
        internal.connect(container, aliases=[alias])
        container.start()
        container.reload()
        # the agent finds the door by its hosts file, not by a resolver (see _create_agent)
        self.doors[alias] = container.attrs["NetworkSettings"]["Networks"][internal.name]["IPAddress"]
        # readiness is checked from the host through the outside network (the host has no address on the internal one)
        ip = container.attrs["NetworkSettings"]["Networks"][self.spec.outside_network]["IPAddress"]
        return container, ip

    def _start_gateway(self, dirs: AttemptPaths, internal) -> str:
        spec = self.spec
        upstreams, env = {}, {}
        for up in spec.upstreams:
            entry: dict[str, Any] = ({"base_url": up.via, "display_url": up.base_url} if up.via
                                     else {"base_url": up.base_url})
            entry["responses_api"] = up.responses_api
            if up.key_env:
                value = os.environ.get(up.key_env)
                if not value:
                    raise RuntimeError(f"environment variable {up.key_env} (key of the {up.family} upstream) is not set")
                entry["api_key_env"] = "OMNIDR_UPSTREAM_KEY_" + up.family.upper()
                env[entry["api_key_env"]] = value
            upstreams[up.family] = entry
        logs = dirs.logs
        config = {
            "port": GATEWAY_PORT, "agent_token": self.token, "admin_token": self.admin_token,
            "upstreams": upstreams, "budget": json.loads(spec.budget.model_dump_json()),
            "log_path": self._helper_path(logs / GATEWAY_LOG, f"/logs/{GATEWAY_LOG}"),
            "summary_path": self._helper_path(logs / GATEWAY_STATE, f"/logs/{GATEWAY_STATE}"),
            "retry_backoff_s": spec.gateway_backoff_s, "provider_tools": spec.provider_tools.model_dump(),
            "denylist": list(spec.denylist), "agent_address": self.agent_ip,
            "model": spec.model, "model_policy": spec.model_policy,
            "pricing": json.loads(spec.pricing.model_dump_json()) if spec.pricing else None,
            "upstream_limit": ({"url": spec.upstream_limit[0], "token": spec.upstream_limit[1]}
                               if spec.upstream_limit else None),
            "web_log_path": self._helper_path(logs / PROVIDER_WEB_LOG, f"/logs/{PROVIDER_WEB_LOG}"),
        }
        config_file = dirs.control / "gateway.json"
        config_file.write_text(json.dumps(config, indent=2), "utf-8")
        config_file.chmod(0o644)
        self.gateway, ip = self._helper(
            "gateway", spec.gateway_image, ["--config", self._helper_path(config_file, "/control/gateway.json")],
            {str(dirs.control): {"bind": "/control", "mode": "ro"}, str(dirs.logs): {"bind": "/logs", "mode": "rw"}},
            env, internal, "gateway",
        )
        return ip

    def _start_proxy(self, dirs: AttemptPaths, internal) -> str:
        spec = self.spec
        command = ["--mode", spec.proxy_mode, "--listen", f"0.0.0.0:{PROXY_PORT}",
                   "--log", self._helper_path(dirs.logs / NETWORK_LOG, f"/logs/{NETWORK_LOG}"),
                   "--refuse-net", str(SANDBOX_POOL)]
        if self.agent_ip:
            command += ["--agent-address", self.agent_ip]
        volumes = {str(dirs.logs): {"bind": "/logs", "mode": "rw"}}
        env = {}
        if self.pool is not None:  # the controller seals and opens attempts with the admin token (see _helpers)
            env[EGRESS_ADMIN_ENV] = self.admin_token
            command += ["--admin-token-env", EGRESS_ADMIN_ENV]
        ca_dir = self._ca_dir(dirs)
        if ca_dir is not None:
            # the proxy makes a CA for this attempt alone and writes its certificate for the agent's trust store
            command += ["--ca-out", self._helper_path(ca_dir, "/ca")]
            volumes[str(ca_dir)] = {"bind": "/ca", "mode": "rw"}
        if spec.denylist:
            command += ["--denylist", ",".join(spec.denylist)]
        if spec.proxy_mode in ("intercept", "record"):
            for i, pem in enumerate(spec.upstream_ca):
                volumes[str(pem.resolve())] = {"bind": f"/upstream-ca/{i}.pem", "mode": "ro"}
                command += ["--upstream-ca", f"/upstream-ca/{i}.pem"]
        door = spec.search_door
        if spec.proxy_mode in ("log", "intercept", "record"):
            for net in spec.allow_nets:
                command += ["--allow-net", net]
            if door is not None:
                command += ["--allow-endpoint", f"{door.host}:{door.port}"]  # the door itself, wherever it runs
        if door is not None and door.key_env and spec.proxy_mode != "replay":
            value = os.environ.get(door.key_env)
            if not value:
                raise RuntimeError(f"environment variable {door.key_env} (key of the {door.provider} search door) is not set")
            env["OMNIDR_SEARCH_KEY"] = ("Bearer " if door.key_header == "Authorization" else "") + value
            command += ["--inject-header", f"{door.host}={door.key_header}:OMNIDR_SEARCH_KEY"]
        if spec.proxy_mode == "replay":
            if spec.replay_dir is None:
                raise RuntimeError("replay mode needs a web corpus folder")
            command += ["--replay-dir", "/replay"]
            volumes[str(spec.replay_dir.resolve())] = {"bind": "/replay", "mode": "ro"}
        if spec.proxy_mode == "record":
            record_dir = spec.folder / "record"
            record_dir.mkdir(exist_ok=True)
            record_dir.chmod(0o777)
            command += ["--record-dir", "/record"]
            volumes[str(record_dir)] = {"bind": "/record", "mode": "rw"}
        self.proxy, ip = self._helper("proxy", spec.egress_image, command, volumes, env, internal, "proxy")
        return ip

    def _ca_dir(self, dirs: AttemptPaths) -> Path | None:
        """The folder the proxy writes the attempt's CA certificate to (modes that decrypt HTTPS), made here."""
        if self.spec.proxy_mode not in ("intercept", "record", "replay"):
            return None
        ca_dir = dirs.control / "ca"
        ca_dir.mkdir(exist_ok=True)
        ca_dir.chmod(0o777)
        return ca_dir

    def _make_output(self):
        """The writable output: a size-bounded tmpfs volume (a disk-filling agent hits its limit, not the host's
        disk), copied into the attempt folder once the agent has stopped. A tmpfs volume lives only while
        mounted: a keeper container holds it from before the agent starts until its contents are copied out."""
        output = self.client.volumes.create(
            name=f"omnidr-output-{self.suffix}", driver="local", labels=self.labels,
            driver_opts={"type": "tmpfs", "device": "tmpfs", "o": f"size={self.spec.limits.output_mb}m,mode=1777"},
        )
        self.volumes.append(output)
        self.keeper = self.client.containers.run(
            self.spec.gateway_image, entrypoint=["sleep", "infinity"], name=f"omnidr-keeper-{self.suffix}",
            labels=self.labels, network_mode="none", read_only=True, cap_drop=["ALL"], mem_limit="32m",
            volumes={output.name: {"bind": "/output", "mode": "ro"}}, detach=True,
        )
        self.containers.append(self.keeper)
        return output

    def _create_agent(self, dirs: AttemptPaths, internal, ctx: AgentContext, command: list[str], output):
        spec = self.spec
        env = {
            "OPENAI_BASE_URL": f"{ctx.gateway_url}/v1", "OPENAI_API_KEY": ctx.token,
            "ANTHROPIC_BASE_URL": ctx.gateway_url, "ANTHROPIC_API_KEY": ctx.token,
            "OMNIDR_MODEL": ctx.model, "OMNIDR_INSTRUCTION": ctx.instruction_path, "OMNIDR_VIDEO": ctx.video_path,
            "OMNIDR_CONTRACT": ctx.contract_dir, "OMNIDR_REPORT_DIR": ctx.report_dir, "OMNIDR_LOGS_DIR": ctx.logs_dir,
            "HTTP_PROXY": ctx.proxy_url, "HTTPS_PROXY": ctx.proxy_url, "http_proxy": ctx.proxy_url,
            "https_proxy": ctx.proxy_url, "NO_PROXY": "gateway", "no_proxy": "gateway", "HOME": "/tmp",
            **self.harness.environment(ctx),
        }
        if spec.task_kind != "report":
            env[TASK_KIND_ENV] = spec.task_kind
        if spec.captions:  # beside the video, under their own names
            env["OMNIDR_CAPTIONS"] = ",".join(f"/input/{c.name}" for c in spec.captions)
        if spec.search_door is not None:  # the door's provider and URL; its key stays with the proxy
            env.update(OMNIDR_SEARCH_DOOR=spec.search_door.agent_value(), OMNIDR_DENYLIST=",".join(spec.denylist))
        ca_file = dirs.control / "ca" / CA_FILE
        lim = spec.limits
        volumes = {
            str(spec.video.resolve()): {"bind": ctx.video_path, "mode": "ro"},
            str((dirs.input / "instruction.txt").resolve()): {"bind": ctx.instruction_path, "mode": "ro"},
            **({str(spec.contract_dir.resolve()): {"bind": ctx.contract_dir, "mode": "ro"}} if spec.contract_dir else {}),
            **({str(spec.protocol_file.resolve()): {"bind": PROTOCOL_PATH, "mode": "ro"}} if spec.protocol_file else {}),
            **({str((dirs.input / QUESTION_FILE).resolve()): {"bind": f"/input/{QUESTION_FILE}", "mode": "ro"}}
               if spec.question is not None else {}),
            **({str(spec.media_dir.resolve()): {"bind": f"/input/{MEDIA_DIR}", "mode": "ro"}} if spec.media_dir else {}),
            **{str(c.resolve()): {"bind": f"/input/{c.name}", "mode": "ro"} for c in spec.captions},
            output.name: {"bind": ctx.output_dir, "mode": "rw"},
        }
        if ca_file.is_file():
            volumes[str(ca_file.resolve())] = {"bind": AGENT_CA_PATH, "mode": "ro"}
            env.update(agent_ca_environment())
        # No DNS door: the two doors' names are in the agent's hosts file, and its resolver points at a port
        # where nothing listens, so any other lookup fails at once and no query goes to Docker's embedded
        # resolver (127.0.0.11), which some engines forward from the host's namespace (CVE-2024-29018). The
        # proxy resolves the names of the web for the agent.
        resolv = dirs.control / "resolv.conf"
        resolv.write_text(RESOLV_CONF, "utf-8")
        resolv.chmod(0o644)
        volumes[str(resolv.resolve())] = {"bind": "/etc/resolv.conf", "mode": "ro"}
        agent = self.client.containers.create(
            self.harness.image(), command=command, name=f"omnidr-agent-{self.suffix}", labels=self.labels,
            network=internal.name, extra_hosts=dict(self.doors), environment=env, volumes=volumes, user=AGENT_UID,
            networking_config={internal.name: self.client.api.create_endpoint_config(ipv4_address=self.agent_ip)}
            if self.agent_ip else None,
            working_dir="/tmp",
            read_only=True, cap_drop=["ALL"], security_opt=["no-new-privileges"],
            tmpfs={"/tmp": f"size={lim.tmpfs_mb}m,mode=1777"}, mem_limit=f"{lim.memory_mb}m",
            memswap_limit=f"{lim.memory_mb}m", nano_cpus=int(lim.cpus * 1e9), pids_limit=lim.pids, detach=True,
        )
        self.containers.append(agent)
        return agent

    def _copy_output(self, keeper, dirs: AttemptPaths) -> None:
        """Copy /output (held by the keeper container) into the attempt folder."""
        stream, _stat = keeper.get_archive("/output")
        with tempfile.TemporaryFile() as buf:
            for chunk in stream:
                buf.write(chunk)
            buf.seek(0)
            with tarfile.open(fileobj=buf) as tar:
                members = [m for m in tar.getmembers() if m.isfile() or m.isdir()]
                for m in members:  # the archive is rooted at output/
                    m.name = m.name.split("/", 1)[1] if "/" in m.name else ""
                try:
                    tar.extractall(dirs.output, members=[m for m in members if m.name], filter="data")
                except OSError as exc:  # name the folder: a write to an open file carries no file name
                    if exc.errno == errno.ENOSPC and not exc.filename:
                        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dirs.output)) from exc
                    raise

    def _gone(self, containers: dict) -> list[str]:
        """Which of the attempt's containers are no longer on the engine (an engine that does not answer
        raises, and is a fault of its own)."""
        gone = []
        for name, container in containers.items():
            try:
                container.reload()
            except NotFound:
                gone.append(name)
                continue
            if container.status in ("removing", "dead"):
                gone.append(name)
        return gone

    def _end_helpers(self, dirs: AttemptPaths) -> None:
        """Stop the gateway and the proxy together (each writes its summary on SIGTERM) and keep their logs; a
        reused pair is sealed instead (the same summary, files closed) and keeps running for the next attempt."""
        if self.pair is not None:
            try:
                self.pair.seal()
            except PairFailed as exc:
                log.warning("%s attempt %d: the helper pair did not seal (%s); it is removed", self.spec.task_id,
                            self.spec.attempt, exc)
            for container, name in ((self.pair.gateway, "gateway"), (self.pair.proxy, "egress")):
                try:  # this attempt's lines of the helpers' output
                    since = self._served_since.timestamp() if self._served_since else None  # a float: sub-second
                    dirs.container_log(name).write_bytes(
                        container.logs(stdout=True, stderr=True, since=since))  # type: ignore[attr-defined]
                except (APIError, NotFound):
                    pass
            return

        def stop(container, name: str) -> None:
            try:
                container.stop(timeout=5)
                dirs.container_log(name).write_bytes(container.logs(stdout=True, stderr=True))
            except (APIError, NotFound):
                pass

        helpers = [(c, name) for c, name in ((getattr(self, "gateway", None), "gateway"),
                                             (getattr(self, "proxy", None), "egress")) if c is not None]
        threads = [threading.Thread(target=stop, args=helper, daemon=True) for helper in helpers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    # -- the short-answer delivery (task kind short_answer, paper 002 App. C.2.3) ------------------
    def _settle_answer(self, dirs: AttemptPaths, record: dict, timed_out: bool, exit_code: int | None) -> None:
        """After the agent stopped and before the helpers end: read the agent's answer.json; when research ended
        without a complete answer, run the finalization stage through the gateway; write the final answer.json.

        Why research ended, when the agent did not say: killed at the wall clock or refused by the gateway's budget
        is `budget_exhausted` (the 3,600 s / 100-call research budget); a non-zero exit is `execution_error`; an
        exit 0 without an answer is `incomplete_output`. An upstream outage is left to `_answer_reason` (the attempt
        does not count) and gets no finalization."""
        spec = self.spec
        record["context_handling"] = spec.context_handling
        agent_answer = read_answer_file(dirs.answer)
        if agent_answer is not None and agent_answer.has_answer:
            record.update(termination=agent_answer.termination, answer_source="research")
            return
        state = self._live_gateway_state()
        if agent_answer is not None:
            termination, error = agent_answer.termination, agent_answer.execution_error
        elif timed_out or (state is not None and state.budget_exhausted):
            termination, error = "budget_exhausted", None
        elif exit_code not in (0, None):
            termination, error = "execution_error", f"the agent exited {exit_code}"
        else:
            termination, error = "incomplete_output", None
        record["termination"] = termination
        if state is not None and state.failed_requests and _outage_requests(dirs.gateway_log):
            return  # an outage: the attempt does not count, and a rerun repeats it
        result = self._finalize() if spec.finalize is not None else None
        record["finalization"] = result
        final = result.answer_file(termination, error) if result is not None else \
            AnswerFile(answer="", termination=termination, source="none", execution_error=error)
        record["answer_source"] = final.source
        dirs.output.mkdir(parents=True, exist_ok=True)
        write_atomic(dirs.answer, final.model_dump_json(indent=2))

    def _live_gateway_state(self) -> GatewayState | None:
        """The gateway's counts now (it has not ended yet), None when it does not answer."""
        try:
            with direct_session() as http:
                answer = http.get(f"http://{self.gateway_ip}:{GATEWAY_PORT}/_gateway/state",
                                  headers={"Authorization": f"Bearer {self.admin_token}"}, timeout=30)
            return GatewayState.model_validate_json(answer.text) if answer.status_code == 200 else None
        except (requests.RequestException, ValueError):
            return None

    def _finalize(self) -> FinalizationResult | None:
        """The gateway's tool-free finalization stage (POST /_gateway/finalize); None when it could not run."""
        assert self.spec.finalize is not None
        try:
            with direct_session() as http:
                answer = http.post(
                    f"http://{self.gateway_ip}:{GATEWAY_PORT}/_gateway/finalize",
                    data=self.spec.finalize.model_dump_json(), timeout=FINALIZE_TIMEOUT_S,
                    headers={"Authorization": f"Bearer {self.admin_token}", "Content-Type": "application/json"})
        except requests.RequestException as exc:
            log.warning("%s attempt %d: the finalization stage did not run: %s", self.spec.task_id, self.spec.attempt,
                        _short(exc))
            return None
        if answer.status_code != 200:
            log.warning("%s attempt %d: the gateway refused the finalization stage: %d %s", self.spec.task_id,
                        self.spec.attempt, answer.status_code, answer.text[:300])
            return None
        try:
            return FinalizationResult.model_validate_json(answer.text)
        except ValueError as exc:
            log.warning("%s attempt %d: the finalization answer is unreadable: %s", self.spec.task_id,
                        self.spec.attempt, _short(exc))
            return None

    def _answer_reason(self, dirs: AttemptPaths, record: dict, state: BudgetUse,
                       stalled: str | None = None) -> tuple[AttemptReason, str]:
        final = read_answer_file(dirs.answer)
        termination = record.get("termination") or "execution_error"
        if final is not None and final.has_answer:
            stage = "research" if final.source == "research" else "the finalization stage"
            return AttemptReason.success, f"answer from {stage} (research ended: {termination})"
        if stalled is not None:
            return AttemptReason.stalled, stalled
        outages = _outage_requests(dirs.gateway_log) if state.failed_requests else 0
        if outages:
            return AttemptReason.upstream_error, (
                f"no answer; {outages} of {state.requests} model request(s) failed upstream (unreachable, 5xx or 429 "
                f"after {state.upstream_retries} gateway retries); the attempt does not count and a rerun repeats it")
        finalization = record.get("finalization")
        why = ("; finalization: " + "; ".join(finalization.rejected)) if finalization and finalization.rejected else \
            ("" if finalization else "; the finalization stage did not run")
        return AttemptReason.no_answer, f"no answer (research ended: {termination}){why}"

    def _reason(self, dirs: AttemptPaths, timed_out: bool, exit_code: int | None, wall_s: float,
                state: BudgetUse, stalled: str | None = None) -> tuple[AttemptReason, str]:
        report = dirs.report / self.spec.report_entry
        check = check_report(report.parent, self.spec.report_data_file) if report.is_file() else None
        problem = check.problem if check is not None else None
        if check is not None and problem is None:
            return AttemptReason.success, "; ".join([f"report delivered at output/report/{self.spec.report_entry}",
                                                     *check.warnings])
        if timed_out:
            return AttemptReason.timeout, f"killed at the wall-clock limit of {self.spec.budget.wall_time_s:g} s"
        if stalled is not None:
            return AttemptReason.stalled, stalled
        if state.exhausted:
            return AttemptReason.budget_exhausted, f"budget {state.exhausted} spent and no report"
        if problem is not None:  # counted and retried as any failure; the folder stays for the audit
            return AttemptReason.invalid_report, f"output/report/ is {problem}"
        outages = _outage_requests(dirs.gateway_log) if state.failed_requests else 0
        if outages:
            return AttemptReason.upstream_error, (
                f"no report; {outages} of {state.requests} model request(s) failed upstream (unreachable, 5xx or "
                f"429 after {state.upstream_retries} gateway retries); the attempt does not count and a rerun repeats it")
        if exit_code == 0:
            return AttemptReason.no_report, "the agent exited 0 without a report"
        if exit_code == 137 and wall_s < self.spec.budget.wall_time_s:
            return AttemptReason.agent_error, "the agent was killed (exit 137: out of memory or SIGKILL) without a report"
        return AttemptReason.agent_error, f"the agent exited {exit_code} without a report"

    def _gateway_state(self, dirs: AttemptPaths) -> BudgetUse:
        path = dirs.gateway_state
        if not path.is_file():
            return BudgetUse()
        try:
            s = GatewayState.model_validate_json(path.read_text("utf-8"))
        except (OSError, ValueError):  # a summary cut short by a kill: the gateway.jsonl lines stay for the audit
            return BudgetUse()
        return BudgetUse(**s.model_dump(include=set(SpendCounts.model_fields)), exhausted=s.budget_exhausted)

    def _finish(self, record: dict, reason: AttemptReason, detail: str, exit_code, t0: float, image_ids, dirs: AttemptPaths,
                wall_s: float | None = None, use: BudgetUse | None = None) -> AttemptRecord:
        web = read_web_log(dirs.logs, [])  # a damaged line is skipped: the files stay for the audit
        events = [e for e in web if e.via == "proxy"]
        provider = [e for e in web if e.via == "provider"]
        report = dirs.report / self.spec.report_entry
        rec = AttemptRecord(
            **record, reason=reason, detail=detail, exit_code=exit_code, ended_at=_now(),
            wall_time_s=round(wall_s if wall_s is not None else time.monotonic() - t0, 3),
            budget_use=use if use is not None else self._gateway_state(dirs), network_requests=len(events),
            network_blocked=sum(1 for e in events if e.blocked), provider_web_requests=len(provider),
            provider_web_blocked=sum(1 for e in provider if e.blocked), image_ids=image_ids,
            helpers_served_before=self.pair.attempts if self.pair is not None else 0,
            report_path=report.relative_to(self.spec.folder).as_posix() if report.is_file() else None,
        )
        if INTERRUPTED.is_set():  # stopped by the user, not ended: leave it unfinished for the rerun
            return rec
        write_atomic(AttemptPaths(self.spec.folder).record, rec.model_dump_json(indent=2))
        return rec

    def cleanup(self) -> None:
        """Remove the attempt's containers (together), then its volumes and networks. With a pool, a reused pair
        goes back to it (or is removed, if it failed) and leaves the attempt's network when the next attempt
        opens, and the rest is removed in the background (the pool's `close` waits for it)."""
        containers, volumes, networks = self.containers, self.volumes, self.networks
        self.containers, self.volumes, self.networks = [], [], []

        def remove(container) -> None:
            try:
                container.remove(force=True, v=True)
            except (APIError, NotFound):
                pass

        def remove_all(networks: list) -> None:
            threads = [threading.Thread(target=remove, args=(c,), daemon=True) for c in containers]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            for item in volumes + networks:
                try:
                    item.remove()
                except (APIError, NotFound):
                    pass

        if self.pool is None:
            remove_all(networks)
            return
        if self.pair is not None:
            self.pair.leave_later(networks)
            self.pool.give_back(self.pair)
            self.pair = None
            networks = []
        self.pool.later(lambda: remove_all(networks))


def run_labels(run_dir: Path) -> dict[str, str]:
    """The labels every container, network and volume of an attempt in `run_dir` carries beyond its run id."""
    return {LABEL_RUN_DIR: str(Path(run_dir).resolve())}


def cleanup_run(client, run_id: str, mine: bool = False, run_dir: Path | None = None) -> int:
    """Remove the containers, volumes and networks of `run_id` that a process which is gone left behind (a
    killed driver, a lost Ray worker), and with `mine` also those of this driver's run (Ctrl-C), its Ray
    workers' included. Objects of a live driver's run are never touched. Returns how many were removed.

    With `run_dir`, only objects of that run folder (LABEL_RUN_DIR) are candidates: drivers of identical systems
    in other run folders share the run id, and their objects are left alone whoever made them. (An object made
    before the label existed has none, and is judged by its owner alone.)

    Other drivers create and remove objects of the same run id while this one lists them: the listing reads the
    engine's list answer alone (no inspect per object, which fails for an object removed meanwhile), and an object
    already gone when it is removed is skipped."""
    me = owner_id()
    folder = str(Path(run_dir).resolve()) if run_dir is not None else None

    def leftover(labels: dict | None) -> bool:
        labels = labels or {}
        if folder is not None and labels.get(LABEL_RUN_DIR, folder) != folder:
            return False  # another run folder's: its own driver cleans it
        owner, driver = labels.get(LABEL_OWNER), labels.get(LABEL_DRIVER)
        return (mine and me in (owner, driver)) or not owner_alive(owner) or not owner_alive(driver)

    removed = 0
    selector = {"label": f"{LABEL_RUN}={run_id}"}
    try:
        containers = client.containers.list(all=True, filters=selector, sparse=True)
    except NotFound:  # the engine answers 404 for a filter racing a removal on some versions: nothing to read
        containers = []
    for container in containers:
        if not leftover(container.attrs.get("Labels")):
            continue
        try:
            container.remove(force=True, v=True)
            removed += 1
        except NotFound:
            pass  # removed meanwhile (by its own driver, or by Docker's auto-removal)
        except APIError as exc:  # "removal already in progress": someone else is removing it
            log.debug("container %s not removed: %s", container.id[:12], _short(exc))
    found: list = []
    for collection in (client.volumes, client.networks):
        try:
            found += collection.list(filters=selector)
        except NotFound:
            pass
    for item in found:
        if not leftover(item.attrs.get("Labels")):
            continue
        try:
            item.remove()
            removed += 1
        except NotFound:
            pass
        except APIError as exc:  # in use (a container is being removed), or being removed by another process
            log.debug("%s not removed: %s", item.id[:12], _short(exc))
    return removed
