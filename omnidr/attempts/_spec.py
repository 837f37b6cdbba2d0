"""What one attempt is given: the task's inputs, the doors' settings and the agent's limits."""

from dataclasses import dataclass, field
from pathlib import Path

from sandbox.models import (
    Budget,
    FinalizeRequest,
    McqQuestion,
    ModelPolicy,
    ModelPricing,
    ProviderToolsPolicy,
    ProxyMode,
    SearchDoor,
)

from ._models import SandboxLimits, Upstream


@dataclass(frozen=True)
class AttemptSpec:
    """Everything one attempt needs besides the harness."""

    run_id: str
    task_id: str
    attempt: int
    folder: Path  # the attempt's artifact folder on the host
    video: Path  # source video on the host
    instruction: str
    contract_dir: Path | None  # the report contract (report kind); None for a kind without one
    model: str
    upstreams: tuple[Upstream, ...]
    budget: Budget
    limits: SandboxLimits
    gateway_image: str
    egress_image: str
    proxy_mode: ProxyMode = "deny"
    replay_dir: Path | None = None  # web corpus served in replay mode
    captions: tuple[Path, ...] = ()  # caption tracks fetched with the video, mounted beside it
    denylist: tuple[str, ...] = ()
    # provider-side tools (searches that run at the model provider): applied and logged by the gateway
    provider_tools: ProviderToolsPolicy = field(default_factory=lambda: ProviderToolsPolicy.every("deny"))
    outside_network: str = "bridge"  # where the gateway and proxy reach the world (or a fake upstream)
    search_door: SearchDoor | None = None  # a search provider the skills reach through the proxy (which holds its key)
    upstream_ca: tuple[Path, ...] = ()  # extra CAs the proxy trusts for the live web's HTTPS (intercept, record)
    allow_nets: tuple[str, ...] = ()  # ranges off the public internet the proxy may reach (--allow-net)
    capability: str | None = None  # the system's capability level; below text_web the caller closed the web
    model_policy: ModelPolicy = "rewrite"  # what the gateway does with a request for another model than `model`
    pricing: ModelPricing | None = None  # the price the gateway charges every exchange at; None: unpriced
    upstream_limit: tuple[str, str] | None = None  # the run's shared upstream limiter (URL, token); None: none
    gateway_backoff_s: float = 1.0
    report_entry: str = "index.html"
    report_data_file: str = "data.js"
    extra_labels: dict[str, str] = field(default_factory=dict)
    task_kind: str = "report"  # the task format, recorded in attempt.json
    agent_task_kind: str | None = None  # told to the agent as OMNIDR_TASK_KIND; None: nothing told (a report task)
    delivers_answer: bool = False  # the agent delivers /output/answer.json (an answer), not a report folder
    protocol_file: Path | None = None  # short_answer: the protocol, mounted at /input/protocol.json
    finalize: FinalizeRequest | None = None  # short_answer: the finalization stage run when research gave no answer
    context_handling: str | None = None  # short_answer: paper-compaction (reference agent) or harness-native
    question: McqQuestion | None = None  # mcq: written to input/question.json, mounted at /input/question.json
    media_dir: Path | None = None  # mcq: the prepared frames, subtitles and audio, mounted at /input/media
