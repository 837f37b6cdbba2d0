"""Provider-side tools: the second web door. A model provider's own web search and fetch (and other hosted
tools) run at the provider: the query leaves through the model API and the results come back inside the
model's answer, so the egress proxy never sees them. The gateway is the one place that can.

For each model request the gateway
1. recognises the provider-side tools it asks for (`tool_kind`),
2. applies the run's `ProviderToolsPolicy` (`apply_policy`): `allow` passes the tool; `deny` takes it out of
   the request, or refuses the request when using it is the request's whole purpose (every tool it offers
   is denied, or `tool_choice` forces one); `denylist` puts the run's denylist into the tool's own domain
   filter (`blocked_domains`: Anthropic `web_search_*` and `web_fetch_*`, Responses `web_search`
   `filters`) and refuses a request whose own `allowed_domains` names a denied host; a tool with no domain
   filter (Responses `web_search_preview`, Chat `web_search_options`, hosted tools) is denied instead,
3. and, watching the answer (`AnswerWatch`, whole or streamed), removes results on denylisted hosts that a
   provider returned anyway (providers have been seen to leak through their own filters), and turns each
   search or fetch into a `ProviderEvent` for provider_web.jsonl.
"""

import copy
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from sandbox.egress import Denylist, parse_entry
from sandbox.gateway._apis import CHAT, MESSAGES, RESPONSES, Route, _dict, _list
from sandbox.models import ProviderToolKind, ProviderToolsPolicy, ToolPolicy

# Responses tools that run at OpenAI and can reach data outside the sandbox (function, custom, local_shell,
# shell and apply_patch run in the agent's container; computer_use_preview is driven by the client).
_RESPONSES_HOSTED = frozenset({"file_search", "code_interpreter", "image_generation", "mcp"})


def tool_kind(route: Route, tool: Any) -> ProviderToolKind | None:
    """The provider-side kind of one entry of a request's `tools`, or None for a tool the agent runs itself."""
    if not isinstance(tool, dict):
        return None
    kind = str(tool.get("type") or "")
    if route is MESSAGES:
        if kind.startswith("web_search_"):
            return "web_search"
        if kind.startswith("web_fetch_"):
            return "web_fetch"
        if kind.startswith("code_execution_"):
            return "hosted"
    elif route is RESPONSES:
        if kind.startswith("web_search"):
            return "web_search"
        if kind in _RESPONSES_HOSTED:
            return "hosted"
    return None


def _has_domain_filter(route: Route, tool: dict) -> bool:
    """Whether the provider documents domain filters for this tool (Anthropic web search and fetch take
    `allowed_domains`/`blocked_domains`; the Responses GA `web_search` takes them under `filters`)."""
    if route is MESSAGES:
        return tool_kind(route, tool) in ("web_search", "web_fetch")
    return route is RESPONSES and tool.get("type") == "web_search"


@dataclass
class ToolDecision:
    """What the gateway did with one provider-side tool of a request (kept in the exchange's log line)."""

    kind: ProviderToolKind
    tool: str
    policy: ToolPolicy
    action: str  # passed | filter_added | removed | refused
    detail: str = ""

    def dump(self) -> dict[str, str]:
        return {"kind": self.kind, "tool": self.tool, "policy": self.policy, "action": self.action,
                "detail": self.detail}


@dataclass
class PolicyOutcome:
    """Decisions for one request; `refusal` is the message of a request the gateway must not forward."""

    decisions: list[ToolDecision] = field(default_factory=list)
    refusal: str | None = None

    def effective(self, kind: ProviderToolKind) -> ToolPolicy | None:
        """The policy the request's tool of `kind` ran under (None when the request had none)."""
        return next((d.policy for d in self.decisions if d.kind == kind and d.action != "removed"), None)


def _denied_domain(denylist: Denylist, domain: Any) -> bool:
    """Whether an agent's allowed-domain entry (`host` or `host/path`) opens a host or path the denylist hides."""
    try:
        rule = parse_entry(str(domain))
    except ValueError:
        return False
    return denylist.blocks_url(rule.host, rule.path_prefix or "/") is not None


def _add_filter(route: Route, tool: dict, denylist: Denylist) -> str | None:
    """Put the denylist into the tool's `blocked_domains`. Returns a refusal when the agent's own
    `allowed_domains` names a denied host (the providers take one list or the other, not both)."""
    if route is MESSAGES:
        holder = tool
    else:
        if not isinstance(tool.get("filters"), dict):
            tool["filters"] = {}
        holder = tool["filters"]
    allowed = holder.get("allowed_domains")
    if allowed:
        bad = [d for d in allowed if _denied_domain(denylist, d)]
        if bad:
            return (f"the request's {tool.get('type')} allowed_domains name {', '.join(map(str, bad))}, which this "
                    "run's denylist hides; provider-side tools may not widen the denylist")
        return None  # an allow-list of permitted hosts only; answers are still filtered
    if denylist:
        own = [d for d in _list(holder.get("blocked_domains")) if isinstance(d, str)]
        holder["blocked_domains"] = list(dict.fromkeys(own + [str(rule) for rule in denylist.rules]))
    return None


