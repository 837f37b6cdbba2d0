"""Reused helper pairs: a worker keeps its model gateway and egress proxy across attempts, never sharing them.

Booting the two helpers is most of an attempt's fixed cost on a small machine (two Python services, CPU-bound:
issue 17 measured 1.1 s for the proxy alone to listen). A `HelperPool` keeps the pairs of one run that ended an
attempt cleanly, and hands one to the next attempt of the same run. The rules:

- A pair serves one attempt at a time: it is taken out of the pool for the attempt and given back after it.
- It is attached to each attempt's own fresh internal network. It leaves that network (which is then removed)
  while the next attempt opens, at once with joining the next attempt's network, and before that attempt's
  agent starts; so the end of an attempt waits for neither.
- Between two attempts the controller seals the first (`POST /_gateway/seal`, `POST .../seal` to the proxy:
  the token is refused, in-flight work ends, the logs are closed) and opens the next (a new agent token, zero
  budget counters, new log files in the new attempt's folder, a new CA made by the proxy). The opening is
  checked before the agent starts: the gateway's answer must name the new attempt with zero counts, and the
  proxy's CA on disk must be the one it reports, different from the previous attempt's.
- A pair that failed anything (a seal, an opening, a check, a container that stopped) is removed, never reused.
- Record mode writes each attempt's corpus into that attempt's folder from the proxy's start: its pairs are
  never reused.

The helpers of a pool see the run's `attempts/` folder (bind-mounted at the same path), so that each attempt's
logs and CA are written straight into that attempt's folder, as with a pair of its own.
"""

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import requests
from docker.errors import APIError, DockerException, NotFound
from pydantic import BaseModel, ValidationError

from omnidr.benchmark import sha256_file
from omnidr.errors import UserError
from sandbox.egress import CONTROL_HOST, GenerationOpened, GenerationSealed, OpenGeneration
from sandbox.models import AttemptOpen, ScopeReport

from ._backend import direct_session

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)
EGRESS_ADMIN_ENV = "OMNIDR_EGRESS_ADMIN_TOKEN"
CONTROL_TIMEOUT_S = 30.0
SLOW_CONTROL_S = 5.0  # a control call slower than this is logged
FRESH_HELPERS_ENV = "OMNIDR_FRESH_HELPERS"


def reuse_helpers() -> bool:
    """Whether a run's attempts reuse helper pairs: the default; `OMNIDR_FRESH_HELPERS=1` gives every attempt a
    gateway and a proxy of its own (the behaviour before pairs were reused, e.g. to rule reuse out)."""
    value = os.environ.get(FRESH_HELPERS_ENV, "").strip().lower()
    if value in ("", "0", "false", "no"):
        return True
    if value in ("1", "true", "yes"):
        return False
    raise UserError(f"{FRESH_HELPERS_ENV}={value!r}: set it to 1 (a new gateway and proxy for every attempt) or 0 "
                    "(reused pairs, the default), or unset it")


def ca_digest(path: Path) -> str | None:
    """The sha256 of an exported CA certificate, None when there is none (a mode that decrypts nothing)."""
    return sha256_file(path) if path.is_file() else None


class PairFailed(RuntimeError):
    """A reused pair did not seal, open or pass its check: it is removed, and the attempt gets a fresh pair."""


