"""What the model gateway writes and the host reads: `gateway.jsonl` (one `GatewayExchange` per line) and
`gateway_state.json` (the `GatewayState` summary of what the attempt spent); and what the host sends a reused
gateway between attempts (`AttemptOpen`) and reads back (`ScopeReport`)."""

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_serializer

from sandbox.models._policy import API_LABEL, Budget

GATEWAY_LOG = "gateway.jsonl"
GATEWAY_STATE = "gateway_state.json"

BudgetName = Literal["max_iterations", "max_total_tokens", "max_tool_calls", "max_cost_usd"]
"""The `Budget` field whose limit was reached."""

Phase = Literal["research", "finalization"]
"""Which stage of an attempt an exchange belongs to: the agent's own research, or the tool-free finalization stage
the gateway runs for the controller after research (`POST /_gateway/finalize`, paper 002 App. C.2.3)."""

RouteName = Literal["chat_completions", "responses", "messages", "count_tokens", "models", "audio_transcriptions",
                    "unknown"]

Outcome = Literal[
    "ok",  # the upstream answered 2xx and the whole answer reached the agent
    "upstream_error",  # the upstream answered non-2xx (after any retries); relayed as is
    "upstream_unreachable",  # no answer after all retries; the agent got 502
    "stream_broken",  # the upstream stream failed part-way; the agent got a truncated stream
    "client_disconnected",  # the agent went away during a stream; the upstream stream was abandoned
    "budget_exhausted",  # refused by the gateway: a budget is spent
    "unauthorized",  # wrong or missing dummy token; the agent got 401
    "bad_request",  # the gateway could not read the request (not a JSON object)
    "not_found",  # no such route, or no upstream configured for it
    "provider_tool_refused",  # refused by the gateway: the run's policy forbids the provider-side tool it asks for
    "model_refused",  # refused by the gateway: another model than the system's (policy refuse), or a search model
    "gateway_error",  # the gateway itself failed on the exchange (a bug): the agent got a 500 or a cut stream
]


