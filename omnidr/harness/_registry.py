"""The one list of harnesses, and `run_system`, which runs a system with any of them.

Each entry says what the rest of the project needs to know about a harness: the model API it speaks
to the gateway (any upstream serves it: the gateway translates, see sandbox/gateway/_translate.py), the image it runs in, where its native logs are, the capability levels it supports,
how the research tools reach it, and whether the offline scripted model can drive it. `omnidr run`,
`omnidr eval` and `omnidr compare` read this table instead of keeping their own lists; the native-log
globs are the trajectory stage's (`omnidr.trajectory.NATIVE_LOG_GLOBS`).
"""

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from omnidr._lock import folder_lock
from omnidr.attempts import (
    Harness,
    HostPolicy,
    LocalExecutor,
    RayExecutor,
    RetryPolicy,
    SandboxLimits,
    SpendCap,
    Upstream,
    web_closed,
)
from omnidr.errors import UserError
from omnidr.trajectory import NATIVE_LOG_GLOBS
from sandbox.models import (
    API_FAMILY,
    ModelApi,
    ModelPricing,
    ProviderToolsPolicy,
    translation_label,
)

from ._base import CommandHarness
from ._claude_code import ClaudeCodeHarness
from ._codex import CodexHarness
from ._config import Endpoint, EndpointFamily, SystemConfig, SystemSpec
from ._direct import DirectHarness
from ._openclaw import OpenClawHarness
from ._reference import (
    CAPABILITIES,
    NATIVE_LOG,
    SCRIPTED_MODEL,
    SCRIPTED_NOTE,
    ReferenceHarness,
    reference_argv,
    search_index,
    start_scripted_model,
    workflow_args,
)
from ._skills import setup_from

Family = Literal["openai", "anthropic"]


def _ignore(*_args) -> None:
    """A callback that hears nothing."""


def endpoint_upstream(endpoint_family: str) -> tuple[Family, bool]:
    """The gateway's upstream family for an endpoint's API, and whether it serves /v1/responses."""
    return ("anthropic" if endpoint_family == "anthropic" else "openai"), endpoint_family != "openai-chat"


@dataclass(frozen=True)
class HarnessInfo:
    """What one harness is."""

    name: str
    api: ModelApi  # the model API the harness speaks to the gateway
    image: str | None  # image folder under images/ (None: the user names an image)
    log_globs: tuple[str, ...]  # native logs under the attempt's harness-logs folder, best first
    capabilities: tuple[str, ...]  # capability levels (paper App. F.5) it can run at
    skills: str  # how the research tools reach the agent
    scripted: bool  # the offline scripted model drives it (demo and tests)
    # (image_tag, capability, search, hp, provider_search) -> adapter; provider_search: the run lets the model
    # provider search the web (provider-side tools policy not `deny`), so the CLI offers its built-in search
    make: Callable[..., Harness] | None = field(repr=False, default=None)  # None: the command harness
    note: str = ""
    settings: bool = False  # its capability is an input setting of the mcq ablation matrix (InputSetting), not a level

    def webless(self, capability: str) -> bool:
        """Whether a system of this harness at `capability` has no web, so its doors close it (`run_system`): a
        capability below text_web (App. F.5's lower rungs, calibration's R1), or a harness of one tool-free
        request (paper 004)."""
        return self.settings or web_closed(capability)

    def check_capability(self, capability: str) -> None:
        """UserError (one line) when this harness cannot run at `capability`."""
        if self.settings:
            from omnidr.benchmark import InputSetting

            try:
                InputSetting.parse(capability)
            except ValueError as exc:
                raise UserError(f"the {self.name} harness takes an input setting: {exc}") from None
        elif capability not in self.capabilities:
            raise UserError(f"the {self.name} harness runs at {', '.join(self.capabilities)} only, not {capability!r}")

    @property
    def family(self) -> Family:
        """The API family of `api`: the upstream it needs no translation on."""
        return API_FAMILY[self.api]

    def translation(self, endpoint_family: str | None) -> str | None:
        """The gateway's translation on an endpoint of `endpoint_family` (None: the harness's own), e.g.
        `anthropic-messages->openai-chat`; None when the endpoint speaks the harness's API."""
        if endpoint_family is None:
            return None
        family, responses_api = endpoint_upstream(endpoint_family)
        return translation_label(self.api, {family: responses_api})


