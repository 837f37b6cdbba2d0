"""The model gateway: the agent's only way to a model API.

It passes OpenAI Chat Completions, OpenAI Responses and Anthropic Messages requests (streamed or
not) through to a configured upstream with the real key, which only the gateway holds; enforces
the attempt's `Budget`; re-sends upstream 5xx, 429 and connection failures; and writes one
`sandbox.models.GatewayExchange` per exchange to gateway.jsonl. Run it with `python -m sandbox.gateway --config
PATH` (see README.md in this folder for the config and the endpoints).
"""

from typing import TYPE_CHECKING

from sandbox.gateway._config import ConfigError, GatewayConfig, UpstreamConfig, Upstreams, load_config
from sandbox.gateway._cost import Pricer

if TYPE_CHECKING:
    from sandbox.gateway._app import RunningGateway, create_app, serve, start_gateway

# The server (aiohttp) loads only when asked for: the host reads the gateway's models without it.
_SERVER = {"RunningGateway", "create_app", "serve", "start_gateway"}


def __getattr__(name: str):
    if name in _SERVER:
        from sandbox.gateway import _app

        return getattr(_app, name)
    raise AttributeError(f"module 'sandbox.gateway' has no attribute {name!r}")

__all__ = [
    "ConfigError",
    "GatewayConfig",
    "Pricer",
    "RunningGateway",
    "UpstreamConfig",
    "Upstreams",
    "create_app",
    "load_config",
    "serve",
    "start_gateway",
]
