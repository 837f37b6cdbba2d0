"""Provider-side tools through the model gateway: web search that runs at the model provider, as Claude Code's
WebSearch (an Anthropic `web_search_20250305` server tool) and Codex's hosted `web_search` (a Responses tool)
send it. Fake Anthropic and OpenAI servers on loopback run the search and return results, one of them on a
denylisted host; the tests check what the agent gets, what the provider was asked, and provider_web.jsonl."""

import json

import pytest
from test_gateway import anthropic_api, gateway, loop, openai_api  # noqa: F401 - fixtures
from url_evasions import ENTRIES, URL_EVASIONS, URL_NEAR_MISSES

from sandbox.models import ProviderEvent, ProviderToolsPolicy, read_network_log, read_web_log

pytestmark = pytest.mark.network

DENIED = "github.com/marinero4972/OmniDR-Bench"
RESULTS = [("https://www.nist.gov/pendant-lamps", "Lamp safety"),
           ("https://github.com/marinero4972/OmniDR-Bench/blob/main/rubrics.json", "OmniDR-Bench rubrics"),
           ("https://en.wikipedia.org/wiki/Pendant_light", "Pendant light")]
ALLOWED_URLS = [RESULTS[0][0], RESULTS[2][0]]
# Claude Code 2.1's WebSearch: its own Messages request, one server tool, the query in the user message
WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 8}
CODEX_TOOLS = [{"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {}}},
               {"type": "web_search"}]


def _policy(text: str) -> ProviderToolsPolicy:
    return ProviderToolsPolicy.parse(text, ProviderToolsPolicy.every("allow"))


def _events(gw) -> list[ProviderEvent]:
    return read_network_log(gw.config.log_path.with_name("provider_web.jsonl"))  # type: ignore[return-value]


def _search(gw, stream: bool, **extra):
    body = {"model": "claude-test", "max_tokens": 256, "tools": [WEB_SEARCH], "stream": stream,
            "messages": [{"role": "user", "content": "Perform a web search for the query: pendant lamp safety"}],
            **extra}
    if stream:
        return gw.stream("/v1/messages", body, anthropic=True)
    return gw.post("/v1/messages", body, anthropic=True)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_an_allowed_web_search_is_logged_as_a_provider_event_with_its_result_urls(gateway, anthropic_api, stream):
    anthropic_api.search_results = list(RESULTS)
    gw = gateway(provider_tools=_policy("allow"), denylist=[DENIED])
    answer = _search(gw, stream)
    assert answer.status == 200
    assert all(url in answer.text for url, _t in RESULTS)  # allow: the denylist is not applied to provider tools
    [event] = _events(gw)
    assert (event.via, event.type, event.tool, event.action, event.policy) == \
        ("provider", "provider", "web_search", "search", "allow")
    assert event.query == "pendant lamp safety" and event.status == "ok" and not event.blocked
    assert [(r.url, r.title) for r in event.results] == RESULTS
    [exchange] = gw.exchanges()
    assert event.exchange_seq == exchange.seq and exchange.provider_web_events == 1
    assert exchange.provider_tools == [{"kind": "web_search", "tool": "web_search_20250305", "policy": "allow",
                                        "action": "passed", "detail": ""}]
    assert gw.state().server_search_requests == 1
    # the proxy's log and this one read as one web log
    (gw.config.log_path.parent / "network.jsonl").write_text("")
    assert read_web_log(gw.config.log_path.parent) == [event]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_codexs_allowed_web_search_is_logged_from_its_web_search_call(gateway, openai_api, stream):
    openai_api.search_results = list(RESULTS)
    gw = gateway(provider_tools=_policy("allow"), denylist=[DENIED])
    body = {"model": "gpt-test", "input": "hi", "tools": CODEX_TOOLS, "stream": stream}
    answer = gw.stream("/v1/responses", body) if stream else gw.post("/v1/responses", body)
    assert answer.status == 200 and "OmniDR-Bench" in answer.text  # allow: passed as the provider sent it
    assert openai_api.received[0].body["tools"] == CODEX_TOOLS
    [event] = _events(gw)
    assert (event.via, event.tool, event.query, event.policy, event.blocked) == \
        ("provider", "web_search_call", "pendant lamp safety", "allow", False)
    assert [r.url for r in event.results] == [u for u, _t in RESULTS]
    assert gw.state().server_search_requests == 1


def test_a_denied_web_search_is_refused_with_an_error_the_cli_does_not_retry(gateway, anthropic_api):
    anthropic_api.search_results = list(RESULTS)
    gw = gateway(provider_tools=_policy("deny"))
    answer = _search(gw, stream=False)
    assert answer.status == 400 and answer.headers.get("x-should-retry") == "false"
    error = answer.json["error"]
    assert error["type"] == "provider_tool_refused" and "web_search_20250305" in error["message"]
    assert anthropic_api.received == []  # nothing reached the provider
    assert gw.state().requests == 0  # not a model request: no iteration spent
    [event] = _events(gw)
    assert (event.action, event.status, event.blocked, event.block_reason) == \
        ("refused", "refused", True, "provider_tools_policy")
    assert gw.exchanges()[0].outcome == "provider_tool_refused"


def test_codexs_hosted_web_search_is_taken_out_of_a_request_that_has_other_tools(gateway, openai_api):
    gw = gateway(provider_tools=_policy("deny"))
    answer = gw.post("/v1/responses", {"model": "gpt-test", "input": "hi", "tools": CODEX_TOOLS})
    assert answer.status == 200
    [received] = openai_api.received
    assert [t["type"] for t in received.body["tools"]] == ["function"]
    [exchange] = gw.exchanges()
    assert exchange.provider_tools[0]["action"] == "removed" and _events(gw) == []


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_denylist_goes_into_the_filter_and_a_leaked_result_is_removed_and_counted(gateway, anthropic_api, stream):
    anthropic_api.search_results = list(RESULTS)  # the fake provider ignores blocked_domains, as leaky ones do
    gw = gateway(provider_tools=_policy("denylist"), denylist=[DENIED])
    answer = _search(gw, stream, tools=[{**WEB_SEARCH, "blocked_domains": ["spam.example"]}])
    assert answer.status == 200
    [received] = anthropic_api.received
    assert received.body["tools"][0]["blocked_domains"] == ["spam.example", DENIED]
    assert "OmniDR-Bench" not in answer.text  # neither the result nor its citation reaches the agent
    assert all(url in answer.text for url in ALLOWED_URLS)
    [event] = _events(gw)
    assert event.blocked and event.block_reason == "denylist" and event.blocked_results == 1
    assert [r.url for r in event.results if r.blocked] == [RESULTS[1][0]]
    [exchange] = gw.exchanges()
    assert exchange.denylisted_results == 1 and exchange.provider_tools[0]["action"] == "filter_added"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_codexs_web_search_gets_the_denylist_as_blocked_domains_and_its_sources_are_filtered(
        gateway, openai_api, stream):
    openai_api.search_results = list(RESULTS)
    gw = gateway(provider_tools=_policy("denylist"), denylist=[DENIED])
    body = {"model": "gpt-test", "input": "hi", "tools": CODEX_TOOLS, "stream": stream}
    answer = gw.stream("/v1/responses", body) if stream else gw.post("/v1/responses", body)
    assert answer.status == 200
    [received] = openai_api.received
    assert received.body["tools"][1]["filters"] == {"blocked_domains": [DENIED]}
    assert "OmniDR-Bench" not in answer.text and all(url in answer.text for url in ALLOWED_URLS)
    [event] = _events(gw)
    assert (event.tool, event.action, event.query) == ("web_search_call", "search", "pendant lamp safety")
    assert [r.url for r in event.results] == [u for u, _t in RESULTS] and event.blocked_results == 1


@pytest.mark.parametrize("family", ["anthropic", "openai"])
def test_an_agent_that_tries_to_override_the_denylist_is_refused(gateway, anthropic_api, openai_api, family):
    gw = gateway(provider_tools=_policy("denylist"), denylist=[DENIED])
    if family == "anthropic":
        answer = _search(gw, False, tools=[{**WEB_SEARCH, "allowed_domains": ["nist.gov", DENIED]}])
    else:
        tools = [CODEX_TOOLS[0], {"type": "web_search", "filters": {"allowed_domains": [DENIED + "/tree/main"]}}]
        answer = gw.post("/v1/responses", {"model": "gpt-test", "input": "hi", "tools": tools})
    assert answer.status == 400 and "denylist" in answer.text
    assert anthropic_api.received == [] and openai_api.received == []
    # an allow-list that keeps clear of the denylist is the agent's own business
    if family == "anthropic":
        assert _search(gw, False, tools=[{**WEB_SEARCH, "allowed_domains": ["nist.gov"]}]).status == 200


def test_tools_without_a_domain_filter_are_removed_under_the_denylist_policy(gateway, openai_api, anthropic_api):
    gw = gateway(provider_tools=_policy("denylist"), denylist=[DENIED])
    tools = [CODEX_TOOLS[0], {"type": "web_search_preview"}, {"type": "code_interpreter", "container": {"type": "auto"}}]
    assert gw.post("/v1/responses", {"model": "gpt-test", "input": "hi", "tools": tools}).status == 200
    assert gw.chat(web_search_options={}).status == 200
    mcp = [{"type": "url", "url": "https://mcp.example/sse", "name": "docs"}]
    assert gw.message(mcp_servers=mcp).status == 200
    responses, chat = openai_api.received
    assert [t["type"] for t in responses.body["tools"]] == ["function"]
    assert "web_search_options" not in chat.body
    assert "mcp_servers" not in anthropic_api.received[0].body
    kinds = [(d["tool"], d["action"]) for e in gw.exchanges() for d in e.provider_tools]
    assert kinds == [("web_search_preview", "removed"), ("code_interpreter", "removed"),
                     ("web_search_options", "removed"), ("mcp_servers", "removed")]
    # allowed, they pass untouched
    allowed = gateway(provider_tools=_policy("allow"))
    assert allowed.message(mcp_servers=mcp).status == 200
    assert anthropic_api.received[1].body["mcp_servers"] == mcp


def test_the_policy_spelling():
    every = ProviderToolsPolicy.every("deny")
    assert _policy("deny") == every and str(every) == "deny"
    mixed = ProviderToolsPolicy.parse("web_search=denylist", every)
    assert (mixed.web_search, mixed.web_fetch, mixed.hosted) == ("denylist", "deny", "deny")
    assert str(mixed) == "web_search=denylist,web_fetch=deny,hosted=deny" and mixed.opens_provider_web
    assert not every.opens_provider_web
    for bad in ("open", "search=allow", "web_search:allow"):
        with pytest.raises(ValueError, match="provider-tools"):
            ProviderToolsPolicy.parse(bad, every)
    assert json.loads(mixed.model_dump_json())["web_search"] == "denylist"


@pytest.mark.parametrize(("family", "stream"), [("anthropic", False), ("anthropic", True), ("openai", True)],
                         ids=["anthropic-whole", "anthropic-streamed", "openai-streamed"])
def test_no_spelling_of_a_denied_url_gets_through_the_result_filter(gateway, anthropic_api, openai_api, family,
                                                                    stream):
    """The evasion table of tests/url_evasions.py, as results of a provider's own search: every
    spelling of a denied URL is taken out of what the agent gets, every near miss stays."""
    api = anthropic_api if family == "anthropic" else openai_api
    api.search_results = [(url, f"result {i}") for i, url in enumerate(URL_EVASIONS + URL_NEAR_MISSES)]
    gw = gateway(provider_tools=_policy("denylist"), denylist=ENTRIES)
    if family == "anthropic":
        answer = _search(gw, stream)
    else:
        body = {"model": "gpt-test", "input": "hi", "tools": CODEX_TOOLS, "stream": stream}
        answer = gw.stream("/v1/responses", body) if stream else gw.post("/v1/responses", body)
    assert answer.status == 200
    [event] = _events(gw)
    blocked = {r.url for r in event.results if r.blocked}
    assert blocked == set(URL_EVASIONS), set(URL_EVASIONS) ^ blocked
    assert event.blocked_results == len(URL_EVASIONS)
    for url in URL_NEAR_MISSES:
        assert json.dumps(url)[1:-1] in answer.text