def _reference(image: str, capability: str, search: list[dict], hp, provider_search: bool = False) -> Harness:
    del provider_search  # the reference agent has no provider-side tools
    return ReferenceHarness(capability, image=image, search=search, extra_args=workflow_args(hp))


def _claude(image: str, capability: str, search: list[dict], hp, provider_search: bool = False) -> Harness:
    # below text_web its own page reader goes too (the proxy denies its fetches anyway: the door enforces)
    return ClaudeCodeHarness(image_ref=image, web_search=provider_search, web_fetch=not web_closed(capability),
                             skills=setup_from(capability, search, hp))


def _codex(image: str, capability: str, search: list[dict], hp, provider_search: bool = False) -> Harness:
    return CodexHarness(image_ref=image, web_search=provider_search, skills=setup_from(capability, search, hp))


def _direct(image: str, setting: str, _search: list[dict], _hp, provider_search: bool = False) -> Harness:
    del provider_search  # one request, no tools of any kind (paper 004, Sec. 4.1)
    return DirectHarness(image_ref=image, setting=setting)


def _openclaw(image: str, _capability: str, _search: list[dict], _hp, provider_search: bool = False) -> Harness:
    del provider_search  # its image is not built here; its web tools are its own
    return OpenClawHarness(image_ref=image)


NO_SKILLS = "its built-in tools ({}); the project's research skills are not installed in its image yet"
SKILLS = "its built-in tools ({}) and the research skills: `omnidr-skill` in its shell, SKILL.md files in {}"

HARNESSES: dict[str, HarnessInfo] = {h.name: h for h in (
    HarnessInfo("reference", "chat_completions", "reference", (NATIVE_LOG, "config.json", "evidence.json"), CAPABILITIES,
                "its own tools (sandbox/reference_agent)", True, _reference),
    HarnessInfo("claude-code", "messages", "claude-code", tuple(NATIVE_LOG_GLOBS["claude-code"]), CAPABILITIES,
                SKILLS.format("Bash, Read, Write, WebFetch", "$CLAUDE_CONFIG_DIR/skills"), True, _claude),
    HarnessInfo("codex", "responses", "codex", tuple(NATIVE_LOG_GLOBS["codex"]), CAPABILITIES,
                SKILLS.format("exec_command, view_image", "$CODEX_HOME/skills and AGENTS.md"), True, _codex),
    HarnessInfo("direct", "chat_completions", "reference", (), ("full",),
                "none: one request per question with the prepared frames, subtitles and audio (paper 004)", True,
                _direct, note="multiple-choice snapshots only; its capability is the input setting, e.g. "
                "video+subtitles-64f-full", settings=True),
    HarnessInfo("openclaw", "chat_completions", "openclaw", tuple(NATIVE_LOG_GLOBS["openclaw"]), ("full",),
                NO_SKILLS.format("read, write, web_fetch"), False, _openclaw, note="its image needs the npm registry"),
    HarnessInfo("command", "chat_completions", None, (), ("full",), "whatever the image holds", False, None,
                note="any image and command, given with --image and after `--`"),
)}


def harness_info(name: str) -> HarnessInfo:
    if name not in HARNESSES:
        raise UserError(f"unknown harness {name!r}; choose one of {', '.join(HARNESSES)}")
    return HARNESSES[name]


@dataclass
class SystemRun:
    """What `run_system` did: attempt records per task, and whether the scripted model stood in."""

    records: dict = field(default_factory=dict)  # task id -> list[AttemptRecord]
    scripted: bool = False
    model: str = ""
    note: str | None = None
    translation: str | None = None  # the gateway's API translation, e.g. anthropic-messages->openai-chat


