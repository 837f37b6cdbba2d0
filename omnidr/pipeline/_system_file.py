"""`omnidr eval --config FILE` (and `omnidr compare --config FILE`): a system kept in a TOML file, as a lab keeps its
systems under version control. The file gives the options of `omnidr eval` in tables that follow `SystemConfig`
(agent, budget, web, judge, evaluator), in the command line's own spellings; `system_config` builds the one
`SystemConfig` from them, whether they came from the file or from the command line.

    evaluator = "docker"                     # --evaluator
    [agent]                                  # harness, capability, model, model_key_env: --harness, ...
    [budget]                                 # iterations = 50, wall_time = 900, ...: --budget iterations=50,...
    [web]                                    # mode (--web), search_door, search_key_env, provider_tools,
                                             # outside_network, allow_net, upstream_ca, model_policy, denylist
    [judge]                                  # model (--judge), key_env (--judge-key-env)

The rule: an option given on the command line (or by its environment variable, e.g. OMNIDR_MODEL) wins over the
file, and the file wins over the option's default. Relative `upstream_ca` paths are read from the file's folder.
A file that cannot be read, is not TOML, or has an unknown key or a value of the wrong type is a one-line
UserError (exit 2) that names the key.
"""

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import click
from click.core import ParameterSource
from pydantic import BaseModel, ConfigDict, ValidationError

from omnidr._options import EVALUATORS
from omnidr.errors import UserError
from omnidr.harness import SystemConfig, SystemSpec, WebPolicy
from sandbox.models import ModelPolicy

from ._specs import parse_budget, parse_judge, parse_model

EXAMPLE = "examples/system.toml"