@dataclass(eq=False)
class HelperPair:
    """A gateway and a proxy container that serve one attempt after another."""

    key: tuple
    gateway: object
    proxy: object
    gateway_ip: str  # on the outside network, where the controller reaches them
    proxy_ip: str
    gateway_port: int
    proxy_port: int
    admin_token: str
    generation: str = ""
    ca_sha256: str | None = None
    attempts: int = 0
    sealed: bool = False
    broken: bool = False
    # the network of the attempt it served last: the pair leaves it when the next attempt opens (at once with
    # joining that attempt's network, before its agent starts), so that an attempt's end waits for neither
    stale: list = field(default_factory=list)
    # the controller's own connection to the pair: never through the user's HTTP(S)_PROXY (which would get the
    # admin token and could not reach the pair anyway), only through the pair's own proxy where asked
    http: requests.Session = field(default_factory=lambda: direct_session())
    # networks it has left whose removal failed (the last attempt's agent was still being removed): retried
    unremoved: list = field(default_factory=list)

    # -- the gateway's and the proxy's control endpoints ---------------------------------------------
    def _control(self, helper: str, url: str, body: BaseModel | None, answer_model: type[M],
                 proxies: dict | None = None) -> M:
        t0 = time.monotonic()
        try:
            answer = self.http.post(url, data=body.model_dump_json() if body else None, proxies=proxies,
                                   headers={"Authorization": f"Bearer {self.admin_token}",
                                            "Content-Type": "application/json"}, timeout=CONTROL_TIMEOUT_S)
        except requests.RequestException as exc:
            raise PairFailed(f"the {helper} did not answer {url}: {exc}") from None
        finally:
            if (took := time.monotonic() - t0) > SLOW_CONTROL_S:
                log.warning("the %s took %.1f s to answer %s", helper, took, url)
        if answer.status_code != 200:
            raise PairFailed(f"the {helper} refused {url}: {answer.status_code} {answer.text[:300]}")
        try:
            return answer_model.model_validate_json(answer.text)
        except ValidationError as exc:
            raise PairFailed(f"the {helper}'s answer to {url} is not a {answer_model.__name__}: {exc}") from None

    def _gateway(self, action: str, body: BaseModel | None, answer_model: type[M]) -> M:
        url = f"http://{self.gateway_ip}:{self.gateway_port}/_gateway/{action}"
        return self._control("gateway", url, body, answer_model)

    def _proxy(self, action: str, body: BaseModel | None, answer_model: type[M]) -> M:
        proxies = {"http": f"http://{self.proxy_ip}:{self.proxy_port}"}
        return self._control("egress proxy", f"http://{CONTROL_HOST}/{action}", body, answer_model, proxies)

    def seal(self) -> ScopeReport:
        """End the attempt the pair serves: the gateway's final report, once both are sealed."""
        try:
            report = self._gateway("seal", None, ScopeReport)
            self._proxy("seal", None, GenerationSealed)
        except PairFailed:
            self.broken = True
            raise
        self.sealed = True
        return report

    def open(self, gateway: AttemptOpen, proxy: OpenGeneration, ca_file: Path | None) -> None:
        """Serve the next attempt, and check that everything of the last one is gone before its agent starts."""
        generation = gateway.generation
        if not self.sealed:
            self.broken = True
            raise PairFailed(f"attempt {self.generation} of this pair was not sealed")
        try:
            report = self._gateway("open", gateway, ScopeReport)
            state = report.state
            if report.generation != generation or report.sealed or report.in_flight or any(
                    (state.requests, state.total_tokens, state.tool_calls, state.failed_requests)):
                raise PairFailed(f"the gateway's new attempt is not clean: {report.model_dump_json()}")
            opened = self._proxy("open", proxy, GenerationOpened)
            if opened.generation != proxy.generation:
                raise PairFailed(f"the egress proxy opened {opened.generation!r}, not {proxy.generation!r}")
            digest = opened.ca_sha256
            if ca_file is not None:
                on_disk = ca_digest(ca_file)
                if digest is None or digest != on_disk or digest == self.ca_sha256:
                    raise PairFailed("the egress proxy's CA for the new attempt is missing, not the one it reports, "
                                     "or the last attempt's")
            self.ca_sha256 = digest
        except (PairFailed, OSError, ValueError) as exc:
            self.broken = True
            raise PairFailed(str(exc)) from exc
        self.generation, self.sealed = generation, False
        self.attempts += 1

    def leave_later(self, networks: list) -> None:
        """The attempt is over: its networks are left (and removed) when the next attempt opens, or with the pair.
        Added to what the pair has still to leave: an attempt whose setup failed before its network was made (so
        `networks` is empty) must not make the pair forget the network of the attempt before it."""
        self.stale = self.stale + [n for n in networks if n not in self.stale]

    def drop_stale(self) -> None:
        """Leave the last attempt's network and remove it; the pair is then on no attempt's network."""
        for net in self.stale:
            for container in (self.gateway, self.proxy):
                try:
                    net.disconnect(container, force=True)
                except NotFound:
                    pass  # not attached (its setup had failed), or the network is gone
                except (APIError, requests.RequestException) as exc:
                    self.broken = True
                    raise PairFailed(f"it could not leave the last attempt's network: {exc}") from None
        self.unremoved, self.stale = self.unremoved + self.stale, []
        self._remove_networks()

    def _remove_networks(self) -> None:
        kept = []
        for net in self.unremoved:
            try:
                net.remove()
            except NotFound:
                pass
            except APIError:
                kept.append(net)  # still has an endpoint: the ended attempt's agent is being removed
        self.unremoved = kept

    def alive(self) -> bool:
        try:
            for container in (self.gateway, self.proxy):
                container.reload()  # type: ignore[attr-defined]
                if container.status != "running":  # type: ignore[attr-defined]
                    return False
        except (DockerException, requests.RequestException):
            return False
        return True

    def remove(self, networks: bool = True) -> None:
        """Remove the two containers and (unless `networks` is False) the last attempt's network."""
        self.http.close()
        for container in (self.gateway, self.proxy):
            try:
                container.remove(force=True)  # type: ignore[attr-defined]
            except (APIError, NotFound):
                pass
        if networks:
            self.remove_stale()

    def remove_stale(self) -> None:
        """Remove the networks the pair was on or left (once it is removed, and their agents are gone)."""
        self.unremoved, self.stale = self.unremoved + self.stale, []
        self._remove_networks()
        self.unremoved = []  # what still fails is the run's leftover: cleanup_run removes it by label


