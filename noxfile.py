"""Task runner sessions. `make test` calls `nox -s tests` from the project venv."""

import os
import sys

import nox

nox.options.default_venv_backend = "none"
nox.options.sessions = ["tests"]


def test_workers() -> str:
    """pytest-xdist workers: TEST_WORKERS, else one per core, at least 2 and at most 8. Two per core was tried
    on the 2-core CI machine: the end-to-end tests are CPU-bound (Chromium, ffmpeg, the containers' storage
    driver), the load stood at 10 to 14, and the long end-to-end tests took about three times the durations
    the last serial CI printed for them (the capability ladder 758 s against 185 s)."""
    return os.environ.get("TEST_WORKERS") or str(min(8, max(2, os.cpu_count() or 1)))


@nox.session(venv_backend="none")
def tests(session: nox.Session) -> None:
    """Lint (ruff) and type check (mypy), both configured in pyproject.toml, then the whole suite, real ffmpeg,
    yt-dlp against loopback, Docker and Chromium included, on parallel workers; tests that share an expensive
    fixture run together on one worker (tests/conftest.py). The 25 slowest steps are listed at the end."""
    session.run(sys.executable, "-m", "ruff", "check", ".")
    session.run(sys.executable, "-m", "mypy")
    session.run(sys.executable, "-m", "pytest", "-n", test_workers(), "--dist", "loadgroup", "--durations", "25",
                *session.posargs)


@nox.session(venv_backend="none")
def fast(session: nox.Session) -> None:
    """Unit tests only: no ffmpeg, network, Docker or browser (`make test-fast`, the edit-test loop)."""
    session.run(sys.executable, "-m", "pytest", "-n", test_workers(), "-m",
                "not media and not network and not docker and not browser", *session.posargs)
