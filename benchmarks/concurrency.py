"""Host capacity in numbers (prints figures; asserts nothing).

N attempts at once in one driver: the `command` harness with the agent `sleep S`, one task per attempt (a
private copy of the demo snapshot with N copies of one task), `--parallel N`, the scripted model on loopback as
the model endpoint. Printed: attempts whose agent ran to its end, `infra_error` count, wall time of the run,
the wait for a start slot and the setup time per attempt (from attempt.json), and memory: the peak of the sum
of the run's containers' memory (cgroup usage less inactive page cache, as `docker stats` counts it) and the
peak drop of the host's MemAvailable, each divided by N. CPU: the CPU time of the run's containers (the doors'
start-up is most of it) per attempt, and the cores all of the host's containers got during the run (cgroup v1's
`docker` group; the engine puts every container under it, so on a host whose own processes keep the CPU busy the
containers together get about one runnable process's share, and the doors' start-up is what waits), with the load
average before and after.

Usage: .venv/bin/python benchmarks/concurrency.py [--attempts 8] [--sleep 20] [--max-starts K]
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.sandbox_speed import scripted_on_loopback  # noqa: E402
from omnidr.attempts import LABEL_RUN_DIR, HostPolicy, RetryPolicy, SandboxLimits, Upstream  # noqa: E402
from omnidr.harness import Endpoint, SystemConfig, SystemRunOptions, SystemSpec, run_command_harness  # noqa: E402
from omnidr.images import build_images, docker_client  # noqa: E402
from sandbox.models import Budget  # noqa: E402

DEMO = ROOT / "snapshots" / "demo"
TEMPLATE_TASK = "pendant-lamp-safety"
CGROUP_ROOTS = (Path("/sys/fs/cgroup/memory/docker"), Path("/sys/fs/cgroup/docker"), Path("/sys/fs/cgroup/system.slice"))
CPU_ROOTS = (Path("/sys/fs/cgroup/cpuacct/docker"), Path("/sys/fs/cgroup/docker"), Path("/sys/fs/cgroup/system.slice"))
DOCKER_CPU = Path("/sys/fs/cgroup/cpuacct/docker/cpuacct.usage")  # every container's CPU (cgroup v1), nanoseconds


def snapshot_with(n: int, where: Path) -> Path:
    """A copy of the demo snapshot whose tasks are `n` copies of one task (bench-000, bench-001, ...)."""
    root = where / "snapshot"
    shutil.copytree(DEMO, root)
    ids = [f"bench-{i:03d}" for i in range(n)]
    template = root / "tasks" / TEMPLATE_TASK
    for tid in ids:
        shutil.copytree(template, root / "tasks" / tid)
        for name in ("task.json", "rubric.json", "facts.json"):
            path = root / "tasks" / tid / name
            path.write_text(path.read_text("utf-8").replace(TEMPLATE_TASK, tid), "utf-8")
    for old in json.loads((DEMO / "snapshot.json").read_text("utf-8"))["tasks"]:
        shutil.rmtree(root / "tasks" / old)
    meta = json.loads((root / "snapshot.json").read_text("utf-8"))
    meta["tasks"] = ids
    (root / "snapshot.json").write_text(json.dumps(meta, indent=2), "utf-8")
    return root


def container_memory(cid: str) -> int | None:
    """A container's memory as `docker stats` counts it (usage less inactive file cache), bytes; None if unknown."""
    for base in CGROUP_ROOTS:
        for folder in (base / cid, base / f"docker-{cid}.scope"):
            if not folder.is_dir():
                continue
            try:
                if (folder / "memory.usage_in_bytes").is_file():  # cgroup v1
                    usage = int((folder / "memory.usage_in_bytes").read_text())
                    key = "total_inactive_file"
                else:  # cgroup v2
                    usage = int((folder / "memory.current").read_text())
                    key = "inactive_file"
                stat = dict(line.split() for line in (folder / "memory.stat").read_text().splitlines())
                return usage - int(stat.get(key, 0))
            except (OSError, ValueError):
                return None
    return None


def container_cpu_s(cid: str) -> float | None:
    """A container's CPU time so far, seconds; None if unknown."""
    for base in CPU_ROOTS:
        for folder in (base / cid, base / f"docker-{cid}.scope"):
            try:
                if (folder / "cpuacct.usage").is_file():  # cgroup v1
                    return int((folder / "cpuacct.usage").read_text()) / 1e9
                if (folder / "cpu.stat").is_file():  # cgroup v2
                    stat = dict(line.split() for line in (folder / "cpu.stat").read_text().splitlines())
                    return int(stat["usage_usec"]) / 1e6
            except (OSError, ValueError, KeyError):
                return None
    return None


def all_containers_cpu_s() -> float | None:
    try:
        return int(DOCKER_CPU.read_text()) / 1e9
    except (OSError, ValueError):
        return None


def mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


class MemoryWatch:
    """Samples, every `every_s`, the sum of the memory of the containers labelled with `run_dir` and the host's
    MemAvailable, keeping the peaks, and each of those containers' CPU time, keeping the last seen (a container's
    CPU after its last sample, while it is removed, is not counted)."""

    def __init__(self, client, run_dir: Path, every_s: float = 1.0):
        self.client, self.run_dir, self.every_s = client, str(run_dir.resolve()), every_s
        self.baseline = mem_available()
        self.peak_sum = self.peak_drop = self.peak_containers = 0
        self.cpu_s: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *_):
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            found = self.client.containers.list(filters={"label": f"{LABEL_RUN_DIR}={self.run_dir}"}, sparse=True)
            total = sum(m for c in found if (m := container_memory(c.id)) is not None)
            self.peak_sum = max(self.peak_sum, total)
            self.peak_containers = max(self.peak_containers, len(found))
            self.peak_drop = max(self.peak_drop, self.baseline - mem_available())
            for c in found:
                if (cpu := container_cpu_s(c.id)) is not None:
                    self.cpu_s[c.id] = cpu
            self._stop.wait(self.every_s)


def mb(n: float) -> str:
    return f"{n / 2**20:.0f} MB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--attempts", type=int, default=8, help="attempts at once (N)")
    ap.add_argument("--sleep", type=float, default=20, help="seconds each agent sleeps (S)")
    ap.add_argument("--max-starts", type=int, default=None, help="start slots (default: 2 per core)")
    args = ap.parse_args()
    n = args.attempts
    tags = {r.name: r.tag for r in build_images(["base", "gateway", "egress"])}
    client = docker_client()
    model, url = scripted_on_loopback()
    work = Path(tempfile.mkdtemp(prefix="omnidr-concurrency-"))
    host = HostPolicy(max_starts=args.max_starts)
    try:
        snapshot = snapshot_with(n, work)
        run_dir = work / "run"
        load_before, docker_cpu_before = os.getloadavg(), all_containers_cpu_s()
        t0 = time.monotonic()
        with MemoryWatch(client, run_dir) as memory:
            agent = SystemSpec(harness="command", model=Endpoint.scripted(), image=tags["base"],
                               command=("sleep", f"{args.sleep:g}"))
            config = SystemConfig(agent=agent, budget=Budget(wall_time_s=args.sleep + 600, attempts_per_task=1),
                                  budget_label="benchmark")
            results = run_command_harness(snapshot, run_dir, config, SystemRunOptions(
                upstreams=[Upstream(family="openai", base_url=url)], limits=SandboxLimits(cpus=1.0, memory_mb=256, pids=64),
                retry=RetryPolicy(), parallel=n, host=host, on_note=lambda _m: None))
        wall = time.monotonic() - t0
        load_after, docker_cpu_after = os.getloadavg(), all_containers_cpu_s()
    finally:
        model.terminate()
        model.wait()
    records = [r for rs in results.values() for r in rs]
    ran = [r for r in records if r.reason.value != "infra_error" and r.exit_code == 0]
    infra = [r for r in records if r.reason.value == "infra_error"]
    setups = [r.setup_s for r in records if r.setup_s is not None]
    waits = [r.start_wait_s for r in records]
    print(f"host: {len(os.sched_getaffinity(0))} cores, {mb(mem_available())} available at the end; "
          f"start slots: {host.start_slots}")
    print(f"attempts at once (N):        {n} (agent: sleep {args.sleep:g} s)")
    print(f"attempts run to the end:     {len(ran)}/{n}")
    print(f"infra_error:                 {len(infra)}" + (f" (first: {infra[0].detail[:160]})" if infra else ""))
    print(f"wall time:                   {wall:.1f} s (sleep + {wall - args.sleep:.1f} s)")
    if setups:
        print(f"setup per attempt:           median {statistics.median(setups):.1f} s, max {max(setups):.1f} s "
              "(slot to agent start)")
    print(f"wait for a start slot:       median {statistics.median(waits):.1f} s, max {max(waits):.1f} s")
    print(f"peak memory of the run's containers: {mb(memory.peak_sum)} in all, {mb(memory.peak_sum / n)} per attempt "
          f"({memory.peak_containers} containers at most)")
    print(f"peak drop of host MemAvailable:      {mb(memory.peak_drop)} in all, {mb(memory.peak_drop / n)} per attempt "
          "(driver, engine and containers)")
    print(f"CPU of the run's containers:         {sum(memory.cpu_s.values()):.1f} CPU-s in all, "
          f"{sum(memory.cpu_s.values()) / n:.2f} per attempt")
    if docker_cpu_before is not None and docker_cpu_after is not None:
        print(f"cores all the host's containers got: {(docker_cpu_after - docker_cpu_before) / wall:.2f} on average")
    print(f"load average (1 min):                {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