class HelperPool:
    """The idle helper pairs of one run on one Docker engine, for attempts whose folders are under `root`."""

    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self._idle: list[HelperPair] = []
        self._all: list[HelperPair] = []
        self._lock = threading.Lock()
        self._cleanups: list[threading.Thread] = []
        self.started = self.reused = self.discarded = 0
        self.closed = False

    def later(self, work) -> None:
        """Run an ended attempt's cleanup (its agent, keeper and volume) in the background; `close` waits for it."""
        thread = threading.Thread(target=work, daemon=True)
        with self._lock:
            self._cleanups = [t for t in self._cleanups if t.is_alive()] + [thread]
        thread.start()

    def take(self, key: tuple) -> HelperPair | None:
        """An idle pair made for the same settings, taken out of the pool; None if there is none."""
        with self._lock:
            for pair in self._idle:
                if pair.key == key:
                    self._idle.remove(pair)
                    self.reused += 1
                    return pair
        return None

    def add(self, pair: HelperPair) -> None:
        """A pair this pool owns from now on (it serves an attempt now). After `close` nothing is pooled any more:
        the pair is discarded when its attempt gives it back."""
        with self._lock:
            self._all.append(pair)
            self.started += 1
            if self.closed:
                pair.broken = True  # give_back removes it

    def give_back(self, pair: HelperPair) -> None:
        """After an attempt: an intact, sealed pair waits for the next attempt; any other is removed."""
        if self.closed or pair.broken or not pair.sealed or not pair.alive():
            self.discard(pair)
            return
        with self._lock:
            self._idle.append(pair)

    def discard(self, pair: HelperPair) -> None:
        pair.broken = True
        with self._lock:
            if pair in self._idle:
                self._idle.remove(pair)
            if pair in self._all:
                self._all.remove(pair)
                self.discarded += 1
        pair.remove()

    def close(self) -> None:
        """Remove every pair (the run is over), while the attempts' cleanups end; then the networks the pairs
        were on last (their agents are gone by then)."""
        with self._lock:
            self.closed = True
            cleanups, self._cleanups = self._cleanups, []
            pairs, self._all, self._idle = self._all, [], []
        threads = [threading.Thread(target=p.remove, args=(False,), daemon=True) for p in pairs]
        for thread in threads:
            thread.start()
        for thread in cleanups + threads:
            thread.join()
        for pair in pairs:
            pair.remove_stale()
        if pairs:
            log.info("helper pairs: %d started, %d reuses, %d discarded", self.started, self.reused, self.discarded)
