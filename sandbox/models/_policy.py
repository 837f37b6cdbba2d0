"""Models shared by the host (`omnidr`) and the code that runs inside the sandbox containers.

Only pydantic is needed here, so that the gateway and proxy images stay small.
"""

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

# How an evidence brief (calibration's R3) marks a question no source answers: `- [<fact id> open question] <claim>`.
# The host writes it (omnidr.benchmark.evidence_brief); the scripted model reads it.
OPEN_QUESTION_TAG = "open question"


class Budget(BaseModel):
    """Everything one attempt is allowed (paper App. F.1). Frozen: it must not change once a run starts."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    max_iterations: int = Field(500, ge=1, description="Agent iterations, counted as model requests through the gateway.")
    max_output_tokens: int = Field(64_000, ge=1, description="Per-request output tokens; larger requests are clamped to this.")
    max_total_tokens: int | None = Field(None, ge=1, description="Input plus output tokens over the attempt; None = unlimited.")
    max_tool_calls: int | None = Field(None, ge=0, description="Tool-use blocks in model responses over the attempt; None = unlimited.")
    max_cost_usd: float | None = Field(
        None, gt=0, description="US dollars over the attempt, each exchange priced at the run's price for its model "
                                "(the gateway refuses the budget without one); None = unlimited.")
    wall_time_s: float = Field(36_000.0, gt=0, description="Wall-clock limit of one attempt, seconds (10 h).")
    upstream_retries: int = Field(5, ge=0, description="Retries of one model request on upstream 5xx, 429 or connection failure.")
    attempts_per_task: int = Field(3, ge=1, description="Complete report attempts per task.")


ToolPolicy = Literal["allow", "deny", "denylist"]
"""What the gateway does with one kind of provider-side tool: `allow` passes it (and logs its web traffic),
`deny` takes it out of the request (or refuses a request that exists only to use it), `denylist` passes it
with the run's denylist put into the tool's own domain filter and removes denylisted results from answers."""

ProviderToolKind = Literal["web_search", "web_fetch", "hosted"]
"""Kinds of tools that run at the model provider, not in the agent container: web search (Anthropic
`web_search_*`, Responses `web_search*`, Chat Completions `web_search_options`), web fetch (Anthropic
`web_fetch_*`), and other hosted tools that can reach data outside the sandbox (Anthropic `code_execution_*`
and `mcp_servers`, Responses `file_search`, `code_interpreter`, `image_generation`, `mcp`)."""

PROVIDER_TOOL_KINDS: tuple[ProviderToolKind, ...] = ("web_search", "web_fetch", "hosted")


class ProviderToolsPolicy(BaseModel):
    """The run's policy for provider-side tools, one `ToolPolicy` per kind. Their queries leave through the
    model API, so the egress proxy never sees them: the gateway applies this policy and logs what they did."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    web_search: ToolPolicy = Field(description="Provider-side web search.")
    web_fetch: ToolPolicy = Field(description="Provider-side fetch of a URL.")
    hosted: ToolPolicy = Field(description="Other hosted tools (code execution, remote MCP, file search, ...); they "
                                           "have no domain filter, so `denylist` acts as `deny` for them.")

    @classmethod
    def every(cls, policy: ToolPolicy) -> "ProviderToolsPolicy":
        return cls(web_search=policy, web_fetch=policy, hosted=policy)

    @classmethod
    def parse(cls, text: str, default: "ProviderToolsPolicy") -> "ProviderToolsPolicy":
        """`deny` (every kind) or `web_search=denylist,web_fetch=deny` (the kinds named; others keep `default`).
        Raises ValueError with a message that names the bad part."""
        choices = ", ".join(get_args(ToolPolicy))
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if len(parts) == 1 and "=" not in parts[0]:
            if parts[0] not in get_args(ToolPolicy):
                raise ValueError(f"provider-tools policy {parts[0]!r} is not one of {choices}")
            return cls.every(parts[0])  # type: ignore[arg-type]
        values = default.model_dump()
        for part in parts:
            kind, eq, policy = (s.strip() for s in part.partition("="))
            if not eq or kind not in PROVIDER_TOOL_KINDS or policy not in get_args(ToolPolicy):
                raise ValueError(f"provider-tools setting {part!r} is not KIND=POLICY with KIND one of "
                                 f"{', '.join(PROVIDER_TOOL_KINDS)} and POLICY one of {choices}")
            values[kind] = policy
        return cls(**values)

    def of(self, kind: ProviderToolKind) -> ToolPolicy:
        return getattr(self, kind)

    @property
    def opens_provider_web(self) -> bool:
        """Whether any provider-side tool may reach the live web (then a run is not offline)."""
        return any(self.of(k) != "deny" for k in PROVIDER_TOOL_KINDS)

    def __str__(self) -> str:
        values = {self.of(k) for k in PROVIDER_TOOL_KINDS}
        if len(values) == 1:
            return values.pop()
        return ",".join(f"{k}={self.of(k)}" for k in PROVIDER_TOOL_KINDS)


