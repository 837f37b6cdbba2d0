"""The Ray executor as a lab's cluster looks: two Ray nodes, each with a Docker engine of its own.

The second engine is a `dockerd` this test starts on this machine in a network namespace of its own (its own
socket, data root, exec root, pidfile, iptables and bridge), the way a second host has them; a second Ray node
runs in that namespace with DOCKER_HOST naming that engine, and reaches the head over a veth pair (the cluster's
network). The images reach the second engine without a registry: saved from the first engine and loaded, and
their content tags checked there. The model endpoint is on the cluster network, reachable from both engines.
Attempts spread over both engines, and when the second node is lost under a running attempt, that task is
retried on the first."""

import ipaddress
import json
import os
import queue
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path

import docker
import pytest
from attempt_helpers import DEMO, agent_argv
from testkit import ROOT, free_port, kill_session

from omnidr.attempts import LABEL_RUN_DIR, RunConfig, cleanup_run
from omnidr.attempts._labels import LABEL_ATTEMPT

pytestmark = pytest.mark.docker

TASKS = ["pendant-lamp-safety", "nd-filter-waterfall"]
RAY = Path(sys.executable).parent / "ray"
LABEL_CONTENT = "org.omnidr.content"  # the content tag an image carries (omnidr.images._build)
NO_TELEMETRY = {"RAY_USAGE_STATS_ENABLED": "0"}
COPIED = ("base", "gateway", "egress")  # the images the attempts use: the agent's (base) and the two doors'


# --- the processes of a network namespace, found by id ---------------------------------------------------------

def netns_pids(name: str) -> list[int]:
    out = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def kill_all(pids: list[int], sig: int = signal.SIGKILL) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def wait_gone(find, timeout_s: float) -> list[int]:
    """Wait until `find()` lists no process; returns what is still there at the deadline."""
    deadline = time.monotonic() + timeout_s
    while (left := find()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def unmount_under(root: Path) -> None:
    """Lazily unmount whatever an engine that did not stop cleanly left mounted under `root`, deepest first."""
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")
        if point == str(root) or point.startswith(f"{root}/"):
            mounts.append(point)
    for point in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True)


def run(*cmd: str) -> None:
    r = subprocess.run(list(cmd), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")


# --- the second engine ---------------------------------------------------------------------------------------

@dataclass
class SecondEngine:
    root: Path  # socket, data root, exec root, pidfile, daemon config, logs, Ray's temp folders
    netns: str
    host_ip: str  # the first host's address on the cluster network (the veth's host end)
    node_ip: str  # the second host's address (the veth's end in the namespace)
    docker_host: str
    client: docker.DockerClient
    copy: "ImageCopy"  # the images an attempt uses (COPIED), on their way from the first engine


def _free_link_subnet() -> ipaddress.IPv4Network:
    """A /30 of 10.254.0.0/16 that no address or route of this host covers."""
    used = []
    for line in subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True).stdout.splitlines():
        used.append(ipaddress.ip_interface(line.split()[3]).network)
    for line in subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout.splitlines():
        dest = line.split()[0]
        if dest != "default":
            used.append(ipaddress.ip_network(dest, strict=False))
    candidates = list(ipaddress.ip_network("10.254.0.0/16").subnets(new_prefix=30))
    random.shuffle(candidates)
    return next(c for c in candidates if not any(c.overlaps(u) for u in used))