@dataclass(frozen=True)
class SystemRunOptions:
    """How a system's run is placed, paced and heard: everything `run_system` takes besides the system
    (`SystemConfig`) itself."""

    tasks: Sequence[str] | None = None  # task ids; None: every task of the snapshot
    parallel: int = 1  # tasks whose attempts run at once
    executor: LocalExecutor | RayExecutor | None = None  # where the attempts run; None: threads here
    wait: bool = False  # another driver holds the run folder: wait for it instead of stopping
    host: HostPolicy | None = None  # start slots, infra backoff, stop rule, stall timeout
    prices: dict[str, ModelPricing] | None = None  # `--prices`: rates before genai-prices' table
    spend: SpendCap | None = None  # `--max-cost`: what this invocation may spend
    max_connections: int | None = None  # upstream requests in flight at once per upstream (None: the default)
    limits: SandboxLimits | None = None  # the agent container's limits; None: SandboxLimits()
    retry: RetryPolicy | None = None  # which failures earn another attempt; None: RetryPolicy()
    upstreams: Sequence[Upstream] = ()  # the command harness's model upstreams (its model has no endpoint)
    gateway_backoff_s: float = 1.0  # the gateway's first retry delay after an upstream failure
    scripts_dir: Path | None = None  # other scripts for the scripted model than its image's (`omnidr author`)
    on_attempt: Callable = _ignore  # hears of each attempt once it ended
    on_note: Callable[[str], None] = print  # hears the notes a user should read
    on_start: Callable[[str, int], None] = _ignore  # hears of each attempt (task id, number) as it starts
    on_task: Callable[[str, list], None] = _ignore  # hears of each task whose attempts are over


