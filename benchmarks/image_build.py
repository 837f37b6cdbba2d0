"""How long a fresh machine takes to build every project image, one at a time against several at once
(prints figures; asserts nothing).

A cold build without touching this machine's images: each measurement builds from a private copy of
`images/` whose folders carry a salt file, so every recipe, and with it every tag and parent, is new and
Docker's layer cache has nothing to give; the resolution and wheel caches are empty folders of its own.
What `make images` does on a fresh machine is the `--jobs 4` figure (debootstrap, the Debian resolutions,
the apt installs, the wheel downloads and the builds). The images a measurement made are removed after it.

Usage: .venv/bin/python benchmarks/image_build.py [--jobs 1 4] [--images base gateway ...]
Takes about as long as the builds it times (10 to 25 minutes on 2 cores).
"""

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from omnidr.images import LABEL_NAME, docker_client, load_specs  # noqa: E402


def cold_build(jobs: int, names: list[str]) -> tuple[float, list[dict]]:
    """Build `names` from a salted copy of images/ with empty caches; wall seconds and the per-image rows."""
    work = Path(tempfile.mkdtemp(prefix="omnidr-bench-images-"))
    try:
        images = work / "images"
        shutil.copytree(ROOT / "images", images)
        salt = secrets.token_hex(8)
        for folder in images.iterdir():
            if (folder / "image.json").is_file():
                (folder / ".bench-salt").write_text(salt)
        env = {**os.environ, "OMNIDR_IMAGES_DIR": str(images), "OMNIDR_IMAGE_CACHE": str(work / "resolutions"),
               "OMNIDR_WHEEL_CACHE": str(work / "wheels"), "COLUMNS": "200"}
        code = ("import json, sys; from omnidr.images import build_images; "
                "rows = build_images(sys.argv[2:] or None, jobs=int(sys.argv[1])); "
                "print(json.dumps([r.model_dump(mode='json') for r in rows]))")
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", code, str(jobs), *names], cwd=ROOT, env=env, capture_output=True,
                              text=True)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            sys.exit(f"the build with --jobs {jobs} failed: {proc.stderr.strip().splitlines()[-1:]}")
        rows = json.loads(proc.stdout.strip().splitlines()[-1])
        return wall, rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


def remove(rows: list[dict]) -> None:
    client = docker_client()
    for row in reversed(rows):
        if row["tag"] and row["status"] == "built":
            try:
                client.images.remove(row["tag"], force=True)
            except Exception as exc:  # noqa: BLE001 - a leftover is named, the figures stand
                print(f"  could not remove {row['tag']}: {exc}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--images", nargs="*", default=[], help="default: every image (as `make images`)")
    args = parser.parse_args()
    known = load_specs()
    unknown = [n for n in args.images if n not in known]
    if unknown:
        sys.exit(f"unknown image(s) {unknown}; known: {', '.join(known)}")
    walls: dict[int, float] = {}
    for jobs in args.jobs:
        wall, rows = cold_build(jobs, args.images)
        walls[jobs] = wall
        print(f"--jobs {jobs}: {wall:.0f} s wall for {sum(r['status'] == 'built' for r in rows)} images built")
        for r in rows:
            print(f"  {r['name']:<12} {r['status']:<8} {r['seconds']:7.1f} s  {r.get('reason') or ''}".rstrip())
        remove(rows)
    if len(walls) > 1:
        first = args.jobs[0]
        for jobs in args.jobs[1:]:
            print(f"--jobs {jobs} against --jobs {first}: x{walls[jobs] / walls[first]:.2f} of the time")
    print(f"(label {LABEL_NAME} names the images a build made; 2-core figures depend on the archive's speed)")


if __name__ == "__main__":
    main()
