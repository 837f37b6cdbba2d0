"""The run's price for its model, resolved once on the host when the run starts (`ModelPricing`).

Where prices come from, in order:
1. `--prices FILE`, the lab's own rates (negotiated prices, a self-hosted model at zero): a JSON object mapping a
   model name to US dollars per million tokens,
   `{"MODEL": {"input_per_mtok": 3.0, "cached_input_per_mtok": 0.3, "cache_write_per_mtok": 3.75,
   "output_per_mtok": 15.0}}`. `input_per_mtok` and `output_per_mtok` are required; a missing cached-input or
   cache-write rate falls back to the input rate (genai-prices charges a kind without a rate at the input rate).
2. genai-prices, Pydantic's maintained price table, as bundled in the installed package (never updated at run
   time, so a run is priced the same offline as online): the provider is found from the endpoint's URL where
   the table knows it (api.openai.com, api.anthropic.com, ...), else from the model name; the prices in force
   today are taken (a model's prices may change by date).
3. Neither knows the model: the run is unpriced. Its exchanges have no cost (`cost_usd` None), never $0, and a
   dollar budget is refused before any attempt starts.
"""

import hashlib
import json
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path

from omnidr.errors import UserError
from sandbox.models import ModelPricing, PriceTier, TieredRate

PRICE_FILE_KEYS = {"input_per_mtok": "input_mtok", "cached_input_per_mtok": "cache_read_mtok",
                   "cache_write_per_mtok": "cache_write_mtok", "output_per_mtok": "output_mtok"}
"""`--prices` field -> genai-prices price key."""
REQUIRED_KEYS = ("input_per_mtok", "output_per_mtok")
_TOKEN_UNITS = ("_mtok", "_kcount")  # genai-prices keys the gateway's usage can fill (tokens, web searches)


def load_prices(path: Path) -> dict[str, ModelPricing]:
    """The models of a `--prices` file, each as a `ModelPricing`; a bad file is one `UserError` line."""
    try:
        raw = Path(path).read_bytes()
        data = json.loads(raw)
    except OSError as exc:
        raise UserError(f"--prices {path}: cannot read it ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise UserError(f"--prices {path}: not JSON ({exc}); write {{\"MODEL\": {{\"input_per_mtok\": 3.0, "
                        "\"output_per_mtok\": 15.0}}") from None
    if not isinstance(data, dict) or not data:
        raise UserError(f"--prices {path}: expected an object mapping model names to rates, e.g. "
                        "{\"MODEL\": {\"input_per_mtok\": 3.0, \"output_per_mtok\": 15.0}}")
    source = f"--prices {Path(path).name} (sha256 {hashlib.sha256(raw).hexdigest()[:12]})"
    return {str(model): _file_pricing(str(model), rates, path, source) for model, rates in data.items()}


def _file_pricing(model: str, rates: object, path: Path, source: str) -> ModelPricing:
    if not isinstance(rates, dict):
        raise UserError(f"--prices {path}: {model!r} maps to {rates!r}, not an object of rates")
    unknown = sorted(set(rates) - set(PRICE_FILE_KEYS))
    if unknown:
        raise UserError(f"--prices {path}: {model!r} has unknown rate(s) {', '.join(unknown)}; use "
                        f"{', '.join(PRICE_FILE_KEYS)}")
    missing = [k for k in REQUIRED_KEYS if k not in rates]
    if missing:
        raise UserError(f"--prices {path}: {model!r} lacks {' and '.join(missing)} (US dollars per million tokens)")
    out: dict[str, Decimal | TieredRate] = {}
    for key, value in rates.items():
        try:
            rate = Decimal(str(value)) if isinstance(value, int | float) and not isinstance(value, bool) else None
        except InvalidOperation:
            rate = None
        if rate is None or not rate.is_finite() or rate < 0:
            raise UserError(f"--prices {path}: {model!r} {key} is {value!r}; give a number of US dollars per "
                            "million tokens, 0 or more")
        out[PRICE_FILE_KEYS[key]] = rate
    return ModelPricing(model=model, source=source, rates=out)


def resolve_pricing(model: str, base_url: str | None, overrides: dict[str, ModelPricing] | None = None,
                    now: datetime | None = None) -> ModelPricing | None:
    """The price of `model` served at `base_url`: the override for it, else genai-prices' bundled table, else None
    (unpriced)."""
    if overrides and model in overrides:
        return overrides[model]
    import genai_prices
    from genai_prices.data_snapshot import get_snapshot
    from genai_prices.types import TieredPrices

    snapshot = get_snapshot()
    try:
        provider, info = snapshot.find_provider_model(model, None, None, base_url)
    except LookupError:
        try:  # a URL the table does not know (a proxy, a loopback relay): the model name alone
            provider, info = snapshot.find_provider_model(model, None, None, None)
        except LookupError:
            return None
    price = info.get_prices(now or datetime.now(UTC))
    rates: dict[str, Decimal | TieredRate] = {}
    for key, value in vars(price).items():
        if value is None or key.startswith("_") or not key.endswith(_TOKEN_UNITS):
            continue
        if isinstance(value, TieredPrices):
            rates[key] = TieredRate(base=value.base, tiers=[PriceTier(start=t.start, price=t.price)
                                                            for t in value.tiers])
        else:
            rates[key] = Decimal(value)
    if not rates:
        return None
    return ModelPricing(model=model, source=f"genai-prices {genai_prices.__version__} ({provider.id}/{info.id})",
                        rates=rates)
