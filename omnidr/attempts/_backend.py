"""The sandbox backend interface: what the attempt lifecycle asks of the engine that runs an attempt's agent.

The lifecycle (`_lifecycle`: limits, wall clock, stall, retries, records, status and reason) talks to a backend
through these two protocols only; Docker (`_docker`) is the first implementation, and another engine is another
module registered by name. Inspect AI's sandbox environments (`util/_sandbox/environment.py`: exec, files,
per-sample init and cleanup) and Harbor's environments (`start`, `exec`, `download_dir`, `stop`, chosen by a
factory from a type name) are the models.

An attempt's sandbox holds the agent and its two doors, the model gateway and the egress proxy: the agent
reaches a model and the web through them alone. The doors write their logs into the attempt folder on the host
(`AttemptPaths.logs`: gateway.jsonl, gateway_state.json, network.jsonl, provider_web.jsonl) while the agent runs;
the lifecycle reads them there (stall, budget use, records).
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import requests

from omnidr.errors import UserError
from omnidr.images import ImagePackages
from omnidr.paths import AttemptPaths

from ._contract import AgentContext, Harness
from ._spec import AttemptSpec


def one_line(exc: BaseException, limit: int = 300) -> str:
    """An exception as one line of a record: its type and its first line, cut to `limit` characters."""
    text = (str(exc).strip().splitlines() or [""])[0]
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


def direct_session() -> requests.Session:
    """A session that never uses the environment's proxy, netrc or CA bundle: the controller's calls to its helpers."""
    session = requests.Session()
    session.trust_env = False  # no proxy, netrc or CA bundle from the environment
    return session


class SandboxFault(RuntimeError):
    """The engine failed under the attempt (it went away, a part of the sandbox was removed from outside). Its
    text is the one line the attempt record gives as the infra_error's detail."""


@dataclass(frozen=True)
class ExecResult:
    """What a command run in the sandbox gave."""

    returncode: int
    stdout: bytes


@dataclass(frozen=True)
class DoorControl:
    """Where the controller (this process) reaches the model gateway's control endpoints (`/_gateway/...`), and
    the admin token they want. Never given to the agent."""

    gateway_url: str
    admin_token: str


class Sandbox(Protocol):
    """One attempt's sandbox, made by a backend for one `AttemptSpec` and used once: `start`, `wait` (and `kill`),
    `copy_out`, `end_doors`, `stop`. Every method but `stop` may raise `SandboxFault`; `start` may also raise
    RuntimeError or OSError (a missing image, a key not set, a door that did not listen): the attempt then ends
    infra_error with that text."""

    @property
    def context(self) -> AgentContext:
        """What the agent sees: its paths, the two doors' URLs, its token and model."""
        ...

    @property
    def control(self) -> DoorControl:
        """Where the controller reaches the model gateway (valid once `start` returned)."""
        ...

    @property
    def served_before(self) -> int:
        """Attempts the doors served before this one (reused doors), 0 for doors of its own."""
        ...

    def prepare(self, dirs: AttemptPaths) -> None:
        """Make the attempt folder ready for the sandbox's parts (before any waiting for a start slot)."""

    def images(self) -> tuple[dict[str, str], dict[str, ImagePackages]]:
        """Role (agent, gateway, egress) -> the image ID that runs it, and -> the package versions it records."""
        ...

    def start(self, dirs: AttemptPaths, command: list[str]) -> None:
        """Make the sandbox (the doors, the agent's writable output) and start the agent with `command`."""

    def wait(self, timeout_s: float) -> int | None:
        """The agent's exit code once it exited, None when it still runs after `timeout_s`."""
        ...

    def kill(self) -> None:
        """Kill the agent (nothing when it exited meanwhile)."""

    def exec(self, argv: list[str]) -> ExecResult:
        """Run `argv` beside the agent, where its output folder (`context.output_dir`) is readable."""
        ...

    def copy_out(self, dirs: AttemptPaths) -> str | None:
        """Once the agent stopped: its console output into `dirs.agent_log` and its output folder into
        `dirs.output`. Returns what failed (the infra_error's detail), None when all was copied."""
        ...

    def end_doors(self, dirs: AttemptPaths) -> None:
        """Stop the doors (or seal reused ones) and keep their console logs; their summaries are then final."""

    def stop(self) -> None:
        """Remove everything the sandbox made (also after a failed `start`)."""


class SandboxBackend(Protocol):
    """An engine that runs attempts' sandboxes. One instance per run on one node (`for_run`), shared by its
    attempts' threads."""

    name: str

    def for_run(self, attempts_root: Path) -> "SandboxBackend":
        """The backend for the attempts under `attempts_root`, which may share parts between them; `close` it when
        they are over."""
        ...

    def close(self) -> None:
        """The run is over on this node: remove what its attempts shared."""

    def sandbox(self, spec: AttemptSpec, harness: Harness) -> Sandbox:
        """The sandbox of one attempt (nothing is made before its `start`)."""
        ...

    def cleanup_run(self, run_id: str, mine: bool = False, run_dir: Path | None = None) -> int:
        """Remove what attempts of `run_id` (of `run_dir`) left behind: a driver that is gone, or with `mine` this
        driver (Ctrl-C). Returns how many objects were removed."""
        ...

    def host_address(self, network: str) -> str:
        """Where the doors on `network` reach a server of this process (the run's shared upstream limit)."""
        ...


BackendFactory = Callable[[Any], SandboxBackend]
"""Makes a backend from an engine client (None: the backend connects itself)."""


def _docker(client: Any) -> SandboxBackend:
    from ._docker import DockerBackend

    return DockerBackend(client)


DEFAULT_BACKEND = "docker"
_BACKENDS: dict[str, BackendFactory] = {DEFAULT_BACKEND: _docker}


def register_backend(name: str, factory: BackendFactory) -> None:
    """Make a backend choosable by `name` (a module of another engine registers itself on import)."""
    _BACKENDS[name] = factory


def backend_names() -> list[str]:
    return sorted(_BACKENDS)


def sandbox_backend(name: str = DEFAULT_BACKEND, client: Any = None) -> SandboxBackend:
    """The backend registered as `name`, made with `client`; an unknown name is a one-line UserError."""
    factory = _BACKENDS.get(name)
    if factory is None:
        raise UserError(f"unknown sandbox backend {name!r}; choose one of {', '.join(backend_names())}")
    return factory(client)