def _start_engine(root: Path, netns: str, storage_driver: str) -> subprocess.Popen:
    """`dockerd` in the namespace, with its own socket, data root, exec root and pidfile, and `storage_driver`; its
    own daemon config (the host's /etc/docker/daemon.json names the first engine's data root). The data root is a
    tmpfs: the loaded images are written to memory, and go with one unmount instead of a walk over their files."""
    data, exec_root = root / f"data-{storage_driver}", root / f"exec-{storage_driver}"
    data.mkdir()
    run("mount", "-t", "tmpfs", "-o", "size=4g,mode=0711", f"omnidr-e2-{storage_driver}", str(data))
    config = root / "daemon.json"
    config.write_text(json.dumps({"storage-driver": storage_driver, "log-driver": "json-file"}))
    with open(root / "dockerd.log", "ab") as log:  # the engine holds its own copy of the descriptor
        return subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{netns}", "dockerd", "--config-file", str(config),
             "--host", f"unix://{root}/docker.sock", "--data-root", str(data),
             "--exec-root", str(exec_root), "--pidfile", str(root / "docker.pid")],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _answering(engine: subprocess.Popen, docker_host: str, timeout_s: float) -> docker.DockerClient | None:
    """A client of the engine once it answers; None when it exited or did not answer within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while engine.poll() is None and time.monotonic() < deadline:
        try:
            client = docker.DockerClient(base_url=docker_host, timeout=600)
            client.ping()
            return client
        except docker.errors.DockerException:
            time.sleep(0.2)
    return None


@dataclass
class ImageCopy:
    """`docker save` on the first engine piped into `docker load` on the second: no registry in between. It runs
    while the Ray nodes start; `wait` for it before the images are used."""
    save: subprocess.Popen
    load: subprocess.Popen

    @classmethod
    def start(cls, tags: list[str], docker_host: str) -> "ImageCopy":
        save = subprocess.Popen(["docker", "save", *tags], stdout=subprocess.PIPE)
        load = subprocess.Popen(["docker", "-H", docker_host, "load"], stdin=save.stdout, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert save.stdout is not None
        save.stdout.close()  # the load holds the pipe now: a load that dies ends the save
        return cls(save, load)

    def wait(self) -> None:
        _, err = self.load.communicate(timeout=600)
        assert self.save.wait(600) == 0 and self.load.returncode == 0, err

    def stop(self) -> None:
        for p in (self.save, self.load):
            if p.poll() is None:
                p.kill()
                p.wait(10)


@pytest.fixture(scope="module")
def second_engine(client, images) -> Iterator[SecondEngine]:
    """A second Docker engine in a network namespace of its own, joined to this host by a veth pair; everything
    it made (processes, mounts, data root, namespace, link) is removed afterwards, whatever the test did."""
    missing = [b for b in ("ip", "nsenter", "dockerd", "docker") if shutil.which(b) is None]
    if missing or os.geteuid() != 0:
        pytest.skip(f"a second Docker engine needs root and {', '.join(missing or ['ip'])} on this machine")
    tag = secrets.token_hex(3)
    netns, host_link, ns_link = f"omnidr-e2-{tag}", f"oe2h{tag}", f"oe2n{tag}"
    root = Path(tempfile.mkdtemp(prefix="omnidr-e2-", dir="/tmp"))  # short: the engines' sockets live below it
    subnet = _free_link_subnet()
    host_ip, node_ip = (str(a) for a in subnet.hosts())
    engine: subprocess.Popen | None = None
    second = None
    copy: ImageCopy | None = None
    try:
        try:
            run("ip", "netns", "add", netns)
            run("ip", "link", "add", host_link, "type", "veth", "peer", "name", ns_link)
            run("ip", "link", "set", ns_link, "netns", netns)
            run("ip", "addr", "add", f"{host_ip}/30", "dev", host_link)
            run("ip", "link", "set", host_link, "up")
            for cmd in (["ip", "link", "set", "lo", "up"], ["ip", "addr", "add", f"{node_ip}/30", "dev", ns_link],
                        ["ip", "link", "set", ns_link, "up"], ["ip", "route", "add", "default", "via", host_ip]):
                run("ip", "netns", "exec", netns, *cmd)
        except RuntimeError as exc:
            pytest.skip(f"a second Docker engine cannot have a network of its own here: {exc}")
        docker_host = f"unix://{root}/docker.sock"
        # overlay2 where the kernel has it (a second host's default, and a faster load than this engine's
        # fuse-overlayfs), else the first engine's driver; the images' ids do not depend on the driver
        drivers = list(dict.fromkeys(["overlay2", client.info()["Driver"]]))
        for driver in drivers:
            engine = _start_engine(root, netns, driver)
            second = _answering(engine, docker_host, 90)
            if second is not None or engine.poll() is None:
                break
        if second is None:
            tail = (root / "dockerd.log").read_text(errors="replace").strip().splitlines()[-5:]
            pytest.skip("a second Docker engine cannot run here: dockerd "
                        f"{'exited ' + str(engine.returncode) if engine.poll() is not None else 'did not answer'}"
                        f": {' | '.join(tail)}")
        copy = ImageCopy.start([images[n] for n in COPIED], docker_host)
        yield SecondEngine(root, netns, host_ip, node_ip, docker_host, second, copy)
    finally:
        if copy is not None:
            copy.stop()
        if second is not None:  # its containers first, so that the engine stops at once
            try:
                for c in second.containers.list(all=True, ignore_removed=True):
                    c.remove(force=True)
            except docker.errors.DockerException:
                pass
        if engine is not None:
            engine.terminate()
            try:
                engine.wait(60)
            except subprocess.TimeoutExpired:
                pass
        kill_all(netns_pids(netns) if Path(f"/run/netns/{netns}").exists() else [])
        if engine is not None:
            kill_session(engine.pid)
            if engine.poll() is None:
                engine.wait(10)
        left = wait_gone(lambda: netns_pids(netns) if Path(f"/run/netns/{netns}").exists() else [], 20)
        unmount_under(root)
        subprocess.run(["ip", "link", "del", host_link], capture_output=True)
        subprocess.run(["ip", "netns", "del", netns], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
        assert not left, f"processes of the second engine outlived it: {left}"
        assert not root.exists(), f"{root} could not be removed"


# --- the Ray cluster -----------------------------------------------------------------------------------------

@dataclass
class RayCluster:
    address: str  # the head's GCS, HOST:PORT on the cluster network
    head: subprocess.Popen
    node2: subprocess.Popen


RAY_STARTED = "Ray runtime started."
"""What `ray start` prints once its node is registered with the head's GCS (it asks the GCS for the node first)."""


