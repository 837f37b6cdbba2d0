"""What `omnidr eval` is asked to run: the model, harness, capability, budget and judge, parsed from
the short spellings `make eval` passes, and checked before any attempt starts.

Model and judge spellings:
  scripted               the offline scripted model, speaking the harness's own API (demo and tests)
  scripted-openai        the scripted model as an OpenAI-compatible server (Chat Completions and
                         Responses); scripted-openai-chat without Responses; scripted-anthropic as an
                         Anthropic-compatible one (model only)
  offline-baseline       the offline lexical judge (judge only; the default)
  openai/NAME            api.openai.com with the key in OPENAI_API_KEY
  anthropic/NAME         api.anthropic.com with the key in ANTHROPIC_API_KEY (model only)
  NAME@BASE_URL          any OpenAI-compatible endpoint; key in OMNIDR_MODEL_API_KEY (model) or
                         OMNIDR_JUDGE_API_KEY (judge), optional for a loopback endpoint
  NAME@FAMILY+BASE_URL   the endpoint's API named (model only): anthropic+ (Anthropic Messages),
                         openai-chat+ (Chat Completions without /v1/responses), openai+ (the default)
A harness runs on any of them: when the endpoint speaks another API than the harness (Claude Code on an
OpenAI-compatible server, Codex on anthropic/NAME), the gateway translates.
Keys are read from the environment when used and never written to any file.
"""

import os
from typing import cast

from omnidr._options import OPENAI_BASE_URL, OPENAI_KEY_ENV, check_url, parse_judge_spec
from omnidr.attempts import is_loopback_url
from omnidr.errors import UserError
from omnidr.harness import CAPABILITIES, Endpoint, EndpointFamily, SystemSpec, offline_judge
from omnidr.harness import HARNESSES as REGISTRY
from sandbox.models import Budget

# every harness of the registry but `command`, which needs an image and a command line (`omnidr run`)
HARNESSES = tuple(name for name in REGISTRY if name != "command")
PROVIDERS = {
    "openai": (OPENAI_BASE_URL, OPENAI_KEY_ENV, "openai"),
    "anthropic": ("https://api.anthropic.com/v1", "ANTHROPIC_API_KEY", "anthropic"),
}
SCRIPTED = "scripted"
ENDPOINT_FAMILIES: tuple[EndpointFamily, ...] = ("openai", "openai-chat", "anthropic")
MODEL_KEY_ENV = "OMNIDR_MODEL_API_KEY"
# BUDGET=key=value,... -> Budget field
BUDGET_KEYS = {
    "iterations": "max_iterations", "output_tokens": "max_output_tokens", "total_tokens": "max_total_tokens",
    "tool_calls": "max_tool_calls", "wall_time": "wall_time_s", "attempts": "attempts_per_task",
    "upstream_retries": "upstream_retries", "cost": "max_cost_usd",
}


def parse_model(text: str | None, key_env: str | None = None) -> Endpoint:
    """The model of `--model` (the spellings in this module's docstring)."""
    text = (text or "").strip()
    if text in ("", SCRIPTED):
        return Endpoint.scripted()
    family = text[len(SCRIPTED) + 1:]
    if text.startswith(SCRIPTED + "-") and family in ENDPOINT_FAMILIES:
        return Endpoint.scripted(cast(EndpointFamily, family))
    if "@" in text:
        name, url = text.split("@", 1)
        if not name:
            raise UserError(f"model {text!r} has no model name before '@'; write NAME@BASE_URL")
        family, plus, rest = url.partition("+")
        if plus and family in ENDPOINT_FAMILIES:
            url = rest
        elif plus and not url.startswith(("http://", "https://")):
            raise UserError(f"model endpoint {url!r}: unknown API {family!r} before '+'; use "
                            + "+, ".join(ENDPOINT_FAMILIES) + "+")
        else:
            family = "openai"
        return Endpoint(spec=text, name=name, base_url=check_url(url, "model"), key_env=key_env or MODEL_KEY_ENV,
                        family=family)
    provider, _, name = text.partition("/")
    if provider in PROVIDERS and name:
        url, env, family = PROVIDERS[provider]
        return Endpoint(spec=text, name=name, base_url=url, key_env=key_env or env, family=family)
    raise UserError(f"unknown model {text!r}; use {SCRIPTED}, {SCRIPTED}-openai, {SCRIPTED}-anthropic, openai/NAME, "
                    "anthropic/NAME, or NAME@BASE_URL")


