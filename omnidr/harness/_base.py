"""The generic `command` harness: any image and command under the full sandbox."""

from dataclasses import dataclass, field

from omnidr.attempts import AgentContext


@dataclass(frozen=True)
class CommandHarness:
    """Runs any image and command under the full sandbox: bring-your-own agents and adversarial tests."""

    image_ref: str
    argv: list[str]
    extra_env: dict[str, str] = field(default_factory=dict)
    name: str = "command"

    def image(self) -> str:
        return self.image_ref

    def command(self, ctx: AgentContext) -> list[str]:
        return list(self.argv)

    def environment(self, ctx: AgentContext) -> dict[str, str]:
        return dict(self.extra_env)

    def native_logs(self, ctx: AgentContext) -> list[str]:
        return []
