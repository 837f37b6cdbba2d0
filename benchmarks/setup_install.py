"""How long `make setup` takes to install requirements.lock into a new venv: pip (what it ran before) against uv
with byte-compiling (what it runs now). Prints figures; asserts nothing.

Each installer gets its own empty cache under a temporary folder, so both download every wheel from PyPI (a
fresh machine), then installs a second time from that cache (a machine that has set up before). The user's own
caches and the project venv are left alone.

Usage: .venv/bin/python benchmarks/setup_install.py
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"


def timed(command: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(command, check=True, env=env, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    uv = Path(sys.executable).parent / "uv"
    if not uv.is_file():
        sys.exit("run `make setup` first: the benchmark uses the venv's uv (requirements-bootstrap.lock)")
    with tempfile.TemporaryDirectory(prefix="omnidr-setup-bench-") as tmp:
        base = Path(tmp)
        env = {**os.environ, "PIP_CACHE_DIR": str(base / "pip-cache"), "UV_CACHE_DIR": str(base / "uv-cache"),
               "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        rows = []
        for run in ("cold cache", "warm cache"):
            figures = {}
            for tool in ("pip", "uv"):
                venv = base / f"{tool}-{run.split()[0]}"
                subprocess.run(["python3", "-m", "venv", str(venv)], check=True)  # the interpreter make uses
                python = venv / "bin" / "python"
                if tool == "pip":
                    command = [str(python), "-m", "pip", "install", "-q", "--require-hashes", "-r", str(LOCK)]
                else:
                    command = [str(uv), "pip", "install", "-q", "--compile-bytecode", "--python", str(python),
                               "--require-hashes", "-r", str(LOCK)]
                figures[tool] = timed(command, env)
            rows.append((run, figures["pip"], figures["uv"]))
    print(f"installing requirements.lock ({sum(1 for line in LOCK.read_text().splitlines() if '==' in line)} "
          f"packages) into a new venv, {os.cpu_count()} cores")
    print(f"{'':12} {'pip s':>8} {'uv s':>8} {'pip/uv':>8}")
    for run, pip, uv_s in rows:
        print(f"{run:12} {pip:8.1f} {uv_s:8.1f} {pip / uv_s:8.1f}x")


if __name__ == "__main__":
    main()
