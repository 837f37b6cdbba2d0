"""Records of the attempts stage: limits, retry policy, and `attempt.json`."""

from datetime import datetime
from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from omnidr._records import DiskRecord
from omnidr.images import ImagePackages
from sandbox.models import (
    AnswerSource,
    Budget,
    FinalizationResult,
    ModelPolicy,
    ProviderToolsPolicy,
    ProxyMode,
    SpendCounts,
    TerminationReason,
)


class AttemptReason(str, Enum):
    """How an attempt ended."""

    success = "success"  # report kind: a report at the contract path whose data validates and fills the interface;
    # short-answer kind: a non-empty answer, from research or from the finalization stage
    invalid_report = "invalid_report"  # a report folder whose data does not validate, or an unfilled skeleton (App. F)
    no_report = "no_report"  # the agent exited 0 without a report
    timeout = "timeout"  # killed at the wall-clock limit
    stalled = "stalled"  # killed after --stall-timeout with no model request, no proxy request, no change in /output
    budget_exhausted = "budget_exhausted"  # the gateway refused further requests and no report exists
    agent_error = "agent_error"  # the agent exited non-zero without a report
    infra_error = "infra_error"  # the sandbox itself failed (engine, image, helper container)
    upstream_error = "upstream_error"  # no report, and model requests failed upstream (an outage, not the agent's fault)
    no_answer = "no_answer"  # short-answer kind: neither research nor finalization produced a non-empty answer


# Outcomes that are not the agent's fault: they do not count against attempts_per_task, and a rerun
# of the run folder tries the task again (finished attempts are kept).
NOT_COUNTED = frozenset({AttemptReason.infra_error, AttemptReason.upstream_error})


class RetryPolicy(BaseModel):
    """Which outcomes earn another attempt. Infrastructure failures are always retried."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    retry_on: list[AttemptReason] = Field(
        default_factory=lambda: [AttemptReason.no_report, AttemptReason.invalid_report, AttemptReason.timeout,
                                 AttemptReason.agent_error, AttemptReason.budget_exhausted],
        description="Failure reasons after which the task gets another attempt (up to Budget.attempts_per_task).",
    )
    max_infra_retries: int = Field(
        2, ge=0, description="Extra attempts per invocation allowed for infra_error and upstream_error, beyond attempts_per_task."
    )

    def retries(self, reason: AttemptReason) -> bool:
        """Whether an attempt that ended `reason` earns another (within Budget.attempts_per_task). A `stalled`
        attempt is retried when named, and also whenever `timeout` is: a stall is a wall-clock kill that came
        early, and run folders started before `stalled` existed (whose retry_on cannot name it) keep their run id
        and retry it as they retried timeouts."""
        return reason in self.retry_on or (reason is AttemptReason.stalled and AttemptReason.timeout in self.retry_on)


class SandboxLimits(BaseModel):
    """Container resource limits of the agent."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    cpus: float = Field(2.0, gt=0, description="CPU limit of the agent container, cores.")
    memory_mb: int = Field(4096, ge=64, description="Memory limit of the agent container, MiB (swap disabled).")
    pids: int = Field(512, ge=16, description="Maximum number of processes and threads in the agent container.")
    tmpfs_mb: int = Field(512, ge=16, description="Size of the writable /tmp of the agent container, MiB.")
    output_mb: int = Field(2048, ge=16, description="Largest report folder accepted, MiB (checked after the attempt).")


def default_provider_tools(mode: ProxyMode) -> ProviderToolsPolicy:
    """The provider-side tools policy of a run that names none: `deny` when the web is the snapshot's
    replay corpus (or closed), so that an offline run stays offline; `denylist` on the live web."""
    return ProviderToolsPolicy.every("deny" if mode in ("replay", "deny") else "denylist")


def parse_provider_tools(text: str | None, proxy_mode: ProxyMode = "replay") -> ProviderToolsPolicy | None:
    """`--provider-tools`: `default` (None: the proxy mode's default), `allow`, `deny`, `denylist`, or
    KIND=POLICY,... over web_search, web_fetch and hosted (unnamed kinds keep the mode's default)."""
    from omnidr.errors import UserError

    text = (text or "").strip()
    if text in ("", "default"):
        return None
    try:
        return ProviderToolsPolicy.parse(text, default_provider_tools(proxy_mode))
    except ValueError as exc:
        raise UserError(f"{exc}; e.g. --provider-tools deny or --provider-tools web_search=denylist") from None