class _Table(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class AgentTable(_Table):
    """[agent]: --harness, --capability, --model, --model-key-env."""

    harness: str | None = None
    capability: str | None = None
    model: str | None = None
    model_key_env: str | None = None


class BudgetTable(_Table):
    """[budget]: the items of --budget KEY=VALUE,... (BUDGET_KEYS), each a number."""

    iterations: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    tool_calls: int | None = None
    cost: float | int | None = None
    wall_time: float | int | None = None
    attempts: int | None = None
    upstream_retries: int | None = None


class WebTable(_Table):
    """[web]: --web (mode), --search-door, --search-key-env, --provider-tools, --outside-network, --allow-net,
    --upstream-ca, --model-policy; and the hosts the egress proxy answers 403 (denylist)."""

    mode: Literal["replay", "live", "record"] | None = None
    search_door: str | None = None
    search_key_env: str | None = None
    provider_tools: str | None = None
    outside_network: str | None = None
    allow_net: list[str] | None = None
    upstream_ca: list[str] | None = None
    model_policy: ModelPolicy | None = None
    denylist: list[str] | None = None


class JudgeTable(_Table):
    """[judge]: --judge (model), --judge-key-env (key_env)."""

    model: str | None = None
    key_env: str | None = None


class SystemFile(_Table):
    """A system config file, as written: every key optional, each the command-line option it stands for."""

    agent: AgentTable = AgentTable()
    budget: BudgetTable | None = None
    web: WebTable = WebTable()
    judge: JudgeTable = JudgeTable()
    evaluator: Literal[EVALUATORS] | None = None  # type: ignore[valid-type]

    def options(self, folder: Path) -> dict[str, Any]:
        """The options the file gives, by their Click names."""
        a, w, j = self.agent, self.web, self.judge
        given: dict[str, Any] = {
            "harness": a.harness, "capability": a.capability, "model": a.model, "model_key_env": a.model_key_env,
            "web": w.mode, "search_door": w.search_door, "search_key_env": w.search_key_env,
            "provider_tools": w.provider_tools, "outside_network": w.outside_network,
            "allow_net": None if w.allow_net is None else tuple(w.allow_net),
            "upstream_ca": None if w.upstream_ca is None else tuple(folder / p for p in w.upstream_ca),
            "model_policy": w.model_policy, "denylist": None if w.denylist is None else tuple(w.denylist),
            "judge": j.model, "judge_key_env": j.key_env, "evaluator": self.evaluator,
        }
        if self.budget is not None:
            items = self.budget.model_dump(exclude_none=True)
            given["budget"] = ",".join(f"{k}={v}" for k, v in items.items()) or "default"
        return {k: v for k, v in given.items() if v is not None}


TABLES: dict[str, type[BaseModel]] = {"": SystemFile, "agent": AgentTable, "budget": BudgetTable, "web": WebTable,
                                       "judge": JudgeTable}


def _where(loc: tuple) -> str:
    return ".".join(str(p) for p in loc)


def _problem(path: Path, exc: ValidationError) -> UserError:
    """One line for the first thing wrong in the file: the key, what is wrong, how to fix it."""
    error = exc.errors()[0]
    key, kind = _where(error["loc"]), error["type"]
    if kind == "extra_forbidden":
        table, _, _name = key.rpartition(".")
        known = ", ".join(TABLES.get(table, SystemFile).model_fields)
        return UserError(f"{path}: unknown key {key!r}; {'[' + table + ']' if table else 'the file'} takes {known} "
                         f"(see {EXAMPLE})")
    got = error.get("input")
    return UserError(f"{path}: {key}: {error['msg'].lower()}, not {got!r}; fix the value (see {EXAMPLE})")


def read_system_file(path: Path) -> dict[str, Any]:
    """The options a system config file gives, by their Click names (see the module docstring)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise UserError(f"--config {path}: no such file; give a TOML system config (e.g. {EXAMPLE})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"--config {path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not TOML ({exc}); fix the syntax (see {EXAMPLE})") from None
    try:
        options = SystemFile.model_validate(data).options(path.parent)
    except ValidationError as exc:
        raise _problem(path, exc) from None
    _check_values(path, options)
    return options


def _check_values(path: Path, options: Mapping[str, Any]) -> None:
    """Each spelling the file gives read as its option reads it, so that a bad one names the file and its key."""
    from omnidr.attempts import parse_allow_nets, parse_provider_tools

    checks = {"model": ("agent.model", lambda v: parse_model(v, options.get("model_key_env"))),
              "budget": ("budget", parse_budget),
              "provider_tools": ("web.provider_tools", parse_provider_tools),
              "allow_net": ("web.allow_net", parse_allow_nets),
              "judge": ("judge.model", lambda v: parse_judge(v, options.get("judge_key_env")))}
    for name, (key, check) in checks.items():
        if name in options:
            try:
                check(options[name])
            except UserError as exc:
                raise UserError(f"{path}: {key}: {exc}") from None


GIVEN = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def with_system_file(ctx: click.Context, options: Mapping[str, Any]) -> dict[str, Any]:
    """The command's options with those of its `--config` file (`config_file`) filled in: an option given on the
    command line or by its environment variable wins over the file, which wins over the option's default."""
    out = dict(options)
    path = out.pop("config_file", None)
    if path is None:
        return out
    for name, value in read_system_file(path).items():
        if ctx.get_parameter_source(name) not in GIVEN:
            out[name] = value
    return out


def system_config(agent: SystemSpec, options: Mapping[str, Any]) -> SystemConfig:
    """The one `SystemConfig` of `agent` under the eval options (by their Click names; the web options may be
    absent: replay, the offline index, the mode's provider-side tools)."""
    from omnidr.attempts import parse_allow_nets, parse_provider_tools, parse_search_door
    from omnidr.harness import PROXY_MODES

    mode = options.get("web") or "replay"
    proxy_mode = PROXY_MODES[mode]
    door = options.get("search_door")
    label, budget = parse_budget(options.get("budget"))
    web = WebPolicy(
        mode=mode, provider_tools=parse_provider_tools(options.get("provider_tools"), proxy_mode),
        search_door=parse_search_door(door, options.get("search_key_env"), proxy_mode) if door else None,
        outside_network=options.get("outside_network"), upstream_ca=tuple(options.get("upstream_ca") or ()),
        allow_nets=parse_allow_nets(options.get("allow_net") or ()), model_policy=options.get("model_policy") or "rewrite",
        denylist=tuple(options.get("denylist") or ()))
    return SystemConfig(agent=agent, budget=budget, budget_label=label, web=web,
                        judge=parse_judge(options.get("judge"), options.get("judge_key_env")),
                        evaluator=options.get("evaluator") or "docker")


CONFIG_OPTION = click.option(
    "--config", "config_file", type=click.Path(path_type=Path), default=None, metavar="TOML",
    help=f"A system config file (agent, budget, web, judge, evaluator; e.g. {EXAMPLE}). Options given on the "
         "command line (or by their environment variables) win over the file; the file wins over the defaults.")