def run_system(snapshot: Path, run_dir: Path, config: SystemConfig,
               options: SystemRunOptions = SystemRunOptions()) -> SystemRun:
    """Run the system `config` over `options.tasks` of `snapshot` (all when None) into `run_dir`.

    With a served model (`config.agent.model.base_url`, an API of its `family`, None: the harness's own, e.g.
    https://api.openai.com/v1) the gateway forwards to it with the key from the host variable `key_env`. With the
    offline one (`Endpoint.scripted()`), the scripted model is started on its own Docker network and
    stands in (model "scripted-demo"; the note is passed to `on_note` and returned), speaking only the
    `family` API when one is given; only harnesses whose entry says `scripted` can be driven by
    it. When the endpoint speaks another API than the harness, the gateway translates (`SystemRun.translation`);
    provider-side tools cannot cross a translation, so opening them there is refused. The `command` harness runs
    `agent.image` with `agent.command` on `options.upstreams`. Defaults: the snapshot's protocol budget when the
    budget is `default`, `SandboxLimits()`, `RetryPolicy()`, replay mode (the snapshot's web corpus), no denylist
    beyond the benchmark's release hosts (`RELEASE_DENYLIST`), and the proxy mode's provider-tools policy (deny in
    replay). A loopback model URL is reached through a relay on the host (see omnidr.attempts._relay);
    `options.executor` places the attempts (default: threads here). With `agent.brief`, each task's instruction ends
    with its evidence brief (calibration's R3). `options.host` (a `HostPolicy`) sets the start slots, the infra
    retries' backoff, the stop rule and the stall timeout. Every exchange is priced at the model's price
    (`options.prices`, a `--prices` file's models, else genai-prices' table; see omnidr.attempts._prices);
    `options.spend` (`--max-cost`) caps what this invocation spends; `options.max_connections` the upstream requests
    in flight at once per upstream over all the run's gateways (omnidr.attempts._limiter). `options.scripts_dir`
    gives the scripted model other scripts than the ones its image carries (`omnidr author` writes one per stage).
    `run.json` records `config` whole."""
    from omnidr.attempts import (
        DEFAULT_MAX_CONNECTIONS,
        LOCAL_EXECUTOR,
        RunConfig,
        RunOptions,
        default_provider_tools,
        open_run,
        relay_loopback_urls,
        resolve_pricing,
        run_attempts,
        run_labels,
    )
    from omnidr.benchmark import RELEASE_DENYLIST, open_snapshot
    from omnidr.images import docker_client
    from sandbox.models import Budget

    agent, web, o = config.agent, config.web, options
    harness, capability, endpoint = agent.harness, agent.capability, agent.model
    info = harness_info(harness)
    info.check_capability(capability)
    snap = open_snapshot(Path(snapshot))
    if not snap.ok:
        raise UserError(f"{snapshot}: the snapshot does not load; run `omnidr snapshot validate {snapshot}`")
    check_kind(info, snap, capability)
    task_ids = _task_ids(snap, o.tasks)
    if endpoint.offline and not info.scripted and not o.upstreams:
        raise UserError(f"the scripted model does not drive the {harness} harness; give it a model endpoint")
    if harness == "command" and not (agent.image and agent.command):
        raise UserError("the command harness needs --image IMAGE and a command after `--`")
    proxy_mode, provider_tools = _web_doors(info, capability, web.proxy_mode, web.provider_tools, o.on_note)
    denylist = list(dict.fromkeys([*RELEASE_DENYLIST, *web.denylist]))
    translation = None if harness == "command" else info.translation(endpoint.family)
    _check_translation(translation, provider_tools)
    provider_tools = provider_tools or default_provider_tools(proxy_mode)
    upstream_family, responses_api = endpoint_upstream(endpoint.family or info.family)
    given = list(o.upstreams)
    if endpoint.base_url:
        given.insert(0, Upstream(family=upstream_family, base_url=endpoint.base_url.rstrip("/"),
                                 key_env=endpoint.key_env, responses_api=responses_api))
    check_keys(given)
    budget = config.budget or snap.default_budget() or Budget()
    # the model's price, fixed for the run: the model name is the one `out.model` gets below
    pricing = resolve_pricing(endpoint.name, given[0].base_url if given else None, o.prices)
    _check_dollars_countable(endpoint.name, pricing, budget, o.spend)
    # one driver per run folder: a second one stops here (or waits), before any image, relay or container
    with folder_lock(Path(run_dir), wait=o.wait, on_wait=o.on_note):
        built = _built_images(info)
        client = docker_client()
        warn_dns_exposure(client, o.on_note)
        image = _agent_image(client, info, harness, agent.image, built)
        out = SystemRun(translation=translation, model=endpoint.name)
        if translation:
            o.on_note(f"the {harness} harness speaks another API than its model endpoint: the gateway translates "
                      f"{translation}")
        scripted = None
        relays: list = []
        upstreams = list(given)
        network = web.outside_network or "bridge"
        if not upstreams:
            out.scripted, out.note = True, SCRIPTED_NOTE
            o.on_note(SCRIPTED_NOTE)
            # scripts of its own answer unlike the shared ones: a name of its own on the shared network
            alias = f"upstream-{secrets.token_hex(4)}" if o.scripts_dir is not None else None
            scripted = start_scripted_model(client, web.outside_network, image=built["gateway"].tag,
                                            api=endpoint.family or "all", labels=run_labels(Path(run_dir)),
                                            alias=alias, scripts_dir=o.scripts_dir)
            upstreams = [Upstream(family=upstream_family, base_url=scripted.base_url, responses_api=responses_api)]
            network = scripted.network
        try:
            reach, relays = relay_loopback_urls(client, [u.base_url for u in upstreams], network)
            if scripted is None:  # before the run folder is made: a URL that does not answer leaves nothing behind
                check_reach(client, built["gateway"].tag, network, upstreams, reach)
            # the offline index lists the snapshot's pages in every mode; on the live web they are fetched live
            pages = snap.corpus.pages if snap.corpus else []
            if harness == "command":
                adapter: Harness = CommandHarness(image_ref=image, argv=list(agent.command))
            elif info.make is None:
                raise UserError(f"the {harness} harness has no adapter")
            else:
                adapter = info.make(image, capability, search_index(pages, denylist), snap.hyperparameters,
                                    provider_search=provider_tools.web_search != "deny" and not translation)
            run_config = RunConfig(
                snapshot=str(Path(snapshot).absolute()), tasks=task_ids, harness=harness, agent_image=image,
                command=_agent_command(agent, snap.hyperparameters), model=out.model, upstreams=upstreams,
                budget=budget, limits=o.limits or SandboxLimits(), retry=o.retry or RetryPolicy(),
                proxy_mode=proxy_mode, denylist=denylist, gateway_image=built["gateway"].tag,
                egress_image=built["egress"].tag, outside_network=network, evidence_brief=agent.brief,
                provider_tools=provider_tools, search_door=web.search_door,
                upstream_ca=[str(Path(c).resolve()) for c in web.upstream_ca], allow_nets=list(web.allow_nets),
                capability=None if harness == "command" else capability, model_policy=web.model_policy,
                pricing=pricing, system=config.model_dump(mode="json"),
            )
            if not run_config.offline and proxy_mode == "replay":
                o.on_note(f"provider-side tools are open ({provider_tools}): the model provider may search the live "
                          "web, so this run is not offline although the proxy replays the snapshot's corpus")
            open_run(Path(run_dir), run_config)  # refuses a changed configuration before any work
            run_options = RunOptions(on_attempt=o.on_attempt, on_start=o.on_start, on_task=o.on_task,
                                     gateway_backoff_s=o.gateway_backoff_s, parallel=o.parallel,
                                     executor=o.executor or LOCAL_EXECUTOR, reach=reach, host=o.host, spend=o.spend,
                                     max_connections=o.max_connections or DEFAULT_MAX_CONNECTIONS)
            out.records = run_attempts(client, Path(run_dir), run_config, snap, adapter, run_options)
        finally:
            for relay in relays:
                relay.close()
            if scripted is not None:
                scripted.stop()
        return out