# `omnidr eval --web`: the web the agents get, as the egress proxy mode that makes it
WEB_MODES: dict[str, ProxyMode] = {"replay": "replay", "live": "intercept", "record": "record"}


def parse_allow_nets(values) -> tuple[str, ...]:
    """`--allow-net CIDR` (repeatable): ranges off the public internet the egress proxy may reach on purpose (an
    internal mirror); bad input is a one-line UserError."""
    from omnidr.errors import UserError
    from sandbox.egress import parse_network

    try:
        return tuple(dict.fromkeys(str(parse_network(text, "--allow-net")) for text in values))
    except ValueError as exc:
        raise UserError(str(exc)) from None


def parse_search_door(text: str, key_env: str | None, mode: ProxyMode):
    """`--search-door PROVIDER@URL` (and `--search-key-env`) as a SearchDoor; bad input is a one-line UserError.
    In replay the door's answers come from the corpus, so its key need not be set."""
    import os
    from urllib.parse import urlsplit

    from omnidr.errors import UserError
    from sandbox.models import SEARCH_KEY_HEADER, SearchDoor

    provider, sep, url = text.partition("@")
    if not sep or provider not in SEARCH_KEY_HEADER or urlsplit(url).scheme not in ("http", "https") \
            or not urlsplit(url).hostname:
        raise UserError(f"--search-door {text!r}: give searxng@URL or brave@URL, e.g. brave@https://api.search.brave.com")
    key_env = key_env or ("BRAVE_SEARCH_API_KEY" if provider == "brave" else None)
    if key_env and mode != "replay" and not os.environ.get(key_env):
        raise UserError(f"environment variable {key_env} (the {provider} search door's key) is not set; set it or "
                        "name another with --search-key-env")
    if mode in ("log", "deny"):
        raise UserError(f"--search-door needs a proxy mode that reads requests (intercept, record or replay), "
                        f"not {mode}")
    return SearchDoor(provider=provider, base_url=url, key_env=key_env)


class BudgetUse(SpendCounts):
    """What the attempt spent, as counted by the gateway (the source of truth for tokens)."""

    exhausted: str | None = Field(None, description="Name of the first budget spent, if any.")

    @property
    def cost(self) -> float | None:
        """US dollars the attempt cost, None (unpriced) when any answered request could not be priced: a partial
        sum is never shown as the cost."""
        return None if self.unpriced_requests else self.cost_usd


def cost_text(usd: float | None) -> str:
    """Dollars as every table and line shows them: `$0.0123` (four significant decimals), or `unpriced`."""
    if usd is None:
        return "unpriced"
    return f"${usd:.4f}" if usd < 1 else f"${usd:,.2f}"


WEB_LEVEL = "text_web"
"""The lowest capability with the web (paper App. F.5: interface_only < video < text_web < multimodal < full)."""


def web_closed(capability: str | None) -> bool:
    """Whether a system at `capability` has no web: below `text_web` (interface_only, video; calibration's R1,
    "cannot search the web", App. E.4). Its doors close the web whatever the harness is told (see `DoorPolicy`)."""
    from sandbox.skills import LEVELS

    return capability in LEVELS and LEVELS.index(capability) < LEVELS.index(WEB_LEVEL)


