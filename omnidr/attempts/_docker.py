"""The Docker backend: one attempt's sandbox as containers and networks of a local Docker engine.

A private internal network per attempt, the agent on it alone, the model gateway and the egress proxy on it and on
an outside network, the agent's output in a size-bounded tmpfs volume held by a keeper container; every object
labelled with its run, attempt, owner and run folder, so that `cleanup_run` finds what a driver that is gone left
behind. It implements `SandboxBackend` (see `_backend`); the attempt lifecycle never sees a container."""

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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docker.types
import requests
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from pydantic import SecretStr

from omnidr.images import ImagePackages, docker_client, packages_of
from omnidr.paths import HARNESS_LOGS, AttemptPaths
from sandbox.egress import AGENT_CA_PATH, CA_FILE, OpenGeneration, agent_ca_environment
from sandbox.models import (
    GATEWAY_LOG,
    GATEWAY_STATE,
    MEDIA_DIR,
    NETWORK_LOG,
    PROTOCOL_FILE,
    PROVIDER_WEB_LOG,
    QUESTION_FILE,
    TASK_KIND_ENV,
    AttemptOpen,
)

from ._backend import DoorControl, ExecResult, SandboxBackend, SandboxFault, one_line
from ._contract import AgentContext, Harness
from ._helpers import EGRESS_ADMIN_ENV, HelperPair, HelperPool, PairFailed, ca_digest, reuse_helpers
from ._labels import LABEL_ATTEMPT, LABEL_DRIVER, LABEL_OWNER, LABEL_RUN, LABEL_RUN_DIR, owner_alive, owner_id
from ._relay import network_host_ip
from ._spec import AttemptSpec

log = logging.getLogger(__name__)

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
PROTOCOL_PATH = f"/input/{PROTOCOL_FILE}"  # a short-answer snapshot's protocol, as the agent sees it


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


READY_POLL_S = 0.05  # how often a helper's port is tried while it boots (a refused connection costs no engine call)
STATUS_EVERY_S = 1.0  # how often the engine is asked whether a booting helper has exited meanwhile


def _wait_ports(doors: list[tuple[str, int, Any]], timeout_s: float) -> None:
    """Wait until every (ip, port, container) listens, trying the ports every READY_POLL_S. A port that is not
    open yet refuses the connection at once, so trying is cheap; the engine is asked about the containers only
    every STATUS_EVERY_S (an inspect costs the driver and the engine far more than a refused connection, and a
    start used to ask about 100 of them), so that a helper which exited during its start ends the wait with its
    last log lines instead of the timeout."""
    t0 = time.monotonic()
    deadline, status_at = t0 + timeout_s, t0 + STATUS_EVERY_S
    pending = list(doors)
    while pending:
        for door in list(pending):
            ip, port, _container = door
            try:
                socket.create_connection((ip, port), timeout=1).close()
                pending.remove(door)
            except OSError:
                pass
        if not pending:
            return
        now = time.monotonic()
        if now >= status_at or now >= deadline:
            status_at = now + STATUS_EVERY_S
            for _ip, _port, container in pending:
                container.reload()
                if container.status in ("exited", "dead"):
                    logs = container.logs(tail=5).decode("utf-8", "replace").strip().replace("\n", " | ")
                    raise RuntimeError(f"{container.name} exited during start: {logs}")
            if now >= deadline:
                ip, port, container = pending[0]
                raise RuntimeError(f"{container.name} did not listen on {ip}:{port} within {timeout_s:.0f} s")
        time.sleep(READY_POLL_S)


def _vanished(gone: list[str]) -> str | None:
    """The infra_error detail for containers of the attempt that are no longer on the engine."""
    if not gone:
        return None
    text = (f"the {' and '.join(gone)} container{'s' if len(gone) > 1 else ''} vanished during the attempt (removed "
            "from outside, or the Docker engine restarted)")
    if "output keeper" in gone:
        text += "; the agent's output, held in a tmpfs volume by the keeper, is lost"
    return text


def _engine_fault(exc: BaseException) -> SandboxFault:
    return SandboxFault(f"the Docker engine failed while the agent ran: {one_line(exc)}")


