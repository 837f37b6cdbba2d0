"""Dollars at the gateway: every exchange priced at the run's price for its model, and a dollar budget enforced
like the total-token one. Expected costs are worked out here from the table's rates by hand (per million tokens),
and checked against genai-prices' own calculator too."""

import json
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest
from test_gateway import (  # noqa: F401 - fixtures
    ADMIN_TOKEN,
    anthropic_api,
    gateway,
    loop,
    openai_api,
)

from omnidr.attempts import load_prices, resolve_pricing
from sandbox.gateway import GatewayConfig
from sandbox.models import ModelPricing, TieredRate

pytestmark = pytest.mark.network
MTOK = Decimal(1_000_000)


def rate(pricing: ModelPricing, key: str, tier: bool = False) -> Decimal:
    """The table's rate for `key` (USD per million tokens): the base one, or the highest tier's."""
    value = pricing.rates[key]
    if isinstance(value, TieredRate):
        return value.tiers[-1].price if tier else value.base
    return value


def test_an_anthropic_exchange_with_cache_reads_and_writes_costs_the_tables_arithmetic(gateway, anthropic_api):
    import genai_prices

    pricing = resolve_pricing("claude-sonnet-4-5", anthropic_api.url)  # a loopback URL: found by the model's name
    assert pricing is not None and pricing.source.startswith(f"genai-prices {genai_prices.__version__}")
    gw = gateway(pricing=pricing)
    anthropic_api.input_tokens, anthropic_api.cached_tokens, anthropic_api.cache_write_tokens = 100, 800, 50
    anthropic_api.output_tokens = 20
    assert gw.message(model="claude-sonnet-4-5").status == 200
    [line] = gw.exchanges()
    expected = (100 * rate(pricing, "input_mtok") + 800 * rate(pricing, "cache_read_mtok")
                + 50 * rate(pricing, "cache_write_mtok") + 20 * rate(pricing, "output_mtok")) / MTOK
    assert expected == Decimal("0.0010275")  # 300 + 240 + 187.5 + 300 micro-dollars at $3 / $0.30 / $3.75 / $15
    assert line.usage is not None and line.usage.input_tokens == 950
    assert line.cost_usd == pytest.approx(float(expected), rel=1e-12)
    library = genai_prices.calc_price(genai_prices.Usage(input_tokens=950, cache_read_tokens=800,
                                                         cache_write_tokens=50, output_tokens=20),
                                      "claude-sonnet-4-5", provider_id="anthropic")
    assert library.total_price == expected
    state = gw.state()
    assert state.cost_usd == pytest.approx(float(expected)) and state.unpriced_requests == 0


def test_openai_cached_prompt_tokens_are_charged_the_cached_rate_streamed_or_not(gateway, openai_api):
    pricing = resolve_pricing("gpt-4o", "https://api.openai.com/v1")
    assert pricing is not None and "openai/gpt-4o" in pricing.source
    gw = gateway(pricing=pricing)
    openai_api.input_tokens, openai_api.cached_tokens, openai_api.output_tokens = 1000, 600, 20
    assert gw.chat(model="gpt-4o").status == 200
    streamed = gw.stream("/v1/chat/completions", {"model": "gpt-4o", "stream": True,
                                                  "messages": [{"role": "user", "content": "hi"}]})
    assert streamed.status == 200
    expected = (400 * rate(pricing, "input_mtok") + 600 * rate(pricing, "cache_read_mtok")
                + 20 * rate(pricing, "output_mtok")) / MTOK
    assert expected == Decimal("0.00195")  # 1000 + 750 + 200 micro-dollars at $2.50 / $1.25 / $10
    lines = gw.exchanges()
    assert [line.cost_usd for line in lines] == [pytest.approx(float(expected))] * 2
    assert gw.state().cost_usd == pytest.approx(2 * float(expected))


def test_a_prompt_past_a_tier_pays_the_tier_rate_on_every_token(gateway, anthropic_api):
    pricing = resolve_pricing("claude-sonnet-4-5", None)
    assert pricing is not None and isinstance(pricing.rates["input_mtok"], TieredRate)
    gw = gateway(pricing=pricing)
    anthropic_api.input_tokens, anthropic_api.output_tokens = 250_000, 1_000
    assert gw.message(model="claude-sonnet-4-5").status == 200
    expected = (250_000 * rate(pricing, "input_mtok", tier=True) + 1_000 * rate(pricing, "output_mtok", tier=True)) / MTOK
    assert expected > (250_000 * rate(pricing, "input_mtok") + 1_000 * rate(pricing, "output_mtok")) / MTOK
    assert gw.exchanges()[0].cost_usd == pytest.approx(float(expected))