class DoorPolicy(BaseModel):
    """What the doors enforced for one attempt: the egress proxy (the agent's web) and the model gateway
    (provider-side tools, the model). Recorded from the doors' own settings, not from what the harness was told."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    capability: str | None = Field(None, description="The system's capability level (paper App. F.5) or input "
                                                     "setting; None: not given (a command harness).")
    web: bool = Field(description="Whether any web was open to the agent: through the proxy (any mode but deny) "
                                  "or at the model provider (provider-side web search or fetch not deny).")
    proxy_mode: ProxyMode = Field(description="Mode of the egress proxy.")
    provider_tools: ProviderToolsPolicy = Field(description="The gateway's provider-side tools policy.")
    model: str = Field(description="The model the gateway enforced (the system's).")
    model_policy: ModelPolicy = Field(description="What the gateway did with a request for another model.")
    denylist_entries: int = Field(0, ge=0, description="Entries of the denylist both doors applied.")
    allow_nets: list[str] = Field(default_factory=list, description="Non-public ranges opened on purpose.")


class AttemptRecord(DiskRecord):
    """`attempt.json`: written last and atomically; its presence marks the attempt as finished."""

    SCHEMA = "omnidr.attempt/1"

    task_id: str = Field(description="Task the attempt was for.")
    attempt: int = Field(ge=1, description="Attempt number within the task, from 1.")
    harness: str = Field(description="Harness name.")
    command: list[str] = Field(description="Command run in the agent container.")
    reason: AttemptReason = Field(description="How the attempt ended.")
    detail: str = Field("", description="Human-readable explanation of the reason.")
    exit_code: int | None = Field(None, description="Exit code of the agent process (None if it never ran or was killed).")
    started_at: datetime = Field(description="Start of the attempt (UTC).")
    ended_at: datetime = Field(description="End of the attempt (UTC).")
    wall_time_s: float = Field(description="Wall time from container start to exit or kill, seconds.")
    budget: Budget = Field(description="The budget the attempt ran under.")
    budget_use: BudgetUse = Field(default_factory=BudgetUse, description="What the gateway counted.")
    network_requests: int = Field(0, description="Lines in network.jsonl.")
    network_blocked: int = Field(0, description="Requests the egress proxy blocked.")
    provider_web_requests: int = Field(0, description="Lines in provider_web.jsonl: searches and fetches the model "
                                                      "provider ran, and provider-side tool requests the gateway refused.")
    provider_web_blocked: int = Field(0, description="Of those, refused by the run's policy or with denylisted "
                                                     "results removed.")
    image_ids: dict[str, str] = Field(default_factory=dict, description="Role (agent, gateway, egress) -> Docker image ID.")
    image_packages: dict[str, ImagePackages] = Field(
        default_factory=dict, description="Role -> every package version the image holds and its drift from the locks."
    )
    limits: SandboxLimits = Field(description="Resource limits of the agent container.")
    proxy_mode: ProxyMode = Field(description="Mode of the egress proxy.")
    doors: DoorPolicy | None = Field(None, description="What the egress proxy and the gateway enforced (None: an "
                                                       "attempt.json written before the field existed).")
    start_wait_s: float = Field(0.0, ge=0, description="Seconds the attempt waited for a start slot (admission "
                                "control, `--max-starts`) before its sandbox began to start.")
    setup_s: float | None = Field(None, ge=0, description="Seconds from the start slot to the agent's start: network, "
                                  "helpers listening, output keeper, agent container (None: the start failed).")
    helpers_served_before: int = Field(
        0, ge=0, description="Attempts the gateway and proxy pair had served (each sealed, then reopened clean) "
        "before this one: 0 when the pair was started for it.")
    report_path: str | None = Field(None, description="Report entry page relative to the attempt folder, if delivered.")
    task_kind: str = Field("report", description="The snapshot's task kind: what the attempt had to deliver.")
    termination: TerminationReason | None = Field(
        None, description="Short-answer kind: why research ended (paper 002, App. C.2.3), recorded apart from whether "
        "an answer was generated and whether it is correct.")
    answer_source: AnswerSource | None = Field(None, description="Short-answer kind: the stage that answered.")
    finalization: FinalizationResult | None = Field(
        None, description="Short-answer kind: the tool-free finalization stage, when research ended without a "
        "complete answer (App. C.2.3).")
    context_handling: str | None = Field(
        None, description="Short-answer kind: how the agent's context was kept within bounds: `paper-compaction` "
        "(the reference agent, App. C.2.2) or `harness-native` (an external harness's own handling).")

    @property
    def delivered(self) -> bool:
        """The attempt ended with its deliverable (reason `success`): a valid report, or a non-empty answer."""
        return self.reason is AttemptReason.success


class Upstream(BaseModel):
    """A model API the gateway forwards one family's requests to. Its key is read from the host
    environment variable `key_env` and passed to the gateway container only; no key is ever stored."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    family: Literal["openai", "anthropic"] = Field(description="API family the gateway serves from it.")
    base_url: str = Field(description="Base URL including /v1, e.g. https://api.anthropic.com/v1.")
    key_env: str | None = Field(None, description="Host environment variable holding its key; None when none is needed.")
    responses_api: bool = Field(True, exclude_if=lambda v: v is True,  # left out when default: run ids stay
                                description="An OpenAI upstream serves /v1/responses too; False for a Chat "
                                "Completions-only server (the gateway then translates a Responses harness to chat).")
    via: str | None = Field(None, exclude=True, description="Where the gateway connects instead, when base_url is on "
                            "the host's loopback (a relay on the gateway's Docker network), for one invocation only: "
                            "never written to run.json; logs and messages keep base_url.")