def _forced(route: Route, tool_choice: Any, removed: list[dict]) -> bool:
    """Whether `tool_choice` names one of the removed tools."""
    if not isinstance(tool_choice, dict):
        return False
    for tool in removed:
        if route is MESSAGES and tool_choice.get("type") == "tool" and tool_choice.get("name") == tool.get("name"):
            return True
        if route is RESPONSES and tool_choice.get("type") == tool.get("type"):
            return True
    return False


# Request fields (not tools) that open a door with no domain filter: kept under `allow`, else taken out.
_REQUEST_DOORS: dict[str, tuple[str, ProviderToolKind, str]] = {
    MESSAGES.name: ("mcp_servers", "hosted", "remote MCP servers have no domain filter"),
    CHAT.name: ("web_search_options", "web_search", "Chat Completions search has no domain filter"),
}


def apply_policy(route: Route, body: dict[str, Any], policy: ProviderToolsPolicy, denylist: Denylist) -> PolicyOutcome:
    """Apply the run's policy to the provider-side tools of one model request. Edits `body` in place."""
    out = PolicyOutcome()
    tools = body.get("tools")
    if isinstance(tools, list):
        kept, removed = [], []
        for tool in tools:
            kind = tool_kind(route, tool)
            if kind is None:
                kept.append(tool)
                continue
            name = str(tool.get("type"))
            rule = policy.of(kind)
            if rule == "denylist" and not _has_domain_filter(route, tool):
                out.decisions.append(ToolDecision(kind, name, rule, "removed", "the provider documents no domain "
                                                  "filter for it, so the denylist cannot be applied"))
                removed.append(tool)
            elif rule == "denylist":
                problem = _add_filter(route, tool, denylist)
                if problem:
                    out.refusal = problem
                    out.decisions.append(ToolDecision(kind, name, rule, "refused", problem))
                else:
                    entries = f"{len(denylist)} denylist entr{'y' if len(denylist) == 1 else 'ies'}"
                    out.decisions.append(ToolDecision(kind, name, rule, "filter_added", f"{entries} as blocked_domains"))
                kept.append(tool)
            elif rule == "allow":
                out.decisions.append(ToolDecision(kind, name, rule, "passed"))
                kept.append(tool)
            else:
                out.decisions.append(ToolDecision(kind, name, rule, "removed", "denied by the run's policy"))
                removed.append(tool)
        if removed:
            if not kept or _forced(route, body.get("tool_choice"), removed):
                names = ", ".join(str(t.get("type")) for t in removed)
                out.refusal = (f"this run does not allow the provider-side tool(s) {names} (the model provider "
                               "would reach the web outside the sandbox's logged door); use the tools the "
                               "sandbox gives the agent instead")
                for d in out.decisions:
                    if d.action == "removed":
                        d.action = "refused"
            else:
                body["tools"] = kept
    door = _REQUEST_DOORS.get(route.name)
    if door is not None and door[0] in body:
        name, kind, why = door
        rule = policy.of(kind)
        if rule == "allow":
            out.decisions.append(ToolDecision(kind, name, rule, "passed"))
        else:
            del body[name]
            out.decisions.append(ToolDecision(kind, name, rule, "removed",
                                              why if rule == "denylist" else "denied by the run's policy"))
    return out


# ---- answers: filtering and the record -------------------------------------------------------------


def _host(url: Any) -> str:
    try:
        return (urlsplit(str(url)).hostname or "").lower()
    except ValueError:
        return ""


@dataclass
class FoundCall:
    """One provider-side search or fetch found in an answer (before any filtering)."""

    tool: str
    kind: ProviderToolKind
    action: str
    query: str | None = None
    url: str | None = None
    results: list[tuple[str, str | None]] = field(default_factory=list)  # (url, title)
    error: str | None = None