def test_without_a_price_every_answer_is_unpriced_never_free(gateway, openai_api):
    gw = gateway()
    assert gw.chat().status == 200 and gw.chat().status == 200
    assert [line.cost_usd for line in gw.exchanges()] == [None, None]
    state = gw.state()
    assert (state.unpriced_requests, state.cost_usd) == (2, 0.0)


def test_a_priced_answer_without_usage_is_unpriced(gateway, openai_api, tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-test": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}}))
    gw = gateway(pricing=load_prices(prices)["gpt-test"])
    openai_api.omit_usage = True  # a compatible server that reports no usage: the gateway cannot price it
    assert gw.chat().status == 200
    openai_api.omit_usage = False
    assert gw.chat().status == 200
    assert [line.cost_usd for line in gw.exchanges()] == [None, pytest.approx((100 * 1.0 + 20 * 2.0) / 1e6)]
    state = gw.state()
    assert state.unpriced_requests == 1 and state.cost_usd == pytest.approx(140 / 1e6)


def test_the_dollar_budget_refuses_the_request_after_the_one_that_spends_it(gateway, openai_api, tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-test": {"input_per_mtok": 1000, "output_per_mtok": 1000}}))
    gw = gateway(budget={"max_cost_usd": 0.30}, pricing=load_prices(prices)["gpt-test"])
    for spent in (0.12, 0.24, 0.36):  # 100 + 20 tokens at $1,000 per million: $0.12 each
        assert gw.chat().status == 200
        assert gw.state().cost_usd == pytest.approx(spent)
    refused = gw.chat()
    assert refused.status == 400 and refused.json["error"]["code"] == "budget_exhausted"
    assert "max_cost_usd" in refused.json["error"]["message"] and "$0.360000 spent of the attempt's $0.3" in \
        refused.json["error"]["message"]
    state = gw.state()
    assert (state.requests, state.refused_requests, state.budget_exhausted) == (3, 1, "max_cost_usd")
    lines = gw.exchanges()
    assert [line.outcome for line in lines] == ["ok", "ok", "ok", "budget_exhausted"]
    assert lines[-1].budget_exhausted == "max_cost_usd" and lines[-1].cost_usd is None
    assert len(openai_api.received) == 3


def test_concurrent_requests_cannot_run_past_a_dollar_budget(gateway, openai_api, tmp_path):
    """Eight requests at once: each may cost ~$0.32 at most (its bytes and output cap at $1,000 per million) and
    costs $0.12; beside the ones in flight none fits under $0.36, so they are sent one by one, and the spend stops
    at the three that reach the limit."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-test": {"input_per_mtok": 1000, "output_per_mtok": 1000}}))
    gw = gateway(budget={"max_cost_usd": 0.36, "max_output_tokens": 20}, pricing=load_prices(prices)["gpt-test"])
    openai_api.pieces = ["a", "b"]
    openai_api.event_pause_s = 0.05
    body = {"model": "gpt-test", "stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "hello " * 40}]}
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda _: gw.stream("/v1/chat/completions", body), range(8)))
    assert sorted(a.status for a in answers) == [200] * 3 + [400] * 5
    state = gw.state()
    assert state.cost_usd == pytest.approx(0.36) and state.budget_exhausted == "max_cost_usd"
    assert len(openai_api.received) == 3


def test_a_dollar_budget_without_a_price_is_refused_at_the_door(gateway, tmp_path):
    with pytest.raises(ValueError, match="max_cost_usd needs a price"):
        GatewayConfig(agent_token="attempt-token-1", admin_token="admin-token-12", log_path=tmp_path / "g.jsonl",
                      upstreams={"openai": {"base_url": "http://127.0.0.1:9/v1"}}, budget={"max_cost_usd": 1.0})
    from test_attempt_scope import _control, _open

    gw = gateway()
    _control(gw.url, "seal")
    refused = _open(gw.url, tmp_path / "next", max_cost_usd=1.0)
    assert refused.status == 400 and "needs a price" in refused.json["error"]["message"]
