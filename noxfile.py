"""Task runner sessions. `make test` calls `nox -s tests` from the project venv."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nox

nox.options.default_venv_backend = "none"
nox.options.sessions = ["tests"]


def build_docs(session: nox.Session) -> None:
    """The documentation site (mkdocs.yml), built with --strict: a broken link, a missing page or a page left out of
    the navigation fails the build. Into site/ (git-ignored); about 3 s."""
    session.run(sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", env={"NO_MKDOCS_2_WARNING": "1"})


def test_workers() -> str:
    """pytest-xdist workers: TEST_WORKERS, else one per core, at least 2 and at most 8. Two per core was tried
    on the 2-core CI machine: the end-to-end tests are CPU-bound (Chromium, ffmpeg, the containers' storage
    driver), the load stood at 10 to 14, and the long end-to-end tests took about three times the durations
    the last serial CI printed for them (the capability ladder 758 s against 185 s)."""
    return os.environ.get("TEST_WORKERS") or str(min(8, max(2, os.cpu_count() or 1)))


@nox.session(venv_backend="none")
def tests(session: nox.Session) -> None:
    """Lint (ruff) and type check (mypy), both configured in pyproject.toml, the docs site (`mkdocs build --strict`),
    then the whole suite, real ffmpeg,
    yt-dlp against loopback, Docker and Chromium included, on parallel workers; tests that share an expensive
    fixture run together on one worker (tests/conftest.py). Every image is built (`omnidr images build`) in the
    background while the suite starts with the tests that need no Docker engine (tests/scheduling.py): on a fresh
    machine the build waits on Debian's archive much of its time. The build writes each image's result the
    moment that image is done (`--results-dir`), and a Docker test starts once the images it needs are there
    (`OMNIDR_IMAGES_RESULTS`, tests/scheduling.py). The 25 slowest steps are listed at the end."""
    session.run(sys.executable, "-m", "ruff", "check", ".")
    # mypy's incremental cache under the user's cache, not in the checkout: a fresh clone on a machine that has
    # type-checked this code before checks only what changed (about 5 s, where a cold run takes 40)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "omnidr" / "mypy"
    session.run(sys.executable, "-m", "mypy", env={"MYPY_CACHE_DIR": str(cache)})
    build_docs(session)
    # the checkout's modules byte-compiled once: the suite starts hundreds of Python processes (every CLI call),
    # and where PYTHONDONTWRITEBYTECODE is set each of them would compile what it imports again
    session.run(sys.executable, "-m", "compileall", "-q", "omnidr", "sandbox", "tests", silent=True)
    log_path, results = Path(".nox") / "images-build.log", (Path(".nox") / "images-build").resolve()
    shutil.rmtree(results, ignore_errors=True)  # no result of an earlier run is taken for this one's
    results.mkdir(parents=True)
    jobs = os.environ.get("IMAGE_JOBS", "4")
    # each image's result lands in `results` when it is done, the build's exit code (whole, by a rename) when it ends
    script = ('"$0" -m omnidr.cli images build --jobs "$1" --results-dir "$2"; '
              'echo $? > "$2/.exit.tmp" && mv "$2/.exit.tmp" "$2/exit"')
    with log_path.open("w") as log:
        session.log(f"building the images in the background (log: {log_path})")
        started = time.time()
        build = subprocess.Popen(["sh", "-c", script, sys.executable, jobs, str(results)], stdout=log,
                                 stderr=subprocess.STDOUT)
        try:
            session.run(sys.executable, "-m", "pytest", "-n", test_workers(), "--dist", "loadgroup", "--durations",
                        "25", *session.posargs, env={"OMNIDR_IMAGES_RESULTS": str(results)})
        finally:
            build.wait()
            print(log_path.read_text(), end="", flush=True)
            # when each image was there for the tests that wait on it, from the start of the build
            done = sorted((p.stat().st_mtime - started, p.stem) for p in results.glob("*.json"))
            print("images ready after: " + ", ".join(f"{name} {s:.0f} s" for s, name in done), flush=True)
    exit_file = results / "exit"
    code = exit_file.read_text().strip() if exit_file.is_file() else "unknown"
    if code != "0":
        session.error(f"the image build failed (exit code {code}); its output is above")


@nox.session(venv_backend="none")
def fast(session: nox.Session) -> None:
    """The docs site (`mkdocs build --strict`), then the unit tests only: no ffmpeg, network, Docker or browser
    (`make test-fast`, the edit-test loop)."""
    build_docs(session)
    session.run(sys.executable, "-m", "pytest", "-n", test_workers(), "-m",
                "not media and not network and not docker and not browser", *session.posargs)