class TokenUsage(BaseModel):
    """Tokens of one exchange, from the upstream's usage fields, normalised across the three APIs."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    input_tokens: int = Field(
        description="Prompt tokens, cached ones included (Anthropic: input + cache read + cache creation)."
    )
    output_tokens: int = Field(description="Generated tokens, reasoning/thinking tokens included.")
    cache_read_input_tokens: int | None = Field(None, description="Part of input_tokens read from a prompt cache.")
    cache_creation_input_tokens: int | None = Field(
        None, description="Part of input_tokens written to a prompt cache (Anthropic)."
    )
    reasoning_tokens: int | None = Field(None, description="Part of output_tokens spent on hidden reasoning (OpenAI).")
    server_search_requests: int | None = Field(
        None, description="Web searches the provider ran itself for this answer (Anthropic `server_tool_use`, "
                          "Responses `web_search_call` items); they never pass the egress proxy.")
    server_fetch_requests: int | None = Field(
        None, description="Web fetches the provider ran itself for this answer (Anthropic "
                          "`server_tool_use.web_fetch_requests`).")

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class GatewayExchange(BaseModel):
    """One request of the agent and the gateway's answer to it: one line of gateway.jsonl."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    seq: int = Field(description="Arrival order at the gateway, from 1 (lines are in finishing order).")
    phase: Phase = Field("research", description="`research`: the agent's request; `finalization`: a request of the "
                         "finalization stage, sent by the gateway itself (no agent request, `counted` false).")
    started_at: datetime = Field(description="When the gateway received the request (UTC).")
    finished_at: datetime = Field(
        description="When the answer was complete, just before its end went to the agent (UTC); the line is "
        "written then, so it is on disk before the agent has the whole answer."
    )
    latency_s: float = Field(description="Seconds from receiving the request to finished_at.")
    first_byte_s: float | None = Field(
        None, description="Seconds from receiving the request to the first body byte sent to the agent."
    )
    method: str = Field(description="HTTP method of the agent's request.")
    path: str = Field(description="Path the agent requested, query string included.")
    route: RouteName = Field(description="Which API the request was for.")
    upstream_url: str | None = Field(None, description="URL the request was forwarded to (never carries a key), as the "
                                     "user gave it.")
    upstream_via: str | None = Field(None, description="Address the request actually went to, when it differs from "
                                     "upstream_url (a relay to a model server on the host's loopback).")
    model: str | None = Field(None, description="`model` named in the agent's request.")
    model_sent: str | None = Field(
        None, description="`model` of the request sent upstream: the system's model when the gateway's model policy "
        "rewrote another name; None when nothing was sent or the route names no model.")
    stream: bool = Field(False, description="Whether the answer was relayed as a server-sent-event stream.")
    counted: bool = Field(False, description="Whether the request counted as one agent iteration (model request).")
    status: int = Field(description="HTTP status the agent received.")
    upstream_status: int | None = Field(None, description="Status of the upstream's last answer; None if none came.")
    outcome: Outcome = Field(description="How the exchange ended.")
    retries: int = Field(0, description="Times the request was re-sent upstream after a 5xx, 429 or connection failure.")
    retry_reasons: list[str] = Field(
        default_factory=list,
        description="Why each retried try failed, in order; for `upstream_unreachable` also why the last one did.",
    )
    usage: TokenUsage | None = Field(None, description="Tokens counted from the upstream's usage; None if it gave none.")
    charged: Literal["usage", "cap"] | None = Field(
        None, description="For a stream the agent left: `usage` when the rest of the upstream's stream, read to its "
                          "end, gave the usage; `cap` when it gave none and the request was charged its size and "
                          "output cap (then `usage` holds that charge).")
    tool_calls: int = Field(0, description="Tool-use blocks in the model's answer (counted toward max_tool_calls).")
    upstream_wait_s: float | None = Field(
        None, description="Seconds the request waited for the run's shared upstream limit (all its tries); None: the "
                          "gateway has no shared limit.")
    upstream_limit_error: str | None = Field(
        None, description="Why the run's upstream limiter could not be asked, when it could not (the request went "
                          "anyway).")
    cost_usd: float | None = Field(
        None, description="What the exchange cost in US dollars, its usage priced at the run's price for its model; "
                          "None when nothing was priced: no price for the model, no usage reported, or no upstream "
                          "answer.")
    budget_exhausted: BudgetName | None = Field(None, description="The spent budget that refused this request.")
    request_edits: list[str] = Field(
        default_factory=list, description="What the gateway changed in the request or the answer, one sentence each."
    )
    error: str | None = Field(None, description="The gateway's own explanation when the outcome is not `ok`.")
    provider_tools: list[dict[str, str]] = Field(
        default_factory=list, description="Each provider-side tool the request asked for and what the gateway did "
        "with it: kind, tool, policy, action (passed, filter_added, removed, refused), detail.")
    provider_web_events: int = Field(0, description="Provider-side searches and fetches found in the answer "
                                                    "(lines written to provider_web.jsonl).")
    denylisted_results: int = Field(0, description="Results or pages on the denylist that the gateway removed from "
                                                   "the answer before the agent got it.")
    translation: str | None = Field(
        None, description="API translation of a model request whose upstream speaks another API than the agent, "
        "e.g. `anthropic-messages->openai-chat`; None when passed through as it is.")
    translation_dropped: list[str] = Field(
        default_factory=list, description="What the agent sent or the upstream answered that the other API cannot "
        "carry and the translation left out (thinking blocks, provider-side tools, cache marks, ...).")
    request_headers: dict[str, str] = Field(default_factory=dict, description="Agent's headers; credentials redacted.")
    client_request_body: Any = Field(
        None, description="A translated request as the agent sent it (request_body is what the upstream got).")
    request_body: Any = Field(None, description="Body sent upstream (after the edits): JSON value, or text.")
    response_headers: dict[str, str] = Field(default_factory=dict, description="Headers relayed to the agent.")
    response_body: Any = Field(
        None, description="Answer as the upstream sent it: JSON value, raw SSE text for streams, or text."
    )
    client_response_body: Any = Field(
        None, description="A translated answer as the agent got it: JSON value, or SSE text for streams.")

    @property
    def upstream_outage(self) -> bool:
        """Whether the exchange failed on the upstream's side: unreachable, a broken stream, 5xx or 429. A 4xx
        answer (a request the model API rejects) is the agent's failure, not an outage."""
        status = self.upstream_status or 0
        return self.outcome in ("upstream_unreachable", "stream_broken") or (
            self.outcome == "upstream_error" and (status >= 500 or status == 429))

    @property
    def upstream_route(self) -> str:
        """The API `request_body` and `response_body` are in: the upstream's (after a translation) or `route`."""
        if self.translation:
            target = self.translation.split("->", 1)[1]
            return next((name for name, label in API_LABEL.items() if label == target), self.route)
        return self.route