@pytest.fixture(scope="module")
def ray_cluster(second_engine: SecondEngine) -> Iterator[RayCluster]:
    """A Ray head on this host (its engine: the first) and a second node in the second engine's namespace with
    DOCKER_HOST naming the second engine: the variable every worker process of that node inherits. One CPU each,
    so that two tasks at once run one per node. Both are stopped by their sessions' process ids."""
    e = second_engine
    port = free_port()
    address = f"{e.host_ip}:{port}"
    common = ["--block", "--num-cpus=1", "--disable-usage-stats", "--object-store-memory=100000000",
              "--include-log-monitor=false"]  # the drivers do not take the workers' output
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "DOCKER_HOST")} | NO_TELEMETRY
    procs: list[subprocess.Popen] = []
    try:
        with open(e.root / "ray-head.log", "wb") as head_log, open(e.root / "ray-node2.log", "wb") as node2_log:
            procs.append(subprocess.Popen(
                [str(RAY), "start", "--head", f"--node-ip-address={e.host_ip}", f"--port={port}",
                 "--include-dashboard=false", f"--temp-dir={e.root}/ray1", *common],
                stdout=head_log, stderr=subprocess.STDOUT, env=env, start_new_session=True))
            procs.append(subprocess.Popen(
                ["nsenter", f"--net=/run/netns/{e.netns}", str(RAY), "start", f"--address={address}",
                 f"--node-ip-address={e.node_ip}", f"--temp-dir={e.root}/ray2", *common],
                stdout=node2_log, stderr=subprocess.STDOUT, env={**env, "DOCKER_HOST": e.docker_host},
                start_new_session=True))
        deadline = time.monotonic() + 180
        logs = [e.root / "ray-head.log", e.root / "ray-node2.log"]
        while not all(RAY_STARTED in log.read_text(errors="replace") for log in logs):
            for p, log in zip(procs, logs, strict=True):
                assert p.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the two Ray nodes did not join within 180 s"
            time.sleep(0.2)
        yield RayCluster(address, procs[0], procs[1])
    finally:
        left = [pid for p in procs for pid in kill_session(p.pid)]  # a test cluster keeps nothing worth a graceful stop
        for p in procs:
            if p.poll() is None:
                p.wait(10)
        assert not left, f"Ray processes outlived the cluster: {left}"


# --- the run -------------------------------------------------------------------------------------------------

DRIVER_DONE = "omnidr-test-run-done"  # begins the driver's line for a run that returned (other lines may come first)
DRIVER = """
import json, sys
from pathlib import Path
from omnidr.attempts import RetryPolicy, SandboxLimits, Upstream, make_executor
from omnidr.harness import Endpoint, SystemConfig, SystemRunOptions, SystemSpec, run_system
from sandbox.models import Budget

DONE = sys.argv[1]
for line in sys.stdin:
    args = json.loads(line)
    agent = SystemSpec(harness="command", model=Endpoint(spec="fake-model", name="fake-model", base_url=None, key_env=None),
                       image=args["image"], command=tuple(args["argv"]))
    config = SystemConfig(agent=agent, budget=Budget(wall_time_s=120, attempts_per_task=2), budget_label="test")
    ran = run_system(Path(args["snapshot"]), Path(args["run_dir"]), config, SystemRunOptions(
        tasks=args["tasks"], upstreams=[Upstream(family="openai", base_url=args["url"])],
        limits=SandboxLimits(cpus=1.0, memory_mb=256, pids=128), retry=RetryPolicy(), parallel=2, gateway_backoff_s=0.05,
        executor=make_executor("ray", args["ray_address"])))
    print(DONE, json.dumps({t: [r.reason.value for r in rs] for t, rs in ran.records.items()}), flush=True)
"""