class DockerSandbox:
    """Creates, runs and tears down the containers and networks of one attempt (a `Sandbox`)."""

    def __init__(self, client, spec: AttemptSpec, harness: Harness, pool: HelperPool | None = None):
        self.client = client
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
        self.gateway: Any = None
        self.proxy: Any = None
        self.keeper: Any = None
        self.agent: Any = None
        self.context = AgentContext(
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

    @property
    def control(self) -> DoorControl:
        return DoorControl(f"http://{self.gateway_ip}:{GATEWAY_PORT}", self.admin_token)

    @property
    def served_before(self) -> int:
        return self.pair.attempts if self.pair is not None else 0

    def prepare(self, dirs: AttemptPaths) -> None:
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

    def images(self) -> tuple[dict[str, str], dict[str, ImagePackages]]:
        """Role -> image ID, and role -> the package versions the image records."""
        ids, packages = {}, {}
        for role, ref in (("agent", self.harness.image()), ("gateway", self.spec.gateway_image),
                          ("egress", self.spec.egress_image)):
            try:
                image = self.client.images.get(ref)
            except ImageNotFound:
                raise RuntimeError(f"image {ref} ({role}) is not built; run `omnidr images build`") from None
            except (DockerException, requests.exceptions.RequestException) as exc:
                raise SandboxFault(str(exc)) from exc
            ids[role], packages[role] = image.id, packages_of(image)
        return ids, packages

    def start(self, dirs: AttemptPaths, command: list[str]) -> None:
        try:
            internal, output = self._setup(dirs)
            self.agent = self._create_agent(dirs, internal, command, output)
            self.agent.start()
        except (DockerException, requests.exceptions.RequestException) as exc:
            raise SandboxFault(str(exc)) from exc

    def wait(self, timeout_s: float) -> int | None:
        asked = time.monotonic()
        try:
            result = self.agent.wait(timeout=timeout_s)
            return int(result.get("StatusCode", -1))
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError) as exc:
            if time.monotonic() - asked < timeout_s / 2:  # answered at once: the engine went away, not the clock
                raise _engine_fault(exc) from exc
        except (DockerException, requests.exceptions.RequestException) as exc:
            raise _engine_fault(exc) from exc
        return None

    def kill(self) -> None:
        try:
            self.agent.kill()
        except APIError:
            pass  # exited meanwhile
        except (DockerException, requests.exceptions.RequestException) as exc:
            raise _engine_fault(exc) from exc

    def exec(self, argv: list[str]) -> ExecResult:
        """Run in the output keeper, where /output is mounted read-only."""
        try:
            code, out = self.keeper.exec_run(argv)
        except (DockerException, requests.exceptions.RequestException) as exc:
            raise _engine_fault(exc) from exc
        return ExecResult(code, out or b"")

    def copy_out(self, dirs: AttemptPaths) -> str | None:
        """Engine faults end the attempt as infra_error (retried, not counted), with what happened, keeping whatever
        could still be copied: a container removed from outside, an engine restart, a failed copy."""
        containers = {"agent": self.agent, "model gateway": self.gateway, "egress proxy": self.proxy,
                      "output keeper": self.keeper}
        first = None
        try:
            gone = self._gone(containers)
            first = _vanished(gone)
            if "agent" not in gone:
                dirs.agent_log.write_bytes(self.agent.logs(stdout=True, stderr=True))
            if "output keeper" not in gone:
                self._copy_output(self.keeper, dirs)
            return first
        except (DockerException, requests.exceptions.RequestException, tarfile.TarError) as exc:
            # removed while being read (`docker rm -f` takes a moment) names the container; else the error
            try:
                vanished = _vanished(self._gone(containers))
            except (DockerException, requests.exceptions.RequestException):
                vanished = None
            return first or vanished or f"the attempt's output could not be copied from the Docker engine: {one_line(exc)}"

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
        _wait_ports([(gateway_ip, GATEWAY_PORT, self.gateway), (proxy_ip, PROXY_PORT, self.proxy)],
                    HELPER_START_TIMEOUT_S)
        if self.pool is not None:
            self.pair = HelperPair(self._pair_key(), self.gateway, self.proxy, gateway_ip, proxy_ip, GATEWAY_PORT,
                                   PROXY_PORT, self.admin_token, generation=self.generation,
                                   ca_sha256=ca_digest(dirs.ca / CA_FILE))
            self.pool.add(self.pair)
            self.containers = [c for c in self.containers if c not in (self.gateway, self.proxy)]  # the pool's now

    def _reuse(self, pair: HelperPair, dirs: AttemptPaths, internal, threads: ThreadPoolExecutor) -> None:
        """Take `pair` off the last attempt's network (confirmed by the engine: the last agent, which was only on
        that network, can no longer reach it), then open it for this attempt and join this attempt's network."""
        spec = self.spec
        ca_dir = self._ca_dir(dirs)
        gateway_body = AttemptOpen(generation=self.generation, agent_token=SecretStr(self.token), budget=spec.budget,
                                   log_path=dirs.gateway_log, summary_path=dirs.gateway_state,
                                   web_log_path=dirs.provider_web_log, agent_address=self.agent_ip)
        proxy_body = OpenGeneration(generation=self.generation, log_path=str(dirs.network_log),
                                    ca_out=str(ca_dir) if ca_dir else None, agent_address=self.agent_ip)
        self._served_since = datetime.now(UTC)
        self.gateway, self.proxy, self.admin_token = pair.gateway, pair.proxy, pair.admin_token
        self.gateway_ip = pair.gateway_ip
        try:
            pair.drop_stale()  # before `open`: a last agent still alive would otherwise be served as this one
        except DockerException as exc:
            raise PairFailed(f"leaving the last attempt's network failed: {one_line(exc)}") from None
        steps = (threads.submit(pair.open, gateway_body, proxy_body, ca_dir / CA_FILE if ca_dir else None),
                 threads.submit(self._attach, pair.gateway, internal, "gateway"),
                 threads.submit(self._attach, pair.proxy, internal, "proxy"))
        for step in steps:
            try:
                step.result()
            except DockerException as exc:
                raise PairFailed(f"attaching it to the attempt's network failed: {one_line(exc)}") from None

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
        # pydantic looks for plugins in every installed distribution's entry points when the helper's first model is
        # built (about a hundred metadata folders read through the image's storage driver); the helpers use none
        environment = {**environment, "PYDANTIC_DISABLE_PLUGINS": "__all__"}
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
        config_file = dirs.gateway_config
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
                   "--log", self._helper_path(dirs.network_log, f"/logs/{NETWORK_LOG}"),
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
            record_dir = dirs.recording
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
        ca_dir = dirs.ca
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

    def _create_agent(self, dirs: AttemptPaths, internal, command: list[str], output):
        spec, ctx = self.spec, self.context
        env = {
            "OPENAI_BASE_URL": f"{ctx.gateway_url}/v1", "OPENAI_API_KEY": ctx.token,
            "ANTHROPIC_BASE_URL": ctx.gateway_url, "ANTHROPIC_API_KEY": ctx.token,
            "OMNIDR_MODEL": ctx.model, "OMNIDR_INSTRUCTION": ctx.instruction_path, "OMNIDR_VIDEO": ctx.video_path,
            "OMNIDR_CONTRACT": ctx.contract_dir, "OMNIDR_REPORT_DIR": ctx.report_dir, "OMNIDR_LOGS_DIR": ctx.logs_dir,
            "HTTP_PROXY": ctx.proxy_url, "HTTPS_PROXY": ctx.proxy_url, "http_proxy": ctx.proxy_url,
            "https_proxy": ctx.proxy_url, "NO_PROXY": "gateway", "no_proxy": "gateway", "HOME": "/tmp",
            **self.harness.environment(ctx),
        }
        if spec.agent_task_kind is not None:
            env[TASK_KIND_ENV] = spec.agent_task_kind
        if spec.captions:  # beside the video, under their own names
            env["OMNIDR_CAPTIONS"] = ",".join(f"/input/{c.name}" for c in spec.captions)
        if spec.search_door is not None:  # the door's provider and URL; its key stays with the proxy
            env.update(OMNIDR_SEARCH_DOOR=spec.search_door.agent_value(), OMNIDR_DENYLIST=",".join(spec.denylist))
        ca_file = dirs.ca / CA_FILE
        lim = spec.limits
        volumes = {
            str(spec.video.resolve()): {"bind": ctx.video_path, "mode": "ro"},
            str(dirs.instruction.resolve()): {"bind": ctx.instruction_path, "mode": "ro"},
            **({str(spec.contract_dir.resolve()): {"bind": ctx.contract_dir, "mode": "ro"}} if spec.contract_dir else {}),
            **({str(spec.protocol_file.resolve()): {"bind": PROTOCOL_PATH, "mode": "ro"}} if spec.protocol_file else {}),
            **({str(dirs.question.resolve()): {"bind": f"/input/{QUESTION_FILE}", "mode": "ro"}}
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
        resolv = dirs.resolv_conf
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


    def end_doors(self, dirs: AttemptPaths) -> None:
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


    def stop(self) -> None:
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
            log.debug("container %s not removed: %s", container.id[:12], one_line(exc))
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
            log.debug("%s not removed: %s", item.id[:12], one_line(exc))
    return removed


class DockerBackend:
    """Attempts' sandboxes on a Docker engine (`SandboxBackend`). With `pool`, the attempts of one run reuse helper
    pairs (see `_helpers`; `OMNIDR_FRESH_HELPERS=1` turns that off)."""

    name = "docker"

    def __init__(self, client=None, pool: HelperPool | None = None):
        reuse_helpers()  # a bad OMNIDR_FRESH_HELPERS is refused before anything is made
        self.client = client if client is not None else docker_client()
        self.pool = pool

    def for_run(self, attempts_root: Path) -> "DockerBackend":
        return DockerBackend(self.client, HelperPool(attempts_root) if reuse_helpers() else None)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()

    def sandbox(self, spec: AttemptSpec, harness: Harness) -> DockerSandbox:
        return DockerSandbox(self.client, spec, harness, self.pool)

    def cleanup_run(self, run_id: str, mine: bool = False, run_dir: Path | None = None) -> int:
        return cleanup_run(self.client, run_id, mine, run_dir)

    def host_address(self, network: str) -> str:
        return network_host_ip(self.client, network)


_: type[SandboxBackend] = DockerBackend  # checked by mypy: the Docker backend implements the interface
