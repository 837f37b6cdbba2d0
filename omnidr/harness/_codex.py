"""Codex CLI adapter: `codex exec --json` with a custom model provider that is the gateway.

The provider `omnidr` (Responses wire API, base URL the gateway's /v1, key from OPENAI_API_KEY,
which holds the attempt's dummy token) is set with `-c` overrides, so no config file is needed;
update checks, analytics, the plugin marketplace and the provider-side web search are off, and
`--strict-config` refuses a key this version does not know. CODEX_HOME is under the logs folder, so the rollout (with
timestamps and cumulative token counts) lands beside the exec event stream (`codex-exec.jsonl`,
which has no timestamps); `omnidr.trajectory` prefers the rollout.
"""

import json
from dataclasses import dataclass, field

from omnidr.attempts import AgentContext
from omnidr.trajectory import CODEX_EXEC_LOG, CODEX_HOME_DIR

from ._claude_code import headless_script
from ._skills import SkillSetup

PROVIDER = "omnidr"


def _toml(value: object) -> str:
    """A TOML value for `-c key=value` (JSON strings and booleans are valid TOML)."""
    return json.dumps(value)


@dataclass(frozen=True)
class CodexHarness:
    """Codex CLI (images/codex) in `exec --json` mode."""

    image_ref: str
    reasoning_effort: str | None = None  # low / medium / high; None keeps Codex's default
    skills: SkillSetup | None = None  # the research skills at a capability level; None: none installed
    web_search: bool = False  # the Responses API's hosted search; on when the run's provider-tools policy lets it through
    extra_env: dict[str, str] = field(default_factory=dict)
    name: str = "codex"
    parser: str = "codex"

    def image(self) -> str:
        return self.image_ref

    def log_path(self, ctx: AgentContext) -> str:
        return f"{ctx.logs_dir}/{CODEX_EXEC_LOG}"

    def config_overrides(self, ctx: AgentContext) -> dict[str, object]:
        overrides: dict[str, object] = {
            "model_provider": PROVIDER,
            f"model_providers.{PROVIDER}.name": "OmniDR gateway",
            f"model_providers.{PROVIDER}.base_url": f"{ctx.gateway_url}/v1",
            f"model_providers.{PROVIDER}.env_key": "OPENAI_API_KEY",
            f"model_providers.{PROVIDER}.wire_api": "responses",
            f"model_providers.{PROVIDER}.request_max_retries": 0,  # the gateway retries upstream errors
            "check_for_update_on_startup": False,
            "analytics.enabled": False,  # else it posts metrics
            "features.plugins": False,  # else it syncs a plugin marketplace (github.com, chatgpt.com)
            "web_search": "live" if self.web_search else "disabled",  # provider-side tool: bypasses the proxy
            "feedback.enabled": False,
            "otel.exporter": "none",
            "hide_agent_reasoning": False,
        }
        if self.reasoning_effort:
            overrides["model_reasoning_effort"] = self.reasoning_effort
        return overrides

    def command(self, ctx: AgentContext) -> list[str]:
        argv = ["codex", "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                "--strict-config", "--model", ctx.model]
        for key, value in self.config_overrides(ctx).items():
            argv += ["-c", f"{key}={_toml(value)}"]
        home = f"{ctx.logs_dir}/{CODEX_HOME_DIR}"
        setup = [f"mkdir -p {home}"]
        if self.skills is not None:  # $CODEX_HOME/skills/<name>/SKILL.md, and the same list in AGENTS.md
            setup.append(SkillSetup.install_line("--codex", f"{home}/skills", "--agents-md", f"{home}/AGENTS.md"))
        return headless_script(argv, ctx.instruction_path, self.log_path(ctx), setup=setup)

    def environment(self, ctx: AgentContext) -> dict[str, str]:
        # Codex 0.147 ignores OPENAI_BASE_URL, CODEX_DISABLE_UPDATE_CHECK, NO_UPDATE_NOTIFIER and DO_NOT_TRACK;
        # the provider and the switches above (-c, checked by --strict-config) do their work.
        env = {
            "OPENAI_API_KEY": ctx.token,
            "CODEX_HOME": f"{ctx.logs_dir}/{CODEX_HOME_DIR}",
        }
        if self.skills is not None:
            env.update(self.skills.environment(ctx))
        return {**env, **self.extra_env}

    def native_logs(self, ctx: AgentContext) -> list[str]:
        return [self.log_path(ctx), f"{ctx.logs_dir}/{CODEX_HOME_DIR}/sessions"]
