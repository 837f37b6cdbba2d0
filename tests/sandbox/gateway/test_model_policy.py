"""One system, one model: the gateway rewrites or refuses a request for another model than the system's, and a
provider's search model (which searches the live web at the provider) never passes while provider-side web search
is denied. Tried as an agent would: a stronger model by name, the model a harness's background calls name, a
search model under every policy, on the OpenAI and Anthropic routes, whole and streamed."""

import pytest
from test_gateway import anthropic_api, gateway, loop, openai_api  # noqa: F401 - fixtures

from sandbox.gateway._model_policy import decide, is_search_model
from sandbox.models import ProviderToolsPolicy

pytestmark = pytest.mark.network

SYSTEM = "system-model-1"
DENY = ProviderToolsPolicy.every("deny")
ALLOW = ProviderToolsPolicy.every("allow")


def _chat(gw, model: str | None, stream: bool = False):
    body = {"messages": [{"role": "user", "content": "hi"}], "stream": stream}
    if model is not None:
        body["model"] = model
    return gw.stream("/v1/chat/completions", body) if stream else gw.post("/v1/chat/completions", body)


def _messages(gw, model: str):
    return gw.post("/v1/messages", {"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]},
                   anthropic=True)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_rewrite_sends_the_systems_model_and_logs_what_was_asked(gateway, openai_api, stream):
    gw = gateway(model=SYSTEM, model_policy="rewrite", provider_tools=DENY)
    answer = _chat(gw, "gpt-stronger-than-the-system", stream)
    assert answer.status == 200
    assert [r.body["model"] for r in openai_api.received] == [SYSTEM]
    [exchange] = gw.exchanges()
    assert (exchange.model, exchange.model_sent, exchange.outcome) == ("gpt-stronger-than-the-system", SYSTEM, "ok")
    assert any("rewritten to the system's model" in note for note in exchange.request_edits)
    assert gw.state().requests == 1


def test_rewrite_fills_in_a_request_that_names_no_model_and_leaves_the_systems_own_alone(gateway, openai_api):
    gw = gateway(model=SYSTEM, model_policy="rewrite", provider_tools=DENY)
    assert _chat(gw, None).status == 200 and _chat(gw, SYSTEM).status == 200
    assert [r.body["model"] for r in openai_api.received] == [SYSTEM, SYSTEM]
    first, second = gw.exchanges()
    assert (first.model, first.model_sent) == (None, SYSTEM)
    assert (second.model, second.model_sent) == (SYSTEM, SYSTEM)
    assert not any("rewritten" in note for note in second.request_edits)  # the system's own model is left alone


def test_refuse_answers_400_sends_nothing_and_spends_no_iteration(gateway, anthropic_api):
    gw = gateway(model=SYSTEM, model_policy="refuse", provider_tools=DENY)
    answer = _messages(gw, "claude-haiku-background")
    assert answer.status == 400 and answer.json["error"]["type"] == "model_refused"
    assert SYSTEM in answer.json["error"]["message"]
    assert anthropic_api.received == []
    [exchange] = gw.exchanges()
    assert (exchange.outcome, exchange.model, exchange.model_sent, exchange.counted) == \
        ("model_refused", "claude-haiku-background", None, False)
    assert gw.state().requests == 0
    assert _messages(gw, SYSTEM).status == 200  # the system's own model passes
    assert [r.body["model"] for r in anthropic_api.received] == [SYSTEM]


def test_allow_sends_any_model_as_named(gateway, openai_api):
    gw = gateway(model=SYSTEM, model_policy="allow", provider_tools=DENY)
    assert _chat(gw, "another-model").status == 200
    assert [r.body["model"] for r in openai_api.received] == ["another-model"]
    assert gw.exchanges()[0].model_sent == "another-model"


@pytest.mark.parametrize("policy", ["allow", "refuse", "rewrite"])
@pytest.mark.parametrize("model", ["gpt-4o-search-preview", "gpt-4o-mini-search-preview", "gpt-5-search-api",
                                   "GPT-4o-Search-Preview"])
def test_a_search_model_never_passes_while_provider_web_search_is_denied(gateway, openai_api, policy, model):
    # asked for by name: refused, not rewritten to the system's model, so the agent learns it is not reachable
    gw = gateway(model=SYSTEM, model_policy=policy, provider_tools=DENY)
    answer = _chat(gw, model)
    assert answer.status == 400 and answer.json["error"]["type"] == "model_refused"
    assert openai_api.received == []
    [exchange] = gw.exchanges()
    assert exchange.outcome == "model_refused" and exchange.model == model


def test_a_system_scored_as_a_search_model_is_refused_while_provider_web_search_is_denied(gateway, openai_api):
    gw = gateway(model="gpt-5-search-api", model_policy="rewrite", provider_tools=DENY)
    assert _chat(gw, "gpt-4o").json["error"]["type"] == "model_refused"
    assert openai_api.received == []


def test_a_search_model_passes_when_provider_web_search_is_open(gateway, openai_api):
    gw = gateway(model="gpt-4o-search-preview", model_policy="refuse", provider_tools=ALLOW)
    assert _chat(gw, "gpt-4o-search-preview").status == 200
    assert [r.body["model"] for r in openai_api.received] == ["gpt-4o-search-preview"]


def test_search_models_are_told_apart_from_models_that_merely_mention_search():
    assert all(map(is_search_model, ["gpt-4o-search-preview", "gpt-5-search-api", "openai/gpt-4o-search-preview",
                                     "search"]))
    assert not any(map(is_search_model, ["gpt-4o", "research-model", "searchlight-7b", "claude-sonnet-4-5", None, ""]))
    assert decide("rewrite", None, "anything", search_denied=True).sent == "anything"  # no system model: no rewrite
