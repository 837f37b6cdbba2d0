"""What the sandbox gives an agent container (`AgentContext`) and asks of a harness adapter (`Harness`).

The attempts stage owns this contract; the adapters in `omnidr.harness` implement it."""

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class AgentContext:
    """What the agent container sees: paths inside it and the two doors."""

    instruction_path: str  # the instruction text (read-only)
    video_path: str  # the source video (read-only)
    contract_dir: str  # the report contract: template, schema (read-only)
    output_dir: str  # the only writable place that survives the attempt
    report_dir: str  # where the report must be delivered (inside output_dir)
    gateway_url: str  # http://gateway:PORT, the only way to a model
    proxy_url: str  # http://proxy:PORT, the only way to the web
    token: str  # per-attempt dummy token the gateway accepts; never a real key
    model: str  # model name the agent should ask for
    logs_dir: str  # writable folder for the harness's native logs (inside output_dir)


class Harness(Protocol):
    @property
    def name(self) -> str: ...  # an attribute of the harness, read-only or not

    def image(self) -> str:
        """Docker image reference (tag or ID) of the agent container."""

    def command(self, ctx: AgentContext) -> list[str]:
        """Command to run in the agent container."""

    def environment(self, ctx: AgentContext) -> dict[str, str]:
        """Harness-specific environment on top of the sandbox's (base URLs, proxy, token)."""

    def native_logs(self, ctx: AgentContext) -> list[str]:
        """Paths (inside the container, under ctx.output_dir) of the harness's own logs."""