def _agent_command(agent: SystemSpec, hyperparameters) -> list[str]:
    """The command the run records for its agent: the command harness's own, the reference agent's, else the name."""
    if agent.harness == "command":
        return list(agent.command)
    if agent.harness == "reference":
        return reference_argv(agent.capability, agent.model.name, workflow_args(hyperparameters))
    return [agent.harness]


def _check_translation(translation: str | None, provider_tools) -> None:
    """Provider-side tools cannot cross a translation between the harness's API and the endpoint's."""
    if translation and provider_tools is not None and provider_tools.web_search != "deny":
        raise UserError(f"provider-side tools ({provider_tools}) cannot cross the gateway's {translation} "
                        "translation; drop --provider-tools, or give the model an endpoint of the harness's own API")


def _built_images(info: HarnessInfo) -> dict:
    """The gateway's, the egress proxy's and the harness's images, built (or found), by name."""
    from omnidr.images import build_images

    names = ["gateway", "egress"] + ([info.image] if info.image else [])
    built = {b.name: b for b in build_images(names)}
    missing = [n for n, b in built.items() if not b.tag]
    if missing:
        raise UserError(f"image(s) {', '.join(missing)} could not be built: {built[missing[0]].reason}")
    return built


def _task_ids(snap, tasks: Sequence[str] | None) -> list[str]:
    """The tasks asked for (all the snapshot's when None), each one the snapshot has."""
    task_ids = list(tasks or snap.tasks)
    unknown = [t for t in task_ids if t not in snap.tasks]
    if unknown:
        raise UserError(f"unknown task id(s): {', '.join(unknown)}; the snapshot has {', '.join(snap.tasks)}")
    return task_ids


def _web_doors(info: HarnessInfo, capability: str, proxy_mode, provider_tools,
               on_note: Callable[[str], None]) -> tuple:
    """The proxy mode (default replay) and provider-tools policy the run gets: a capability without web closes both."""
    proxy_mode = proxy_mode if proxy_mode is not None else "replay"
    if info.webless(capability):  # the doors close the web, whatever the harness is told and whatever was asked
        # said only when a web was asked for: the offline replay default closing quietly is no news
        if proxy_mode not in ("replay", "deny") or (provider_tools is not None and provider_tools.opens_provider_web):
            on_note(f"{capability} has no web: the egress proxy denies every request (mode deny) and the gateway "
                    "every provider-side tool, whatever --proxy-mode or --provider-tools said")
        proxy_mode, provider_tools = "deny", ProviderToolsPolicy.every("deny")
    return proxy_mode, provider_tools