def _anthropic_calls(content: list) -> list[FoundCall]:
    uses = [b for b in content if _dict(b).get("type") == "server_tool_use"]
    results = {b.get("tool_use_id"): b for b in content if str(_dict(b).get("type", "")).endswith("_tool_result")}
    found = []
    for use in uses:
        name, args = str(use.get("name")), _dict(use.get("input"))
        result = _dict(results.get(use.get("id")))
        body = result.get("content")
        if name == "web_search":
            call = FoundCall(name, "web_search", "search", query=args.get("query"))
            if isinstance(body, list):
                call.results = [(str(r.get("url")), r.get("title")) for r in map(_dict, body) if r.get("url")]
            elif isinstance(body, dict) and "error_code" in body:
                call.error = str(body["error_code"])
        elif name == "web_fetch":
            page = _dict(body)
            call = FoundCall(name, "web_fetch", "fetch", url=args.get("url") or page.get("url"))
            if "error_code" in page:
                call.error = str(page["error_code"])
        else:
            continue
        found.append(call)
    return found


def _responses_calls(output: list) -> list[FoundCall]:
    found = []
    for item in map(_dict, output):
        if item.get("type") != "web_search_call":
            continue
        action = _dict(item.get("action"))
        kind = str(action.get("type") or "search")
        query = action.get("query") or (" | ".join(map(str, action["queries"])) if action.get("queries") else None)
        call = FoundCall("web_search_call", "web_search", kind if kind in ("search", "open_page", "find") else "search",
                         query=query if kind == "search" else None, url=action.get("url"))
        call.results = [(str(s.get("url")), s.get("title")) for s in map(_dict, _list(action.get("sources")))
                        if s.get("url")]
        if item.get("status") == "failed":
            call.error = "failed"
        found.append(call)
    return found


def _chat_calls(annotations: list) -> list[FoundCall]:
    cited = [_dict(_dict(a).get("url_citation")) for a in annotations if _dict(a).get("type") == "url_citation"]
    if not cited:
        return []
    call = FoundCall("web_search_options", "web_search", "search")
    call.results = list(dict.fromkeys((str(c.get("url")), c.get("title")) for c in cited if c.get("url")))
    return [call]


