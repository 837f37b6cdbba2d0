"""The gateway's own configuration: where it listens, its upstreams and their real keys, the budget, its files.

The controller writes this file (JSON, the dump of `GatewayConfig`) next to the gateway container and
never into the agent container: it holds the real keys and the admin token.
"""

import json
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_serializer, model_validator

from sandbox.egress import parse_entry
from sandbox.models import PROVIDER_WEB_LOG, Budget, ModelPolicy, ModelPricing, ProviderToolsPolicy


class ConfigError(Exception):
    """A configuration the gateway cannot start with; the message says what to fix."""


class UpstreamConfig(BaseModel):
    """One real model API the gateway forwards to."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    base_url: str = Field(
        description="The upstream's equivalent of the gateway's `/v1`: the gateway's path after `/v1` is appended "
        "to it, e.g. `https://api.openai.com/v1`, `https://api.anthropic.com/v1`, `http://vllm:8000/v1`."
    )
    api_key: SecretStr | None = Field(
        None, description="The real key, sent upstream as `Authorization: Bearer` (OpenAI) or `x-api-key` (Anthropic)."
    )
    api_key_env: str | None = Field(
        None, description="Name of an environment variable of the gateway process that holds the real key instead."
    )
    extra_headers: dict[str, str] = Field(
        default_factory=dict, description="Headers added to every upstream request (e.g. `OpenAI-Organization`)."
    )
    responses_api: bool = Field(
        True, description="An OpenAI upstream serves `/responses` too (OpenAI, recent vLLM). False: a Chat "
        "Completions-only server; the gateway translates a Responses harness (Codex) to Chat Completions.",
    )
    display_url: str | None = Field(
        None, description="The URL the user gave, when `base_url` is another way to it (a relay to the host's "
        "loopback); logs and messages show this one, with `base_url` as `upstream_via`."
    )

    @property
    def shown_url(self) -> str:
        return self.display_url or self.base_url

    @model_validator(mode="after")
    def _one_key_source(self) -> "UpstreamConfig":
        if self.api_key is not None and self.api_key_env is not None:
            raise ValueError("give api_key or api_key_env, not both")
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {self.base_url!r}")
        return self

    def resolve_key(self, name: str) -> str | None:
        """The real key (None for a keyless upstream such as a local vLLM); reads `api_key_env` now."""
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        if self.api_key_env is None:
            return None
        value = os.environ.get(self.api_key_env)
        if not value:
            raise ConfigError(f"environment variable {self.api_key_env} (upstreams.{name}.api_key_env) is not set")
        return value


class Upstreams(BaseModel):
    """The real APIs, by family. A family left out answers 404 on its routes."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    openai: UpstreamConfig | None = Field(
        None, description="Serves /v1/chat/completions, /v1/responses and /v1/models (OpenAI-compatible)."
    )
    anthropic: UpstreamConfig | None = Field(
        None, description="Serves /v1/messages, /v1/messages/count_tokens and Anthropic-style /v1/models."
    )