class Driver:
    """A driver process on the first host (the Python API of `omnidr run --harness command`, with the Ray
    executor), one line of run arguments on its stdin per run: one process and Ray job for the test's runs, as a
    lab's scheduler script runs one run after another, so that the second run finds the nodes' worker processes
    started."""

    def __init__(self, cluster: RayCluster, image: str, url: str, stderr: Path):
        self.cluster, self.image, self.url, self.stderr = cluster, image, url, stderr
        env = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"} | NO_TELEMETRY
        with open(stderr, "wb") as err:
            self.proc = subprocess.Popen([sys.executable, "-c", DRIVER, DRIVER_DONE], cwd=ROOT, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        self.lines: queue.Queue[str] = queue.Queue()  # its stdout, line by line; "" once it ended
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")

    def run(self, run_dir: Path, sleep_s: float, timeout_s: float = 600) -> tuple[str, str]:
        """Both tasks at once, two attempts each at most, an agent that asks the model once, sleeps `sleep_s`,
        reports: what the driver printed for the run (ending with its DRIVER_DONE line with the tasks' reasons;
        without it when the driver died or the run did not return in `timeout_s`) and wrote to stderr."""
        assert self.proc.stdin is not None
        args = {"snapshot": str(DEMO), "run_dir": str(run_dir), "tasks": TASKS, "image": self.image, "url": self.url,
                "argv": agent_argv("chat:1", f"sleep:{sleep_s:g}", "report"), "ray_address": self.cluster.address}
        before = self.stderr.stat().st_size
        self.proc.stdin.write(json.dumps(args) + "\n")
        self.proc.stdin.flush()
        out, deadline = "", time.monotonic() + timeout_s
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            out += line
            if not line or line.startswith(DRIVER_DONE):
                break
        with open(self.stderr, "rb") as f:
            f.seek(before)
            return out, f.read().decode("utf-8", "replace")

    def close(self) -> None:
        """End the driver: it leaves once its stdin is closed; one still in a run (a test that failed) is killed."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()  # the driver's loop ends
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


class AgentStarts:
    """'task/attempt' of every agent container of `run_dir` that starts on `engine` while this watches: the
    engine's event stream, read as it comes (a `since` query reads only the engine's last 256 events, which
    other tests' containers overrun)."""

    def __init__(self, engine: docker.DockerClient, run_dir: Path):
        self.seen: set[str] = set()
        self._stream = engine.events(decode=True, filters={"type": "container", "event": "start",
                                                           "label": f"{LABEL_RUN_DIR}={run_dir.resolve()}"})
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for event in self._stream:
                attrs = event.get("Actor", {}).get("Attributes", {})
                if attrs.get("name", "").startswith("omnidr-agent-"):
                    self.seen.add(attrs[LABEL_ATTEMPT])
        except Exception:  # noqa: BLE001 - the stream closed under the reader, or the engine went
            pass

    def close(self) -> set[str]:
        self._stream.close()
        self._thread.join(10)
        return self.seen


def seen_starts(*watches: AgentStarts) -> list[set[str]]:
    """What each watch saw, once the last start's event has had a moment to arrive."""
    time.sleep(1)
    return [w.close() for w in watches]


def records(run_dir: Path) -> dict[str, dict]:
    return {f"{p.parent.parent.name}/{p.parent.name}": json.loads(p.read_text())
            for p in sorted(run_dir.glob("attempts/*/*/attempt.json"))}


@pytest.fixture
def model_endpoint(second_engine: SecondEngine) -> Iterator[str]:
    """The fake OpenAI-compatible upstream on the first host's cluster address, where both engines' gateways
    reach it (a lab gives its model endpoint a routable address, not the driver's loopback)."""
    from fake_upstream import Handler

    server = ThreadingHTTPServer((second_engine.host_ip, 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://{second_engine.host_ip}:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.fixture
def driver(tmp_path, images, ray_cluster: RayCluster, model_endpoint: str) -> Iterator[Driver]:
    """The test's driver process, started before the test needs it (its imports overlap the image checks)."""
    started = Driver(ray_cluster, images["base"], model_endpoint, tmp_path / "driver.stderr")
    try:
        yield started
    finally:
        started.close()


def test_attempts_spread_over_two_engines_and_a_lost_nodes_task_is_retried_on_the_other(
        tmp_path, client, images, second_engine, ray_cluster, driver):
    e = second_engine
    tags = [images[n] for n in COPIED]
    # the images reach the second engine without a registry, and are the same content-tagged images there
    e.copy.wait()
    for tag in tags:
        mine, theirs = client.images.get(tag), e.client.images.get(tag)
        assert theirs.id == mine.id and theirs.labels[LABEL_CONTENT] == tag
    listed = subprocess.run([sys.executable, "-m", "omnidr.cli", "images", "list", "--format", "json"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120, env={**os.environ, "DOCKER_HOST": e.docker_host})
    assert listed.returncode == 0, listed.stderr
    rows = {r["image"]: r for r in json.loads(listed.stdout)[0]["rows"]}
    assert {n: (rows[n]["tag"], rows[n]["built"]) for n in COPIED} == {n: (images[n], "yes") for n in COPIED}

    # 1. both tasks at once: one runs on each engine, and both deliver
    first = tmp_path / "first"
    watch = AgentStarts(client, first), AgentStarts(e.client, first)
    out, err = driver.run(first, sleep_s=1)
    on_first, on_second = seen_starts(*watch)
    assert DRIVER_DONE in out and "Traceback" not in err, out[-3000:] + err[-3000:]
    assert {k: v["reason"] for k, v in records(first).items()} == {f"{t}/1": "success" for t in TASKS}
    assert len(on_first) == len(on_second) == 1 and on_first | on_second == {f"{t}/1" for t in TASKS}, (on_first, on_second)
    ids = [v["image_ids"] for v in records(first).values()]
    assert ids[0] == ids[1]  # the same images on either engine

    # 2. the second node is lost while its attempt runs: that attempt ends infra_error, the task is retried on the first
    second = tmp_path / "second"
    watch = AgentStarts(client, second), AgentStarts(e.client, second)
    lost: list[str] = []

    def lose_the_second_node() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            for agent in e.client.containers.list(ignore_removed=True, filters={"name": "omnidr-agent-",
                                                                                 "status": "running"}):
                if agent.labels.get(LABEL_RUN_DIR) == str(second.resolve()):
                    task, attempt = agent.labels[LABEL_ATTEMPT].split("/")
                    asked = second / "attempts" / task / attempt / "logs" / "gateway.jsonl"
                    while time.monotonic() < deadline and not (asked.is_file() and asked.stat().st_size):
                        time.sleep(0.1)  # the attempt is under way once its agent has asked the model
                    lost.append(agent.labels[LABEL_ATTEMPT])
                    kill_session(ray_cluster.node2.pid)  # every Ray process of the node, at once
                    return
            time.sleep(0.2)

    killer = threading.Thread(target=lose_the_second_node, daemon=True)
    killer.start()
    out, err = driver.run(second, sleep_s=3)
    killer.join(10)
    on_first, on_second = seen_starts(*watch)
    assert lost, "no attempt was seen running on the second engine"
    assert DRIVER_DONE in out and "Traceback" not in err, out[-3000:] + err[-3000:]
    [lost_attempt] = lost
    lost_task = lost_attempt.split("/")[0]
    [other] = [t for t in TASKS if t != lost_task]
    got = records(second)
    assert {k: v["reason"] for k, v in got.items()} == {
        f"{lost_task}/1": "infra_error", f"{lost_task}/2": "success", f"{other}/1": "success"}
    assert "the Ray worker running this attempt was lost" in got[f"{lost_task}/1"]["detail"]
    assert (on_first, on_second) == ({f"{other}/1", f"{lost_task}/2"}, {f"{lost_task}/1"})
    # the lost attempt had reached the model through the second engine's gateway before the node went
    gateway_log = second / "attempts" / lost_task / "1" / "logs" / "gateway.jsonl"
    assert gateway_log.is_file() and gateway_log.read_text().strip()
    # what the lost node left on its engine is known as left behind (its maker is gone) and cleaned up there
    run_id = RunConfig.model_validate_json((second / "run.json").read_text()).run_id()
    assert cleanup_run(e.client, run_id, run_dir=second) > 0
    assert not e.client.containers.list(all=True, filters={"label": f"{LABEL_RUN_DIR}={second.resolve()}"})