ModelApi = Literal["chat_completions", "responses", "messages"]
"""A model API as the gateway's routes name it: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages."""

API_FAMILY: dict[str, Literal["openai", "anthropic"]] = {
    "chat_completions": "openai", "responses": "openai", "messages": "anthropic"}
API_LABEL = {"chat_completions": "openai-chat", "responses": "openai-responses", "messages": "anthropic-messages"}


def upstream_api(client: str, families: dict[Literal["openai", "anthropic"], bool]) -> ModelApi | None:
    """The API a model request on `client` is translated to, given the upstream families configured (value:
    whether an OpenAI upstream also serves /v1/responses); None when it passes through as it is. With both
    families configured nothing is translated. The gateway decides with this, and a leaderboard row names it."""
    if client == "messages" and "anthropic" not in families and "openai" in families:
        return "chat_completions"
    if client == "chat_completions" and "openai" not in families and "anthropic" in families:
        return "messages"
    if client == "responses":
        if "openai" in families:
            return None if families["openai"] else "chat_completions"
        if "anthropic" in families:
            return "messages"
    return None


def translation_label(client: str, families: dict[Literal["openai", "anthropic"], bool]) -> str | None:
    """How a log line and a leaderboard row name the translation, e.g. `anthropic-messages->openai-chat`."""
    target = upstream_api(client, families)
    return None if target is None else f"{API_LABEL[client]}->{API_LABEL[target]}"


SearchProvider = Literal["searxng", "brave"]
SEARCH_KEY_HEADER: dict[str, str] = {"searxng": "Authorization", "brave": "X-Subscription-Token"}
"""How each search provider takes its key: SearXNG instances behind a token take a bearer token (sent as
`Bearer KEY`), the Brave Search API its subscription token."""


class SearchDoor(BaseModel):
    """A web search provider the research skills query through the egress proxy (the search door). Its key
    stays on the host: the proxy injects it into each request to the provider's host, so it is never in the
    agent's container; searches are logged in network.jsonl and recorded and replayed like pages."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    provider: SearchProvider = Field(description="searxng (its JSON API) or brave (the Brave Search API).")
    base_url: str = Field(description="The provider's base URL, e.g. https://api.search.brave.com.")
    key_env: str | None = Field(None, description="Host environment variable holding the key; None: no key.")

    @property
    def host(self) -> str:
        from urllib.parse import urlsplit

        return (urlsplit(self.base_url).hostname or "").lower()

    @property
    def port(self) -> int:
        """The port the base URL names, or its scheme's default."""
        from urllib.parse import urlsplit

        parts = urlsplit(self.base_url)
        return parts.port or (443 if parts.scheme == "https" else 80)

    @property
    def key_header(self) -> str:
        return SEARCH_KEY_HEADER[self.provider]

    def agent_value(self) -> str:
        """What the agent's skills are told (OMNIDR_SEARCH_DOOR): provider and URL, never the key."""
        return f"{self.provider}@{self.base_url}"

