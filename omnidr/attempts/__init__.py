"""Attempts stage: each agent attempt in a network-logged sandbox, under budgets, with retries."""

from ._admission import STALL_TIMEOUT_S, Admission, HostPolicy, RunStopped, StartBreaker, StartGate, retry_delay_s
from ._backend import (
    DEFAULT_BACKEND,
    DoorControl,
    ExecResult,
    Sandbox,
    SandboxBackend,
    SandboxFault,
    backend_names,
    register_backend,
    sandbox_backend,
)
from ._contract import AgentContext, Harness
from ._docker import DockerBackend, cleanup_run, dns_exposure
from ._executors import EXECUTORS, RayExecutor, make_executor
from ._instruction import instruction
from ._labels import LABEL_RUN, LABEL_RUN_DIR, run_labels
from ._lifecycle import AttemptSandbox
from ._limiter import DEFAULT_MAX_CONNECTIONS, SharedLimiter
from ._models import (
    NOT_COUNTED,
    WEB_MODES,
    AttemptReason,
    AttemptRecord,
    BudgetUse,
    DoorPolicy,
    RetryPolicy,
    SandboxLimits,
    Upstream,
    cost_text,
    default_provider_tools,
    parse_allow_nets,
    parse_provider_tools,
    parse_search_door,
    web_closed,
)
from ._prices import PRICE_FILE_KEYS, load_prices, resolve_pricing
from ._relay import is_loopback_url, relay_loopback_urls, unanswered_from_network
from ._runner import (
    LOCAL_EXECUTOR,
    LocalExecutor,
    RunConfig,
    RunOptions,
    RunScope,
    changed_settings,
    open_run,
    run_attempts,
    run_task_attempts,
    stop_run,
)
from ._spec import AttemptSpec
from ._spend import SpendCap, SpendCapReached, spend_cap

__all__ = [
    "is_loopback_url", "relay_loopback_urls", "unanswered_from_network",
    "AgentContext", "EXECUTORS", "Harness", "NOT_COUNTED", "RayExecutor", "make_executor", "AttemptReason", "AttemptRecord", "AttemptSandbox", "AttemptSpec", "BudgetUse", "DoorPolicy", "RetryPolicy",
    "LOCAL_EXECUTOR", "LocalExecutor", "RunConfig", "SandboxLimits", "Upstream", "changed_settings", "default_provider_tools", "parse_provider_tools", "parse_allow_nets", "parse_search_door", "WEB_MODES", "cleanup_run", "dns_exposure", "instruction", "open_run", "run_attempts",
    "run_task_attempts", "stop_run", "web_closed", "PRICE_FILE_KEYS", "load_prices", "resolve_pricing", "SpendCap", "cost_text", "spend_cap", "DEFAULT_MAX_CONNECTIONS", "SharedLimiter",
    "SpendCapReached",
    "LABEL_RUN", "LABEL_RUN_DIR", "run_labels",
    "DEFAULT_BACKEND", "DoorControl", "ExecResult", "Sandbox", "SandboxBackend", "SandboxFault", "backend_names",
    "register_backend", "sandbox_backend", "RunOptions", "RunScope", "DockerBackend",
    "STALL_TIMEOUT_S", "Admission", "HostPolicy", "RunStopped", "StartBreaker", "StartGate", "retry_delay_s",
]

