"""The system config: one frozen, nested model of what a system is (its agent: harness, capability, model) and
the conditions it runs under (budget, web policy, judge, evaluator).

It is built once, from `omnidr eval`'s or `omnidr run`'s options or from a TOML file (`omnidr eval --config`,
see omnidr.pipeline's `_system_file`), passed whole from the command to `run_system` and on to the attempts, and
recorded whole in the run folder's `run.json` (`RunConfig.system`). How a run is placed, paced and heard (tasks,
parallelism, executor, callbacks, container limits) is not the system: that is `SystemRunOptions`.
"""

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from omnidr._options import OFFLINE_JUDGE
from omnidr.attempts import WEB_MODES
from sandbox.models import Budget, ModelPolicy, ProviderToolsPolicy, ProxyMode, SearchDoor

from ._reference import SCRIPTED_MODEL

EndpointFamily = Literal["openai", "openai-chat", "anthropic"]
"""The API family of a model endpoint: `openai-chat` is an OpenAI-compatible server without /v1/responses."""
WebMode = Literal["replay", "live", "record", "log", "deny"]
"""The agents' web: replay (the snapshot's corpus), live (through the intercepting proxy), record (live, saved as a
corpus); `omnidr run` also has log (connections logged, not read) and deny (no web)."""
PROXY_MODES: dict[str, ProxyMode] = {**WEB_MODES, "log": "log", "deny": "deny"}
"""The egress proxy mode that makes each web mode (`omnidr eval --web`'s three, and `omnidr run`'s two more)."""


class Endpoint(BaseModel):
    """A model (or judge) and where it is served."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    spec: str = Field(description="The spelling the user gave.")
    name: str = Field(description="Model name sent with each request.")
    base_url: str | None = Field(description="OpenAI- or Anthropic-compatible base URL; None for the offline stand-ins.")
    key_env: str | None = Field(description="Environment variable holding the key; None when no key is needed.")
    family: EndpointFamily | None = Field(
        "openai", description="API the endpoint speaks: openai (Chat Completions and Responses), openai-chat "
        "(Chat Completions only), anthropic (Messages); None: the harness's own (the plain scripted model).")

    @property
    def offline(self) -> bool:
        return self.base_url is None

    @property
    def slug(self) -> str:
        if self.offline:
            return self.spec
        return re.sub(r"[^a-z0-9.]+", "-", self.name.lower()).strip("-") or "model"

    @classmethod
    def scripted(cls, family: EndpointFamily | None = None, name: str = SCRIPTED_MODEL) -> "Endpoint":
        """The offline scripted model (speaking `family`'s API; None: the harness's own)."""
        return cls(spec="scripted" + (f"-{family}" if family else ""), name=name, base_url=None, key_env=None,
                   family=family)

    @classmethod
    def served(cls, name: str, base_url: str, key_env: str | None = None,
               family: EndpointFamily | None = None) -> "Endpoint":
        """The model `name` at `base_url` (an API of `family`; None: the harness's own), its key in `key_env`."""
        return cls(spec=f"{name}@{base_url}", name=name, base_url=base_url.rstrip("/"), key_env=key_env, family=family)


def offline_judge() -> Endpoint:
    """The offline lexical judge (no endpoint, no key): every command's default."""
    return Endpoint(spec=OFFLINE_JUDGE, name="lexical-baseline", base_url=None, key_env=None, family="openai")


class SystemSpec(BaseModel):
    """The agent of a system: harness x capability x model. `brief` adds the task's evidence brief to the instruction:
    behavioural calibration's R3 (App. E.4), never a leaderboard configuration. The command harness runs `image` with
    `command`."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    harness: str = Field(description="Harness name (omnidr.harness.HARNESSES).")
    capability: str = Field("full", description="Capability level (paper App. F.5), or the direct harness's input "
                            "setting.")
    model: Endpoint = Field(default_factory=Endpoint.scripted, description="The model and where it is served.")
    brief: bool = Field(False, description="Append the task's evidence brief to the instruction (calibration's R3).")
    image: str | None = Field(None, description="The command harness's agent image; None: the harness's own image.")
    command: tuple[str, ...] = Field((), description="The command harness's agent command.")

    @property
    def setting(self) -> str:
        """The capability, with `+brief` when the evidence brief is given."""
        return self.capability + ("+brief" if self.brief else "")

    @property
    def label(self) -> str:
        return f"{self.harness}-{self.capability}{'-brief' if self.brief else ''}-{self.model.slug}"

    @property
    def translation(self) -> str | None:
        """The gateway's API translation between the harness and the model's endpoint, if any."""
        from ._registry import harness_info

        return None if self.harness == "command" else harness_info(self.harness).translation(self.model.family)


class WebPolicy(BaseModel):
    """The web a system's agents get and the doors' settings for it."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    mode: WebMode = Field("replay", description="replay (the snapshot's corpus, offline), live (the web through the "
                          "logging proxy, denylist applied), record (live, saved as a corpus), log or deny.")
    search_door: SearchDoor | None = Field(
        None, description="A search provider the research skills query through the egress proxy (which holds its "
        "key); None: the offline index of the snapshot's corpus.")
    provider_tools: ProviderToolsPolicy | None = Field(
        None, description="Provider-side tools (web search and fetch run by the model provider); None: the mode's "
        "default (deny when replayed or closed, denylist on the live web).")
    denylist: tuple[str, ...] = Field((), description="Hosts (or host/path) the proxy answers 403, besides the "
                                      "benchmark's release hosts.")
    allow_nets: tuple[str, ...] = Field((), description="Ranges off the public internet (CIDR) the proxy may reach.")
    upstream_ca: tuple[Path, ...] = Field((), description="Extra CA certificates (PEM files) the proxy trusts on the "
                                          "live web.")
    outside_network: str | None = Field(None, description="Docker network the gateway and the proxy reach out on "
                                        "(None: bridge).")
    model_policy: ModelPolicy = Field("rewrite", description="What the gateway does with a request naming another "
                                      "model: rewrite it, refuse it, or allow it.")

    @property
    def proxy_mode(self) -> ProxyMode:
        return PROXY_MODES[self.mode]

    @classmethod
    def on_proxy(cls, proxy_mode: str, **fields) -> "WebPolicy":
        """The policy whose web the egress proxy mode `proxy_mode` makes (`omnidr run --proxy-mode`)."""
        modes: dict[str, str] = {v: k for k, v in PROXY_MODES.items()}
        return cls(mode=modes.get(proxy_mode, proxy_mode), **fields)

    @property
    def tools_policy(self) -> ProviderToolsPolicy:
        """The provider-side tools policy the attempts run under (the mode's default when none is named)."""
        from omnidr.attempts import default_provider_tools

        return self.provider_tools or default_provider_tools(self.proxy_mode)


class SystemConfig(BaseModel):
    """One system and the conditions it runs under. Frozen: a stage reads its settings from it and never changes
    them; a variant is a `model_copy(update=...)`."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    agent: SystemSpec = Field(description="Harness, capability and model.")
    budget: Budget = Field(default_factory=Budget, description="Per-attempt budget.")
    budget_label: str = Field("default", description="How the budget was given (`--budget`'s spelling); `default`: "
                              "the snapshot's protocol budget, else Budget()'s defaults.")
    web: WebPolicy = Field(default_factory=WebPolicy, description="The agents' web and its doors.")
    judge: Endpoint = Field(default_factory=offline_judge, description="Judge of the J atoms (no key; only the "
                            "variable that holds it).")
    evaluator: Literal["docker", "host"] = Field("docker", description="Where scores are computed: the evaluator "
                                                 "image, or this machine (development).")
