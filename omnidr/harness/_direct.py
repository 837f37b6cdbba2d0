"""The direct harness: VideoOdyssey's way of evaluating a model (paper 004, Sec. 4.1), one request per question
with the prepared frames, subtitles and audio and no tools, run by `sandbox/direct_agent` in the reference image
under the same sandbox as every agent (the gateway logs and budgets the request and holds the key).

Its "capability" is the input setting of the ablation matrix (`omnidr.benchmark.InputSetting`): the modality, the
frame budget and the window mode, e.g. `video+subtitles-64f-full`; `full` is every modality over the whole video at
the snapshot's default budget. Each setting is its own system, so the ablations are rows of the leaderboard and
pairs for `omnidr compare`.
"""

from dataclasses import dataclass

from omnidr.attempts import AgentContext

NATIVE_LOG = "direct.jsonl"


@dataclass(frozen=True)
class DirectHarness:
    """Harness adapter of the direct-model runner; `setting` is the InputSetting label the inputs were made for."""

    image_ref: str
    setting: str
    name: str = "direct"

    def image(self) -> str:
        return self.image_ref

    def command(self, ctx: AgentContext) -> list[str]:
        return direct_argv(self.setting, ctx.model)

    def environment(self, ctx: AgentContext) -> dict[str, str]:
        return {}

    def native_logs(self, ctx: AgentContext) -> list[str]:
        return [f"{ctx.logs_dir}/{NATIVE_LOG}"]


def direct_argv(setting: str, model: str) -> list[str]:
    return ["python", "-m", "sandbox.direct_agent", "--setting", setting, "--model", model]
