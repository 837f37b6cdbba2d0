"""Task runner sessions. `make test` calls `nox -s tests` from the project venv."""

import sys

import nox

nox.options.default_venv_backend = "none"
nox.options.sessions = ["tests"]


@nox.session(venv_backend="none")
def tests(session: nox.Session) -> None:
    """Lint (ruff) and type check (mypy), both configured in pyproject.toml, then the whole suite, real ffmpeg,
    yt-dlp against loopback, Docker and Chromium included."""
    session.run(sys.executable, "-m", "ruff", "check", ".")
    session.run(sys.executable, "-m", "mypy")
    session.run(sys.executable, "-m", "pytest", *session.posargs)


@nox.session(venv_backend="none")
def fast(session: nox.Session) -> None:
    """Unit tests only: no ffmpeg, network, Docker or browser."""
    session.run(sys.executable, "-m", "pytest", "-m", "not media and not network and not docker and not browser",
                *session.posargs)
