"""Claude Code adapter: `claude -p` headless, stream-json events into the logs folder.

Every model call, subagents and background ("small fast") models included, goes to the gateway
(ANTHROPIC_BASE_URL; every model alias points at the run's model); telemetry, error reporting,
auto-update and other non-essential traffic are off. Two native logs: the stream-json stdout
(`claude-code.jsonl`, read by `omnidr.trajectory`'s Claude Code parser) and the session
transcripts under CLAUDE_CONFIG_DIR (kept; they carry timestamps the stream lacks).

The command is `sh -c SCRIPT` because the instruction is a file in the container and the
stream must go to a file; the container's entrypoint must therefore not be `claude` itself.
"""

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from omnidr.attempts import AgentContext
from omnidr.trajectory import CLAUDE_CODE_LOG, CLAUDE_CONFIG_DIR

from ._skills import SkillSetup

# WebFetch first asks api.anthropic.com whether a domain may be fetched, and fails when that is
# blocked (it always is here); the fetch itself goes through HTTPS_PROXY, so it is logged and replayable.
SETTINGS = {"skipWebFetchPreflight": True}


def headless_script(argv: list[str], prompt_path: str, log_path: str, setup: Sequence[str] = (),
                    prompt_flag: str | None = None) -> list[str]:
    """`sh -c` command: run setup lines, then `argv [prompt_flag] "$(cat prompt_path)" > log_path`.

    `exec` keeps the harness as the container's main process (signals reach it; its exit code is
    the container's), stdout goes to the native log rather than to agent.log, and stdin is /dev/null
    (Codex reads stdin when it is not a terminal, and would wait on an open pipe).
    """
    log_dir = log_path.rsplit("/", 1)[0]
    prompt = f'"$(cat {shlex.quote(prompt_path)})"'
    parts = [f"mkdir -p {shlex.quote(log_dir)}", *setup,
             f"exec {shlex.join(argv)} {(prompt_flag + ' ') if prompt_flag else ''}{prompt} "
             f"< /dev/null > {shlex.quote(log_path)}"]
    return ["sh", "-c", " && ".join(parts)]


@dataclass(frozen=True)
class ClaudeCodeHarness:
    """Claude Code CLI (images/claude-code) in headless stream-json mode."""

    image_ref: str
    max_turns: int | None = None  # Claude Code's own turn limit; the gateway's budget applies anyway
    # WebSearch is a server-side tool of the Messages API: the search runs at the provider and never
    # passes the egress proxy. Offered only when the run's provider-tools policy lets web search through
    # the gateway (allow or denylist; run.json's provider_tools), which then logs and filters it.
    web_search: bool = False
    web_fetch: bool = True  # its own page reader (through the egress proxy); off below text_web
    skills: SkillSetup | None = None  # the research skills at a capability level; None: none installed
    extra_env: dict[str, str] = field(default_factory=dict)
    name: str = "claude-code"
    parser: str = "claude-code"  # omnidr.trajectory format family that reads native_logs()

    def image(self) -> str:
        return self.image_ref

    def log_path(self, ctx: AgentContext) -> str:
        return f"{ctx.logs_dir}/{CLAUDE_CODE_LOG}"

    def command(self, ctx: AgentContext) -> list[str]:
        argv = ["claude", "--output-format", "stream-json", "--verbose", "--model", ctx.model,
                "--dangerously-skip-permissions", "--settings", json.dumps(SETTINGS, separators=(",", ":"))]
        disallowed = [name for name, on in (("WebSearch", self.web_search), ("WebFetch", self.web_fetch)) if not on]
        if disallowed:
            argv += ["--disallowedTools", ",".join(disallowed)]
        if self.max_turns:
            argv += ["--max-turns", str(self.max_turns)]
        setup = [] if self.skills is None else [  # user skills: $CLAUDE_CONFIG_DIR/skills/<name>/SKILL.md
            SkillSetup.install_line("--claude-code", f"{ctx.logs_dir}/{CLAUDE_CONFIG_DIR}/skills")]
        return headless_script(argv, ctx.instruction_path, self.log_path(ctx), setup=setup, prompt_flag="-p")

    def environment(self, ctx: AgentContext) -> dict[str, str]:
        env = {
            "ANTHROPIC_BASE_URL": ctx.gateway_url,
            "ANTHROPIC_API_KEY": ctx.token,
            "ANTHROPIC_MODEL": ctx.model,
            "ANTHROPIC_SMALL_FAST_MODEL": ctx.model,  # background calls (titles, summaries) too
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": ctx.model,
            "ANTHROPIC_DEFAULT_SONNET_MODEL": ctx.model,
            "ANTHROPIC_DEFAULT_OPUS_MODEL": ctx.model,
            "CLAUDE_CODE_SUBAGENT_MODEL": ctx.model,
            "CLAUDE_CONFIG_DIR": f"{ctx.logs_dir}/{CLAUDE_CONFIG_DIR}",  # transcripts land in the logs
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_BUG_COMMAND": "1",
            "DISABLE_NON_ESSENTIAL_MODEL_CALLS": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
            "CLAUDE_CODE_USE_BEDROCK": "0",
            "CLAUDE_CODE_USE_VERTEX": "0",
            "IS_SANDBOX": "1",  # needed only as root (--dangerously-skip-permissions); the agent runs as uid 1000
        }
        if self.skills is not None:
            env.update(self.skills.environment(ctx))
        return {**env, **self.extra_env}

    def native_logs(self, ctx: AgentContext) -> list[str]:
        return [self.log_path(ctx), f"{ctx.logs_dir}/{CLAUDE_CONFIG_DIR}/projects"]