class SpendCounts(BaseModel):
    """What an attempt spent, counted by the gateway: the part of `GatewayState` an attempt record keeps
    (`omnidr.attempts.BudgetUse`), defined once for both."""

    requests: int = Field(0, description="Model requests admitted and forwarded: the agent iterations used.")
    refused_requests: int = Field(0, description="Model requests refused because a budget was spent.")
    input_tokens: int = Field(0, description="Prompt tokens over the attempt, cached ones and the finalization "
                                             "stage's included.")
    output_tokens: int = Field(0, description="Generated tokens over the attempt, the finalization stage's included.")
    tool_calls: int = Field(0, description="Tool-use blocks in the research answers over the attempt (what "
                                           "max_tool_calls limits).")
    upstream_retries: int = Field(0, description="Upstream re-sends over the attempt (5xx, 429, connection failures).")
    failed_requests: int = Field(
        0, description="Admitted requests whose answer was not a complete 2xx (upstream error, unreachable, broken)."
    )
    server_search_requests: int = Field(
        0, description="Web searches the model provider ran itself (Anthropic server_tool_use, Responses "
                       "web_search_call), where the upstream reports them; they never pass the egress proxy.")
    server_fetch_requests: int = Field(
        0, description="Web fetches the model provider ran itself (Anthropic web_fetch), where the upstream reports them.")
    charged_caps: int = Field(
        0, description="Streams the agent left whose upstream reported no usage even when read to its end: each "
                       "charged what it could cost at most (its size in bytes as input tokens, its output cap).")
    cost_usd: float = Field(
        0.0, description="US dollars over the attempt: the priced exchanges' costs, the finalization stage's included.")
    unpriced_requests: int = Field(
        0, description="Answered model requests (research and finalization) whose cost is unknown: the run has no "
                       "price for its model, or the upstream reported no usage. Where this is above 0, `cost_usd` "
                       "is a lower bound and the attempt's cost is shown as unpriced, never as its partial sum.")
    finalization_requests: int = Field(
        0, description="Requests of the finalization stage sent upstream (not model requests of the agent: not in "
                       "`requests`, not budgeted as iterations).")
    finalization_input_tokens: int = Field(
        0, description="Prompt tokens of the finalization stage; also counted in input_tokens.")
    finalization_output_tokens: int = Field(
        0, description="Generated tokens of the finalization stage (its own budget); also counted in output_tokens.")


class GatewayState(SpendCounts):
    """What the attempt has spent: GET /_gateway/state, and the summary file written by the gateway."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    budget: Budget = Field(description="The budget being enforced.")
    started_at: datetime = Field(description="When the gateway started (UTC).")
    updated_at: datetime = Field(description="When these figures last changed (UTC).")
    total_tokens: int = Field(0, description="input_tokens + output_tokens (what max_total_tokens limits).")
    requests_without_usage: int = Field(
        0, description="Admitted requests answered 2xx without usage, so their tokens are not counted."
    )
    budget_exhausted: BudgetName | None = Field(None, description="The first budget spent, or None.")
    budget_exhausted_at: datetime | None = Field(None, description="When that budget was spent (UTC).")
    finalization_accepted: bool | None = Field(
        None, description="Whether the finalization stage produced an accepted answer; None when it has not run.")


class AttemptOpen(BaseModel):
    """Body of `POST /_gateway/open`: the next attempt's token, budget and files."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    generation: str = Field(min_length=1, max_length=200, description="The controller's name for the attempt.")
    agent_token: SecretStr = Field(min_length=8, description="The attempt's dummy token for the agent.")
    budget: Budget = Field(description="What the attempt may spend.")
    log_path: Path = Field(description="The attempt's gateway.jsonl (created; must not hold lines yet).")
    summary_path: Path = Field(description="The attempt's gateway_state.json.")
    web_log_path: Path | None = Field(None, description="The attempt's provider_web.jsonl; default beside the log.")
    agent_address: str | None = Field(None, description="The only client address served in this attempt (its "
                                                        "agent); None: any client with the token.")

    @field_serializer("agent_token", when_used="json")
    def _reveal(self, token: SecretStr) -> str:
        """Sent to the gateway whole (a plain dump would mask it); never logged."""
        return token.get_secret_value()


class ScopeReport(BaseModel):
    """The answer of the control endpoints: which attempt, whether it is sealed, and its counters."""

    generation: str
    sealed: bool
    in_flight: int
    state: GatewayState
