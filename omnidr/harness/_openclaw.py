"""OpenClaw adapter: `openclaw agent --local` (embedded agent, no OpenClaw gateway daemon) with a
custom model provider that is the sandbox's gateway.

The config file (`openclaw.json` in OPENCLAW_STATE_DIR, under the logs folder) is written at
start: provider `omnidr` with the gateway's /v1 base URL, OpenAI Responses API, the dummy token
from OPENAI_API_KEY, and the run's model as the default agent model; update checks off. Session
transcripts land in OPENCLAW_STATE_DIR/agents/main/sessions/, read by the OpenClaw parser.
"""

import json
import shlex
from dataclasses import dataclass, field

from omnidr.attempts import AgentContext
from omnidr.trajectory import OPENCLAW_LOG, OPENCLAW_STATE_DIR

from ._claude_code import headless_script

PROVIDER = "omnidr"
SESSION_ID = "omnidr-attempt"


@dataclass(frozen=True)
class OpenClawHarness:
    """OpenClaw CLI (images/openclaw) in local agent mode."""

    image_ref: str
    api: str = "openai-responses"  # or openai-completions / anthropic-messages: the gateway serves all three
    extra_env: dict[str, str] = field(default_factory=dict)
    name: str = "openclaw"
    parser: str = "openclaw"

    def image(self) -> str:
        return self.image_ref

    def state_dir(self, ctx: AgentContext) -> str:
        return f"{ctx.logs_dir}/{OPENCLAW_STATE_DIR}"

    def config(self, ctx: AgentContext) -> dict:
        base = f"{ctx.gateway_url}/v1" if self.api.startswith("openai") else ctx.gateway_url
        return {
            "models": {"mode": "replace", "providers": {PROVIDER: {
                "baseUrl": base, "apiKey": "${OPENAI_API_KEY}", "api": self.api,
                "models": [{"id": ctx.model, "name": ctx.model}],
            }}},
            "agents": {"defaults": {"model": {"primary": f"{PROVIDER}/{ctx.model}"}, "workspace": "/tmp/workspace"}},
            "update": {"checkOnStart": False},
        }

    def command(self, ctx: AgentContext) -> list[str]:
        state = self.state_dir(ctx)
        write_config = (f"mkdir -p {shlex.quote(state)} && printf %s {shlex.quote(json.dumps(self.config(ctx)))}"
                        f" > {shlex.quote(state + '/openclaw.json')}")
        argv = ["openclaw", "agent", "--local", "--agent", "main", "--session-id", SESSION_ID, "--json"]
        return headless_script(argv, ctx.instruction_path, f"{ctx.logs_dir}/{OPENCLAW_LOG}", setup=[write_config],
                               prompt_flag="--message")

    def environment(self, ctx: AgentContext) -> dict[str, str]:
        state = self.state_dir(ctx)
        env = {
            "OPENAI_API_KEY": ctx.token,
            "OPENCLAW_STATE_DIR": state,
            "OPENCLAW_CONFIG_PATH": f"{state}/openclaw.json",
            "OPENCLAW_NO_UPDATE_CHECK": "1",
            "DO_NOT_TRACK": "1",
            "NO_UPDATE_NOTIFIER": "1",
        }
        return {**env, **self.extra_env}

    def native_logs(self, ctx: AgentContext) -> list[str]:
        return [f"{self.state_dir(ctx)}/agents/main/sessions"]