def check_dollars(model: Endpoint, prices, budget, spend) -> None:
    """`run_system`'s dollar check, made before the Docker engine is asked (`omnidr eval`'s request check): a dollar
    budget or spending cap on a model whose price is unknown is a user error."""
    from omnidr.attempts import resolve_pricing

    _check_dollars_countable(model.name, resolve_pricing(model.name, model.base_url, prices), budget, spend)


def _check_dollars_countable(run_model: str, pricing, budget, spend) -> None:
    """A dollar budget or spending cap needs the model's price."""
    if pricing is None and (budget.max_cost_usd is not None or spend is not None):
        raise UserError(f"no price is known for the model {run_model!r}, so dollars cannot be counted: give its rates "
                        "with --prices FILE ({\"MODEL\": {\"input_per_mtok\": ..., \"output_per_mtok\": ...}}), "
                        "or drop the dollar budget")


def _agent_image(client, info: HarnessInfo, harness: str, image: str | None, built: dict) -> str:
    """The agent's image: the one given (which must be on the engine), else the harness's own as built."""
    from docker.errors import ImageNotFound

    if image is None:
        if info.image is None:
            raise UserError(f"the {harness} harness has no image of its own: give --image IMAGE")
        return built[info.image].tag
    try:
        client.images.get(image)
    except ImageNotFound:
        raise UserError(f"image {image} is not on this Docker engine; build it first (e.g. `omnidr images build`)") from None
    return image


def check_harness_kind(info: HarnessInfo, kind, root) -> None:
    """UserError (one line) when harness `info` cannot answer the tasks of task format `kind` (a
    `omnidr.benchmark.TaskFormat`) of the snapshot at `root`: a harness with input settings gives the model its
    inputs directly, and the questions that go to the model directly need one."""
    if info.settings and not kind.answered_directly:
        raise UserError(f"the {info.name} harness answers multiple-choice (mcq) snapshots only; {root} holds "
                        f"{kind.value} tasks: pick another harness, e.g. reference")
    if kind.answered_directly and not info.settings:
        raise UserError(f"{root} holds multiple-choice questions, which go to the model directly (paper 004): "
                        f"use the direct harness (HARNESS=direct), not {info.name}")


def check_kind(info: HarnessInfo, snap, capability: str) -> None:
    """The direct harness answers multiple-choice questions, and they are answered by it alone (paper 004 evaluates
    models, not agents); its input setting must use a frame budget of the snapshot's protocol."""
    from omnidr.benchmark import InputSetting

    check_harness_kind(info, snap.kind, snap.root)
    if info.settings:
        try:
            setting = InputSetting.parse(capability, snap.mcq_protocol)
        except ValueError as exc:
            raise UserError(f"{snap.root}: {exc}") from None
        visual = sorted(t for t, b in snap.tasks.items() if b.mcq is not None and b.mcq.subset.value == "V")
        if setting.protocol == "official" and setting.audio and visual:
            raise UserError(f"{snap.root}: {capability} gives the model audio, which the authors' runner allows on "
                            f"the AV subset only, and this snapshot holds V questions ({visual[0]}, ...): run "
                            "official-v or official-video_subtitle on them")


_DNS_WARNED: set[str] = set()  # engines already warned of in this process: the warning is said once


def warn_dns_exposure(client, on_note: Callable[[str], None]) -> None:
    """Say once per process when the engine and the host's resolver leave a DNS channel (see `dns_exposure`)."""
    from omnidr.attempts import dns_exposure

    try:
        version = client.version().get("Version", "")
        resolv = Path("/etc/resolv.conf").read_text("utf-8", errors="replace")
    except Exception:  # noqa: BLE001 - a warning that cannot be worked out is not given
        return
    warning = dns_exposure(version, resolv)
    if warning and version not in _DNS_WARNED:
        _DNS_WARNED.add(version)
        on_note(warning)


