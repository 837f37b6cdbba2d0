"""The reference harness: the repo's own video-research agent (`sandbox/reference_agent`) in the
`reference` image, run over snapshot tasks by `run_system` like every harness, with the scripted model
(`sandbox/scripted_model`) standing in for a model API when none is given (offline demo)."""

import secrets
import socket
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from omnidr._lock import machine_lock
from omnidr.attempts import AgentContext
from sandbox.skills import LEVELS

CAPABILITIES = LEVELS  # paper App. F.5: the ladder, defined with the skills (sandbox/skills/_manifest.py)
NATIVE_LOG = "reference.jsonl"
SCRIPTED_MODEL = "scripted-demo"
SCRIPTED_NETWORK = "omnidr-scripted-model"
SCRIPTED_PORT = 9000
SCRIPTED_NOTE = "no model endpoint given: using the scripted model (offline demo)"
LABEL_SCRIPTED = "org.omnidr.scripted-model"


def workflow_args(hp) -> tuple[str, ...]:
    """The reference workflow's hyperparameters (paper App. D.3, the snapshot's hyperparameters.json) as
    agent options: T_win, the audiovisual reading window, R_max, the validation-and-repair rounds, and
    the evidence budgets B_web, B_video, B_doc and B_anchor its checks aim for."""
    from omnidr.benchmark import Hyperparameters

    from ._skills import budgets_text

    hp = hp or Hyperparameters()
    return ("--window-s", f"{hp.window_s:g}", "--max-repairs", str(hp.max_repair_rounds), "--budgets",
            budgets_text(hp))


def reference_argv(capability: str, model: str, extra: tuple[str, ...] = ()) -> list[str]:
    return ["python", "-m", "sandbox.reference_agent", "--capability", capability, "--model", model, *extra]


def search_index(pages, denylist: list[str] | tuple[str, ...] = ()) -> list[dict]:
    """The offline search index handed to the agent: url, title and content type of each corpus page,
    without pages on denylisted hosts (the proxy would refuse them anyway) and pages the corpus marks unindexed
    (a form's result page: reached by submitting the form, not by a search)."""
    def denied(url: str) -> bool:
        host = (urlsplit(url).hostname or "").lower()
        return any(host == d.lower() or host.endswith("." + d.lower()) for d in denylist)

    return [{"url": p.url, "title": p.title, "content_type": p.content_type} for p in pages
            if p.indexed and not denied(p.url)]


class ReferenceHarness:
    """Harness adapter of the reference agent. `capability` is one of the five cumulative levels of
    paper App. F.5; it is passed on the command line and recorded by the agent in
    `harness-logs/config.json`."""

    name = "reference"

    def __init__(self, capability: str = "full", image: str | None = None, search: list[dict] | None = None,
                 extra_args: tuple[str, ...] = ()):
        if capability not in CAPABILITIES:
            raise ValueError(f"unknown capability {capability!r}; choose one of {', '.join(CAPABILITIES)}")
        self.capability = capability
        self._image = image
        self.search = list(search or [])
        self.extra_args = tuple(extra_args)

    def image(self) -> str:
        if self._image is None:
            from omnidr.images import build_images

            built = build_images(["reference"])[-1]
            if not built.tag:
                raise RuntimeError(f"the reference image cannot be built: {built.reason}")
            self._image = built.tag
        return self._image

    def command(self, ctx: AgentContext) -> list[str]:
        return reference_argv(self.capability, ctx.model, self.extra_args)

    def environment(self, ctx: AgentContext) -> dict[str, str]:
        from ._skills import index_environment

        return {"OMNIDR_CAPABILITY": self.capability, **index_environment(self.search)}

    def native_logs(self, ctx: AgentContext) -> list[str]:
        return [f"{ctx.logs_dir}/{NATIVE_LOG}", f"{ctx.logs_dir}/config.json", f"{ctx.logs_dir}/evidence.json"]