class AnswerWatch:
    """Watches one model answer (whole, or streamed event by event): removes denylisted results where the
    policy says `denylist`, and collects the provider-side calls for the record."""

    def __init__(self, route: Route, outcome: PolicyOutcome, denylist: Denylist) -> None:
        self.route = route
        self.outcome = outcome
        self.denylist = denylist
        self.removed = 0  # denylisted results or pages taken out of the answer
        self.changes = 0  # edits made to the answer (removed results, pages and citations)
        self._found: list[FoundCall] | None = None
        # stream assembly (copies taken before filtering)
        self._blocks: dict[int, dict] = {}
        self._partial: dict[int, str] = {}
        self._items: list[dict] = []
        self._final: list | None = None
        self._annotations: list = []

    def _filters(self, kind: ProviderToolKind) -> bool:
        return self.outcome.effective(kind) == "denylist" and bool(self.denylist)

    def _kept(self, items: list, url_of) -> list:
        """`items` without those whose URL is denied; counts what went."""
        kept = [i for i in items if not self.denied(url_of(_dict(i)))]
        self.changes += len(items) - len(kept)
        return kept

    def denied(self, url: Any) -> bool:
        if not isinstance(url, str) or not url:
            return False
        return self.denylist.blocks(url) is not None  # the proxy's normalisation: no spelling gets around it

    # -- filtering (in place) -------------------------------------------------------------------

    def _filter_anthropic_block(self, block: dict) -> None:
        kind = block.get("type")
        if kind == "web_search_tool_result" and self._filters("web_search") and isinstance(block.get("content"), list):
            kept = self._kept(block["content"], lambda r: r.get("url"))
            self.removed += len(block["content"]) - len(kept)
            block["content"] = kept
        elif kind == "web_fetch_tool_result" and self._filters("web_fetch"):
            page = _dict(block.get("content"))
            if self.denied(page.get("url")):
                self.removed += 1
                self.changes += 1
                block["content"] = {"type": "web_fetch_tool_result_error", "error_code": "url_not_allowed"}
        elif kind == "text" and isinstance(block.get("citations"), list) and self._filters("web_search"):
            block["citations"] = self._kept(block["citations"], lambda c: c.get("url"))

    def _filter_responses_item(self, item: dict) -> None:
        if not self._filters("web_search"):
            return
        if item.get("type") == "web_search_call":
            action = _dict(item.get("action"))
            if isinstance(action.get("sources"), list):
                kept = self._kept(action["sources"], lambda s: s.get("url"))
                self.removed += len(action["sources"]) - len(kept)
                action["sources"] = kept
        elif item.get("type") == "message":
            for part in _list(item.get("content")):
                if isinstance(_dict(part).get("annotations"), list):
                    part["annotations"] = self._kept(part["annotations"], lambda a: a.get("url"))

    def _filter_chat_annotations(self, holder: dict) -> None:
        if self._filters("web_search") and isinstance(holder.get("annotations"), list):
            holder["annotations"] = self._kept(holder["annotations"], lambda a: _dict(a.get("url_citation")).get("url"))

    def whole(self, body: Any) -> None:
        """A complete JSON answer: collect its calls, then filter it in place."""
        body = _dict(body)
        if self.route is MESSAGES:
            content = [b for b in _list(body.get("content")) if isinstance(b, dict)]
            self._found = _anthropic_calls(copy.deepcopy(content))
            for block in content:
                self._filter_anthropic_block(block)
        elif self.route is RESPONSES:
            output = [i for i in _list(body.get("output")) if isinstance(i, dict)]
            self._found = _responses_calls(copy.deepcopy(output))
            for item in output:
                self._filter_responses_item(item)
        elif self.route is CHAT:
            messages = [_dict(_dict(c).get("message")) for c in _list(body.get("choices"))]
            self._found = _chat_calls([a for m in messages for a in _list(m.get("annotations"))])
            for message in messages:
                self._filter_chat_annotations(message)

    def event(self, data: Any) -> bool:
        """One parsed stream event: assemble it for the record, then filter it in place. False when the
        event must not reach the agent at all (a citation of a denylisted page)."""
        if not isinstance(data, dict):
            return True
        if self.route is MESSAGES:
            return self._messages_event(data)
        if self.route is RESPONSES:
            return self._responses_event(data)
        if self.route is CHAT:
            self._chat_event(data)
        return True

    def _messages_event(self, data: dict) -> bool:
        kind = data.get("type")
        if kind == "content_block_start" and isinstance(data.get("content_block"), dict):
            self._blocks[int(data.get("index") or 0)] = copy.deepcopy(data["content_block"])
            self._filter_anthropic_block(data["content_block"])
        elif kind == "content_block_delta":
            delta = _dict(data.get("delta"))
            if delta.get("type") == "input_json_delta":
                index = int(data.get("index") or 0)
                self._partial[index] = self._partial.get(index, "") + str(delta.get("partial_json") or "")
            elif delta.get("type") == "citations_delta" and self._filters("web_search"):
                return not self.denied(_dict(delta.get("citation")).get("url"))
        return True

    def _responses_event(self, data: dict) -> bool:
        kind = data.get("type")
        if kind in ("response.output_item.added", "response.output_item.done") and isinstance(data.get("item"), dict):
            if kind == "response.output_item.done":
                self._items.append(copy.deepcopy(data["item"]))
            self._filter_responses_item(data["item"])
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            output = _dict(data.get("response")).get("output")
            if isinstance(output, list):
                self._final = copy.deepcopy(output)
                for item in output:
                    if isinstance(item, dict):
                        self._filter_responses_item(item)
        elif kind == "response.output_text.annotation.added" and self._filters("web_search"):
            return not self.denied(_dict(data.get("annotation")).get("url"))
        return True

    def _chat_event(self, data: dict) -> None:
        for choice in _list(data.get("choices")):
            delta = _dict(_dict(choice).get("delta"))
            if isinstance(delta.get("annotations"), list):
                self._annotations += copy.deepcopy(delta["annotations"])
                self._filter_chat_annotations(delta)

    def calls(self) -> list[FoundCall]:
        """The provider-side calls of the answer, as the provider sent them."""
        if self._found is not None:
            return self._found
        if self.route is MESSAGES:
            for index, text in self._partial.items():
                block = self._blocks.get(index)
                if block is not None and text:
                    try:
                        block["input"] = json.loads(text)
                    except ValueError:
                        pass
            return _anthropic_calls([self._blocks[i] for i in sorted(self._blocks)])
        if self.route is RESPONSES:
            return _responses_calls(self._final if self._final else self._items)
        if self.route is CHAT:
            return _chat_calls(self._annotations)
        return []

    def records(self) -> list[dict[str, Any]]:
        """`ProviderEvent` fields of each call (the exchange's time and numbering are added by the caller)."""
        out = []
        for call in self.calls():
            policy = self.outcome.effective(call.kind) or "allow"
            filtering = self._filters(call.kind)
            results = [{"url": url, "title": title, "blocked": filtering and self.denied(url)}
                       for url, title in call.results]
            # a fetched page on the denylist is replaced by an error; a Responses open_page or find of one cannot
            # be taken back (the model read it at the provider) and stays unblocked in the record, for the audit
            page_blocked = filtering and call.action == "fetch" and self.denied(call.url)
            blocked = page_blocked or any(r["blocked"] for r in results)
            out.append({
                "tool": call.tool, "kind": call.kind, "policy": policy,
                "action": call.action, "query": call.query, "url": call.url, "host": _host(call.url) or None,
                "results": results, "status": "error" if call.error else "ok", "error": call.error,
                "blocked": blocked, "block_reason": "denylist" if blocked else None,
            })
        return out