def check_keys(upstreams: list[Upstream]) -> None:
    """Before any image is built or attempt runs: every upstream's key is set (one line otherwise)."""
    import os

    for u in upstreams:  # keys are checked before any attempt, not discovered by three failed ones
        if u.key_env and not os.environ.get(u.key_env):
            raise UserError(f"{u.key_env} is not set; export the {u.family} upstream's key in it, or drop "
                            f"--{u.family}-key-env for an endpoint that needs none")


def check_reach(client, image: str, network: str, upstreams: list[Upstream], reach: dict[str, str]) -> None:
    """Before any attempt: one cheap request to every upstream from the gateway's outside network,
    through the relay a loopback URL gets, as the attempts will send theirs. The error names the URL
    the user gave and the option that gave it."""
    from omnidr._reach import unanswered_error
    from omnidr.attempts import unanswered_from_network

    urls = {u.base_url: reach.get(u.base_url, u.base_url) for u in upstreams}
    failed = unanswered_from_network(client, image, network, list(dict.fromkeys(urls.values())))
    for u in upstreams:
        if urls[u.base_url] in failed:
            raise unanswered_error(u.base_url, "model", f"--{u.family}-base-url", failed[urls[u.base_url]])


def run_command_harness(snapshot: Path, run_dir: Path, config: SystemConfig,
                        options: SystemRunOptions = SystemRunOptions()) -> dict:
    """`omnidr run --harness command`: any image and command (`config.agent`) under the full sandbox, with the
    upstreams `options.upstreams` (each key and endpoint checked before any attempt, in `run_system`)."""
    if not config.agent.command:
        raise UserError("the command harness needs a command after `--`, e.g. `omnidr run ... -- python3 agent.py`")
    if not options.upstreams:
        raise UserError("no model upstream: pass --openai-base-url and/or --anthropic-base-url")
    return run_system(snapshot, run_dir, config, options).records


@dataclass(frozen=True)
class Endpoints:
    """The model endpoints `omnidr run` was given: base URL and key variable per API family."""

    openai_base_url: str | None = None
    openai_key_env: str | None = None
    anthropic_base_url: str | None = None
    anthropic_key_env: str | None = None

    def upstreams(self) -> list[Upstream]:
        """Every endpoint given, as the command harness's upstreams."""
        return [Upstream(family=family, base_url=url, key_env=key_env) for family, url, key_env in (
            ("openai", self.openai_base_url, self.openai_key_env),
            ("anthropic", self.anthropic_base_url, self.anthropic_key_env)) if url]

    def model(self, harness: str, name: str | None) -> Endpoint:
        """The one endpoint a harness of the registry runs on (the gateway translates between the APIs), named
        `name`; the scripted model when none is given."""
        if harness == "command":
            return Endpoint(spec=name or "unspecified", name=name or "unspecified", base_url=None, key_env=None)
        if self.openai_base_url and self.anthropic_base_url:
            raise UserError(f"the {harness} harness runs on one model endpoint; give --openai-base-url or "
                            "--anthropic-base-url, not both (the gateway translates between their APIs)")
        url = self.anthropic_base_url or self.openai_base_url
        if not url:
            return Endpoint.scripted(name=name or SCRIPTED_MODEL)
        if not name:
            raise UserError("a model endpoint needs a model name (e.g. --model gpt-4o)")
        family: EndpointFamily = "anthropic" if self.anthropic_base_url else "openai"
        return Endpoint.served(name, url, self.anthropic_key_env if self.anthropic_base_url else self.openai_key_env,
                               family)


def run_harness(snapshot: Path, run_dir: Path, config: SystemConfig,
                options: SystemRunOptions = SystemRunOptions()) -> dict:
    """`omnidr run`: a harness of the registry on its one model endpoint, or the `command` harness on the upstreams
    `options.upstreams`. Returns each task's attempt records."""
    if config.agent.harness == "command":
        if not config.agent.image:
            raise UserError("--harness command needs --image IMAGE")
        return run_command_harness(snapshot, run_dir, config, options)
    if config.agent.command:
        raise UserError(f"--harness {config.agent.harness} takes no command after `--`; drop it or use --harness "
                        "command")
    return run_system(snapshot, run_dir, config, options).records
