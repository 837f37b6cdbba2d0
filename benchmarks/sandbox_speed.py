"""Sandbox speed figures (prints them; asserts nothing).

1. Start overhead: time from launching `omnidr run` to the agent's first instruction, against a
   bare `docker run` of the same image to its first instruction; the ratio of medians. And the whole
   `omnidr run` of that one attempt, start to exit (the model endpoint is the scripted model on loopback).
2. Throughput: N concurrent attempts of a short command agent (write a report, exit) on this machine;
   with N=1, the cost of each further attempt in one process.

Usage: .venv/bin/python benchmarks/sandbox_speed.py [--repeats 3] [--concurrency 1,2,4]
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from omnidr.attempts import AttemptSandbox, AttemptSpec, DockerBackend, SandboxLimits, Upstream
from omnidr.attempts._helpers import HelperPool  # noqa: E402
from omnidr.benchmark import open_snapshot  # noqa: E402
from omnidr.harness import CommandHarness  # noqa: E402
from omnidr.images import build_images, docker_client  # noqa: E402
from sandbox.models import Budget  # noqa: E402

FIRST_INSTRUCTION = "import time; print(repr(time.time()), flush=True)"
SHORT_AGENT = ("import os, time; print(repr(time.time()), flush=True); os.makedirs('/output/report', exist_ok=True); "
               "open('/output/report/index.html', 'w').write('<p>ok</p>')")


def spec_for(folder: Path, tags: dict, snap, task_id: str) -> AttemptSpec:
    b = snap.tasks[task_id]
    return AttemptSpec(
        run_id="bench", task_id=task_id, attempt=1, folder=folder, video=b.folder / b.task.video.file,
        instruction="benchmark", contract_dir=(snap.root / snap.contract_file).parent, model="m",
        upstreams=(Upstream(family="openai", base_url="http://upstream.invalid:9000/v1"),), budget=Budget(wall_time_s=120),
        limits=SandboxLimits(cpus=1, memory_mb=256), gateway_image=tags["gateway"], egress_image=tags["egress"],
        proxy_mode="deny",
    )


def cpu_seconds() -> tuple[float, float]:
    """The machine's busy and total CPU seconds so far, over all cores (/proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    return (sum(values) - values[3] - values[4]) / tick, sum(values) / tick


def first_instruction_s(log: str, started_wall: float) -> float:
    return float(log.strip().splitlines()[0]) - started_wall


def scripted_on_loopback() -> tuple[subprocess.Popen, str]:
    """The scripted model on the host's loopback: an endpoint that answers (omnidr run checks it first)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "sandbox.scripted_model", "--host", "127.0.0.1", "--port", str(port)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the scripted model did not start")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--concurrency", default="1,2,4")
    ap.add_argument("--per-slot", type=int, default=4, help="attempts per concurrent slot in the throughput runs")
    ap.add_argument("--fresh-helpers", action="store_true", help="a new gateway and proxy for every attempt")
    args = ap.parse_args()
    tags = {r.name: r.tag for r in build_images(["base", "gateway", "egress"])}
    client = docker_client()
    snap = open_snapshot(ROOT / "snapshots" / "demo")
    task_id = next(iter(snap.tasks))

    bare, boxed, whole = [], [], []
    model, url = scripted_on_loopback()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            t0 = time.time()
            out = subprocess.run(["docker", "run", "--rm", tags["base"], "python3", "-c", FIRST_INSTRUCTION],
                                 capture_output=True, text=True, check=True).stdout
            bare.append(first_instruction_s(out, t0))
            run_dir = Path(tmp) / f"start-{i}"
            t0 = time.time()
            subprocess.run([sys.executable, "-m", "omnidr.cli", "run", "--run-dir", str(run_dir), "--task", task_id,
                            "--image", tags["base"], "--openai-base-url", url, "--model", "m",
                            "--proxy-mode", "deny", "--attempts", "1", "--", "python3", "-c", FIRST_INSTRUCTION],
                           cwd=ROOT, capture_output=True, text=True)  # exits 1: this agent writes no report
            whole.append(time.time() - t0)
            log = (run_dir / "attempts" / task_id / "1" / "logs" / "agent.log").read_text()
            boxed.append(first_instruction_s(log, t0))
        b, s = statistics.median(bare), statistics.median(boxed)
        print(f"start to first instruction, median of {args.repeats}:")
        print(f"  bare docker run          : {b:.2f} s")
        print(f"  omnidr run (sandbox)     : {s:.2f} s  (CLI start, internal network, gateway, proxy, output volume)")
        print(f"  ratio sandbox / bare     : {s / b:.1f}x")
        print(f"  whole omnidr run, 1 attempt, start to exit: {statistics.median(whole):.2f} s")

        # as a run's workers do: the attempts share a pool of helper pairs, each pair serving one attempt at a time
        # (a worker's first attempt starts its pair); --fresh-helpers: a new pair for every attempt
        per_minute = {}
        for n in [int(x) for x in args.concurrency.split(",")]:
            harness = CommandHarness(tags["base"], ["python3", "-c", SHORT_AGENT])
            helpers = None if args.fresh_helpers else HelperPool(Path(tmp))
            t0 = time.monotonic()
            with ThreadPoolExecutor(max_workers=n) as pool:
                records = list(pool.map(
                    lambda k, n=n, harness=harness, helpers=helpers: AttemptSandbox(
                        DockerBackend(client, helpers), spec_for(Path(tmp) / f"c{n}-{k}", tags, snap, task_id),
                        harness).run(),
                    range(args.per_slot * n)))
            wall = time.monotonic() - t0
            if helpers is not None:
                helpers.close()
            total = args.per_slot * n
            ended = ", ".join(f"{k} {v}" for k, v in Counter(r.reason.value for r in records).items())
            per_minute[n] = 60 * total / wall
            print(f"throughput, {n} concurrent: {total} attempts in {wall:.1f} s = {per_minute[n]:.1f} attempts/min "
                  f"({wall / total * n:.2f} s per attempt and slot; ended: {ended})")
        if 1 in per_minute:
            print("concurrent / serial throughput: " + ", ".join(
                f"{n} at once {v / per_minute[1]:.2f}x" for n, v in per_minute.items() if n != 1))
        if not args.fresh_helpers:
            # what bounds concurrency: the machine's CPU time per attempt on pairs already started
            harness = CommandHarness(tags["base"], ["python3", "-c", SHORT_AGENT])
            for n in (1, 4):
                helpers = HelperPool(Path(tmp))

                def batch(count: int, prefix: str, n=n, helpers=helpers, harness=harness) -> None:
                    with ThreadPoolExecutor(max_workers=n) as pool:
                        list(pool.map(lambda k: AttemptSandbox(DockerBackend(client, helpers), spec_for(
                                        Path(tmp) / f"{prefix}{k}", tags, snap, task_id), harness).run(),
                                      range(count)))

                batch(n, f"warm{n}-")  # one attempt per slot starts the pairs
                count = 3 * args.per_slot
                b0, t0, w0 = *cpu_seconds(), time.monotonic()
                batch(count, f"cpu{n}-")
                (b1, t1), wall = cpu_seconds(), time.monotonic() - w0
                helpers.close()
                print(f"on started pairs, {n} at once: {wall / count:.2f} s per attempt, {(b1 - b0) / count:.2f} "
                      f"CPU-s per attempt (the whole machine), machine busy {100 * (b1 - b0) / (t1 - t0):.0f}%")
    model.terminate()


if __name__ == "__main__":
    main()