def parse_judge(text: str | None, key_env: str | None = None) -> Endpoint:
    """The judge of `--judge` (the spellings every command shares: omnidr._options.parse_judge_spec)."""
    judge = parse_judge_spec(text, key_env)
    if judge is None:
        return offline_judge()
    return Endpoint(spec=(text or "").strip(), name=judge.name, base_url=judge.base_url, key_env=judge.key_env,
                    family="openai")


def require_key(endpoint: Endpoint, what: str) -> None:
    """A real endpoint needs its key in the environment (a loopback one may run without)."""
    if endpoint.offline or endpoint.key_env is None or os.environ.get(endpoint.key_env):
        return
    if is_loopback_url(endpoint.base_url or ""):
        return
    raise UserError(f"the {what} endpoint {endpoint.base_url} needs its key in ${endpoint.key_env}; export it "
                    "(keys are read from the environment and never written to any artifact)")


def _first_problem(exc: ValueError) -> str:
    """The first problem a pydantic error names (`field: message`), else its first line."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError) and exc.errors():
        error = exc.errors()[0]
        return f"{'.'.join(map(str, error['loc']))}: {error['msg']}"
    return str(exc).splitlines()[0]


def parse_budget(text: str | None) -> tuple[str, Budget]:
    """`default`, or `key=value,...` over BUDGET_KEYS; returns (label, Budget)."""
    text = (text or "").strip()
    if text in ("", "default"):
        return "default", Budget()
    values: dict[str, float | int] = {}
    for item in text.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep or key not in BUDGET_KEYS:
            raise UserError(f"budget item {item.strip()!r} is not KEY=VALUE with KEY one of {', '.join(BUDGET_KEYS)}; "
                            "e.g. BUDGET=iterations=50,wall_time=900,attempts=2")
        try:
            values[BUDGET_KEYS[key]] = float(value) if key in ("wall_time", "cost") else int(value)
        except ValueError:
            raise UserError(f"budget {key}={value!r} is not a number") from None
    try:
        budget = Budget(**values)
    except ValueError as exc:
        raise UserError(f"budget {text!r} is out of range: {_first_problem(exc)[:160]}") from None
    return text, budget


def make_system(harness: str, capability: str, model: Endpoint, brief: bool = False) -> SystemSpec:
    if harness not in HARNESSES:
        raise UserError(f"unknown harness {harness!r}; choose one of {', '.join(HARNESSES)}")
    info = REGISTRY[harness]
    if info.settings:  # the direct harness: an input setting of the ablation matrix, checked by the registry
        info.check_capability(capability)
        if model.offline and not info.scripted:
            raise UserError(f"the scripted model does not drive the {harness} harness; give it a real model")
        return SystemSpec(harness=harness, capability=capability, model=model, brief=brief)
    if capability not in CAPABILITIES:
        raise UserError(f"unknown capability {capability!r}; choose one of {', '.join(CAPABILITIES)}")
    if capability not in info.capabilities:
        raise UserError(f"the {harness} harness runs at {', '.join(info.capabilities)} only; drop CAPABILITY "
                        "(the ladder's levels are for the reference harness)")
    if model.offline and not info.scripted:
        raise UserError(f"the scripted model does not drive the {harness} harness; give it a real model, "
                        "e.g. MODEL=NAME@BASE_URL")
    return SystemSpec(harness=harness, capability=capability, model=model, brief=brief)


def parse_system(text: str, default_model: Endpoint) -> SystemSpec:
    """`HARNESS[:CAPABILITY][@MODEL]`, e.g. `reference:video` or `reference:full@gpt-x@http://127.0.0.1:8000/v1`."""
    head, sep, model = text.partition("@")
    harness, _, capability = head.partition(":")
    return make_system(harness, capability or "full", parse_model(model) if sep else default_model)


def judge_settings(judge: Endpoint):
    """The evaluation stage's settings of a judge endpoint, None for the offline baseline."""
    from omnidr.evaluation import JudgeSettings

    if judge.offline:
        return None
    return JudgeSettings(base_url=judge.base_url, model=judge.name, api_key_env=judge.key_env or "OMNIDR_JUDGE_API_KEY")
