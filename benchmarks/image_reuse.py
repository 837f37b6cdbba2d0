"""How long finding an unchanged image takes (prints figures; asserts nothing).

For the images a demo eval uses (base, reference, gateway, egress, evaluator), already built:
1. `omnidr images build` as a user runs it (a new process: imports, one InRelease request per
   Debian suite, the resolution cache, the engine's tag lookup);
2. the same call inside a running process, with the archive asked (refresh) and without (what
   eval, run and score do).

Usage: .venv/bin/python benchmarks/image_reuse.py [--repeats 5]
"""

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from omnidr.images import build_images  # noqa: E402
from omnidr.images._archive import forget_archive_state  # noqa: E402

NAMES = ["base", "reference", "gateway", "egress", "evaluator"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    first = build_images(NAMES)
    if any(r.status not in ("cached", "built") for r in first):
        sys.exit(f"build the images first: {[(r.name, r.status, r.reason) for r in first]}")

    cli = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "omnidr.cli", "images", "build", *NAMES], cwd=ROOT, check=True,
                       capture_output=True)
        cli.append(time.perf_counter() - t0)
    refresh, reuse = [], []
    for _ in range(args.repeats):
        forget_archive_state()
        t0 = time.perf_counter()
        statuses = {r.status for r in build_images(NAMES, refresh=True)}
        refresh.append(time.perf_counter() - t0)
        if statuses != {"cached"}:
            sys.exit(f"an image was rebuilt during the measurement ({statuses}); the archive moved: run again")
        t0 = time.perf_counter()
        build_images(NAMES)
        reuse.append(time.perf_counter() - t0)
    print(f"images: {', '.join(NAMES)}; {args.repeats} repeats, medians")
    print(f"  `omnidr images build` (new process, archive asked):   {statistics.median(cli):.3f} s")
    print(f"  build_images(refresh=True) in a process (archive asked): {statistics.median(refresh):.3f} s")
    print(f"  build_images() in a process (eval's path, no network):   {statistics.median(reuse):.3f} s")


if __name__ == "__main__":
    main()
