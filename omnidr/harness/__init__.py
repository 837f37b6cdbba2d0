"""Harness adapters: how to run one agent system inside the sandbox.

Each adapter is small: the image it runs, the command, extra environment, and where its
native logs are. The sandbox supplies everything else (inputs, gateway, proxy, limits).
"""

from ._base import AgentContext, CommandHarness, Harness
from ._claude_code import ClaudeCodeHarness
from ._codex import CodexHarness
from ._openclaw import OpenClawHarness
from ._reference import ReferenceHarness, ReferenceRun, ScriptedModel, run_reference, start_scripted_model

__all__ = ["AgentContext", "ClaudeCodeHarness", "CodexHarness", "CommandHarness", "Harness", "OpenClawHarness"]
__all__ += ["ReferenceHarness", "ReferenceRun", "ScriptedModel", "run_reference", "start_scripted_model"]
