"""The run's price for its model: the rates the gateway prices every exchange at, fixed when the run starts.

The host resolves them once (`omnidr.attempts.resolve_pricing`: the genai-prices table bundled with the installed
package, or the lab's `--prices FILE`), and they travel whole in the gateway's configuration and in the run's
records, so an archived run keeps the prices it was charged at even after the table moves on.

Rates use genai-prices' price keys (`input_mtok`, `cache_read_mtok`, `cache_write_mtok`, `output_mtok`, ...,
`web_searches_kcount`): US dollars per million tokens (per thousand for the `_kcount` keys). A rate may be tiered
the way providers charge long prompts: past a tier's `start` input tokens, the whole request pays the tier's rate.
"""

from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field


class PriceTier(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    start: int = Field(ge=0, description="Input tokens of the request above which this tier's rate applies.")
    price: Decimal = Field(ge=0, description="US dollars per unit of the key (per million tokens).")


class TieredRate(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    base: Decimal = Field(ge=0, description="US dollars per unit below the first tier.")
    tiers: list[PriceTier] = Field(description="Higher rates by request size, ascending by start.")


class ModelPricing(BaseModel):
    """What one model costs, and where that figure comes from."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    model: str = Field(description="The model name the rates are for (the run's model).")
    source: str = Field(description="Where the rates come from: `genai-prices VERSION (provider/model id)` or "
                                    "the `--prices` file and its sha256.")
    rates: dict[str, Decimal | TieredRate] = Field(
        description="genai-prices price key -> US dollars per million tokens (per thousand for `_kcount` keys).")
