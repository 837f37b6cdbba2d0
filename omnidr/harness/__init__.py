"""Harness adapters: how to run one agent system inside the sandbox, and the one registry of them.

Each adapter is small: the image it runs, the command, extra environment, and where its
native logs are. The sandbox supplies everything else (inputs, gateway, proxy, limits);
`run_system` wires any harness of the registry to it.
"""

from omnidr.attempts import AgentContext, Harness

from ._base import CommandHarness
from ._claude_code import ClaudeCodeHarness
from ._codex import CodexHarness
from ._config import (
    OFFLINE_JUDGE,
    PROXY_MODES,
    Endpoint,
    EndpointFamily,
    SystemConfig,
    SystemSpec,
    WebMode,
    WebPolicy,
    offline_judge,
)
from ._direct import DirectHarness
from ._openclaw import OpenClawHarness
from ._reference import CAPABILITIES, ReferenceHarness, ScriptedModel, start_scripted_model
from ._registry import (
    HARNESSES,
    Endpoints,
    HarnessInfo,
    SystemRun,
    SystemRunOptions,
    Upstream,
    check_dollars,
    check_harness_kind,
    check_kind,
    harness_info,
    run_command_harness,
    run_harness,
    run_system,
)

__all__ = ["DirectHarness", "check_dollars", "check_harness_kind", "check_kind", "AgentContext", "CAPABILITIES", "ClaudeCodeHarness", "CodexHarness", "CommandHarness", "EndpointFamily", "Harness",
           "HARNESSES", "HarnessInfo", "OpenClawHarness", "ReferenceHarness", "ScriptedModel", "SystemRun", "Upstream",
           "harness_info", "Endpoints", "run_command_harness", "run_harness", "run_system", "start_scripted_model",
           "Endpoint", "OFFLINE_JUDGE", "PROXY_MODES", "SystemConfig", "SystemRunOptions", "SystemSpec", "WebMode",
           "WebPolicy", "offline_judge"]