class SharedLimitConfig(BaseModel):
    """Where the run's shared upstream limit is asked (`omnidr.attempts._limiter`), and the token it wants."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    url: str = Field(description="The limiter's base URL, on the helpers' outside network.")
    token: SecretStr = Field(min_length=8, description="Bearer token of the limiter (redacted from the logs).")

    @field_serializer("token", when_used="json")
    def _reveal(self, token: SecretStr) -> str:
        return token.get_secret_value()


class GatewayConfig(BaseModel):
    """Everything one gateway process needs for one attempt. Frozen: it does not change while the agent runs."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    host: str = Field("0.0.0.0", description="Address to listen on; all interfaces so the agent container can reach it.")
    port: int = Field(8080, ge=0, le=65535, description="TCP port to listen on; 0 picks a free one (printed at start).")
    agent_token: SecretStr = Field(
        min_length=8,
        description="The per-attempt dummy token the agent presents (`Authorization: Bearer` or `x-api-key`).",
    )
    admin_token: SecretStr = Field(
        min_length=8, description="Token of the controller for GET /_gateway/state (`Authorization: Bearer`)."
    )
    upstreams: Upstreams = Field(description="The real model APIs and their keys.")
    budget: Budget = Field(default_factory=Budget, description="What the attempt may spend; enforced per request.")
    log_path: Path = Field(description="gateway.jsonl: one `GatewayExchange` per line, appended and flushed.")
    summary_path: Path | None = Field(
        None,
        description="Where `GatewayState` is written (after every exchange and at shutdown); "
        "default `gateway_state.json` beside the log.",
    )
    retry_backoff_s: float = Field(
        1.0, ge=0, description="First wait before re-sending a failed upstream request, seconds; doubles each retry."
    )
    retry_backoff_max_s: float = Field(30.0, ge=0, description="Longest wait between two upstream tries, seconds.")
    retry_after_max_s: float = Field(
        60.0, ge=0, description="An upstream Retry-After up to this many seconds is honoured; a longer one is ignored."
    )
    seal_grace_s: float = Field(
        10.0, ge=0, description="When the controller seals an attempt, how long its exchanges still in flight get to "
        "end before its logs are closed, seconds.")
    connect_timeout_s: float = Field(30.0, gt=0, description="Time to open a connection to the upstream, seconds.")
    read_timeout_s: float = Field(
        600.0, gt=0, description="Longest silence while waiting for upstream bytes (headers or body), seconds."
    )
    max_request_mb: float = Field(
        256.0, gt=0, description="Largest request body accepted from the agent, MiB (video frames are big)."
    )
    trust_env: bool = Field(False, description="Reach upstreams through HTTP(S)_PROXY from the environment.")
    provider_tools: ProviderToolsPolicy = Field(
        default_factory=lambda: ProviderToolsPolicy.every("allow"),
        description="What to do with provider-side tools (web search, web fetch, hosted tools) per kind; "
        "the sandbox always sets it (deny in replay runs). Standalone default: allow, logged.",
    )
    denylist: list[str] = Field(
        default_factory=list,
        description="The run's denylist (the egress proxy's entries: `host` or `host/path`), put into provider "
        "tools' domain filters and applied to their results under the `denylist` policy.",
    )
    agent_address: str | None = Field(
        None, description="The only client address whose model requests are served (the attempt's agent); any "
        "other gets 403, token or not. None: any client with the token (a standalone gateway).")
    model: str | None = Field(
        None, description="The model the system is scored as (the run's model); None: no model is enforced.")
    model_policy: ModelPolicy = Field(
        "allow", description="What a model request naming another model than `model` gets: `rewrite` (sent with "
        "`model`; the sandbox's default), `refuse` (400 model_refused) or `allow` (sent as named). A provider's "
        "search model is refused whatever this says while provider-side web search is deny.")
    upstream_limit: SharedLimitConfig | None = Field(
        None, description="The run's shared concurrency limit per upstream, asked before each upstream request; "
        "None: this gateway sends as it is asked.")
    pricing: ModelPricing | None = Field(
        None, description="The run's price for its model, resolved by the host when the run started: every exchange "
        "is priced at it (`cost_usd`), and a `max_cost_usd` budget needs it. None: exchanges are unpriced.")
    web_log_path: Path | None = Field(
        None, description="provider_web.jsonl: one `ProviderEvent` per provider-side search or fetch; default "
        "beside the log.",
    )

    @model_validator(mode="after")
    def _check(self) -> "GatewayConfig":
        if self.agent_token.get_secret_value() == self.admin_token.get_secret_value():
            raise ValueError("agent_token and admin_token must differ")
        if self.upstreams.openai is None and self.upstreams.anthropic is None:
            raise ValueError("configure at least one upstream (upstreams.openai or upstreams.anthropic)")
        if self.budget.max_cost_usd is not None and self.pricing is None:
            raise ValueError("budget.max_cost_usd needs a price for the model: set `pricing`")
        for entry in self.denylist:
            parse_entry(entry)  # a DenylistError (a ValueError) names the entry
        return self

    @property
    def state_path(self) -> Path:
        """Where the summary `GatewayState` goes."""
        return self.summary_path if self.summary_path is not None else self.log_path.with_name("gateway_state.json")

    @property
    def provider_web_path(self) -> Path:
        """Where provider-side searches and fetches are logged."""
        return self.web_log_path if self.web_log_path is not None else self.log_path.with_name(PROVIDER_WEB_LOG)


def load_config(path: Path) -> GatewayConfig:
    """Read and check a config file; every problem becomes one `ConfigError` line."""
    try:
        text = Path(path).read_text("utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read gateway config {path}: {exc.strerror or exc}") from None
    try:
        config = GatewayConfig.model_validate(json.loads(text))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"gateway config {path} is not JSON: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"gateway config {path} is invalid: {problems}") from None
    for name in ("openai", "anthropic"):
        upstream = getattr(config.upstreams, name)
        if upstream is not None:
            upstream.resolve_key(name)  # fail at start, not on the first request
    return config
