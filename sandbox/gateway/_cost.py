"""Dollars per exchange: an exchange's usage priced at the run's price for its model.

The arithmetic is genai-prices' own (`ModelPrice.calc_price`), fed the rates the host resolved when the run started
(`sandbox.models.ModelPricing`), so the gateway never reads a price table or the network. genai-prices counts
`input_tokens` with the cached ones included, as `TokenUsage` does: the uncached part pays `input_mtok`, the cache
reads `cache_read_mtok`, the cache writes `cache_write_mtok` (each kind the table lacks falls back to the input
rate), the output (reasoning included) `output_mtok`, and the provider's own web searches `web_searches_kcount`.
"""

from decimal import Decimal

from sandbox.models import ModelPricing, TieredRate, TokenUsage


class Pricer:
    """Prices usages at one model's rates (genai-prices is imported only for a priced run)."""

    def __init__(self, pricing: ModelPricing) -> None:
        from genai_prices.types import ModelPrice, Tier, TieredPrices

        def value(rate: Decimal | TieredRate) -> Decimal | TieredPrices:
            if isinstance(rate, TieredRate):
                return TieredPrices(base=rate.base, tiers=[Tier(start=t.start, price=t.price) for t in rate.tiers])
            return rate

        self.pricing = pricing
        self._price = ModelPrice(**{key: value(rate) for key, rate in pricing.rates.items()})

    def cost(self, usage: TokenUsage) -> Decimal:
        """US dollars for one answer's usage."""
        from genai_prices import Usage

        counts = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
        if usage.cache_read_input_tokens:
            counts["cache_read_tokens"] = usage.cache_read_input_tokens
        if usage.cache_creation_input_tokens:
            counts["cache_write_tokens"] = usage.cache_creation_input_tokens
        if usage.server_search_requests:
            counts["web_searches"] = usage.server_search_requests
        return self._price.calc_price(Usage(**counts))["total_price"]

    def bound(self, input_tokens: int, output_tokens: int) -> Decimal:
        """The most a request of at most `input_tokens` in and `output_tokens` out may cost: every input token at
        the dearer of the input and cache-write rates (a provider may write the whole prompt to its cache)."""
        plain = self.cost(TokenUsage(input_tokens=input_tokens, output_tokens=output_tokens))
        written = self.cost(TokenUsage(input_tokens=input_tokens, output_tokens=output_tokens,
                                       cache_creation_input_tokens=input_tokens))
        return max(plain, written)