# ---- the scripted model container -----------------------------------------------------------------

@dataclass
class ScriptedModel:
    """A running scripted-model container, reachable as http://upstream:9000/v1 on `network`."""

    container: Any  # docker's Container
    network: str
    base_url: str
    created_network: Any | None = None  # docker's Network

    def stop(self) -> None:
        try:
            self.container.remove(force=True)
        except Exception:  # already gone
            pass
        if self.created_network is not None:
            with _network_lock():
                try:
                    self.created_network.reload()
                    if not self.created_network.attrs.get("Containers"):
                        self.created_network.remove()
                except Exception:
                    pass


def _network_lock() -> AbstractContextManager[None]:
    """Held while the shared scripted-model network is found or created and joined, and while it is
    removed: Docker lets two runs started at once create two networks of one name, after which neither
    can use it ("network ... is ambiguous")."""
    return machine_lock(Path.home() / ".cache" / "omnidr" / "scripted-network.lock")


def start_scripted_model(client, network: str | None = None, image: str | None = None, alias: str | None = None,
                         scripts_dir: Path | None = None, timeout_s: float = 30.0, api: str = "all",
                         labels: dict[str, str] | None = None) -> ScriptedModel:
    """Start the scripted model (in the gateway image, which carries the `sandbox` package) on `network`
    (default: a shared bridge network, created if missing and removed by the last stop) under the DNS
    alias `alias` (default `upstream`, or `upstream-<api>` when it speaks one `api` only: `openai`,
    `openai-chat`, `anthropic`). Scripted models of concurrent runs with the same API answer alike, so
    sharing the alias is harmless. `labels` are added to the container's (the run folder it serves)."""
    alias = alias or ("upstream" if api == "all" else f"upstream-{api}")
    from docker.errors import NotFound

    if image is None:
        from omnidr.images import build_images

        built = build_images(["gateway"])[-1]
        if not built.tag:
            raise RuntimeError(f"the gateway image cannot be built: {built.reason}")
        image = built.tag
    created = None
    net_name = network or SCRIPTED_NETWORK
    command = ["--port", str(SCRIPTED_PORT), "--api", api]
    volumes = {}
    if scripts_dir is not None:
        volumes[str(Path(scripts_dir).resolve())] = {"bind": "/scripts", "mode": "ro"}
        command += ["--scripts", "/scripts"]
    with _network_lock():
        try:
            net = client.networks.get(net_name)
        except NotFound:
            net = client.networks.create(net_name, driver="bridge", labels={LABEL_SCRIPTED: "1"})
            created = net
        if network is None:
            created = net  # ours: removed on stop when nothing else uses it
        container = client.containers.create(
            image, command=command, entrypoint=["python", "-m", "sandbox.scripted_model"],
            name=f"omnidr-scripted-model-{secrets.token_hex(4)}", labels={LABEL_SCRIPTED: "1", **(labels or {})},
            detach=True,
            read_only=True, cap_drop=["ALL"], security_opt=["no-new-privileges"], mem_limit="1g", volumes=volumes,
            network=net_name, networking_config={net_name: client.api.create_endpoint_config(aliases=[alias])},
        )
        model = ScriptedModel(container, net_name, f"http://{alias}:{SCRIPTED_PORT}/v1", created)
        try:
            container.start()  # joined: a concurrent stop no longer finds the network empty
        except Exception:
            container.remove(force=True)
            raise
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            container.reload()
            if container.status in ("exited", "dead"):
                raise RuntimeError("scripted model exited: " + container.logs(tail=5).decode("utf-8", "replace"))
            ip = container.attrs["NetworkSettings"]["Networks"][net_name]["IPAddress"]
            try:
                socket.create_connection((ip, SCRIPTED_PORT), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"scripted model did not listen within {timeout_s:.0f} s") from None
                time.sleep(0.1)
    except Exception:
        model.stop()
        raise
    return model
