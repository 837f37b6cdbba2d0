"""How the research skills (`sandbox/skills`) reach a CLI harness: the capability level decides which
actions `omnidr-skill` runs and which SKILL.md files are installed before the CLI starts (paper App. F.5:
the ladder is a choice of installed skills, on every harness)."""

import json
from dataclasses import dataclass, field

from omnidr.attempts import AgentContext

SKILL_STATE_DIR = "skills"  # under the attempt's harness-logs: the skills' shared state and calls.jsonl


def index_environment(search: list[dict]) -> dict[str, str]:
    """OMNIDR_SEARCH_INDEX: the offline search door's entries as inline JSON (none: no variable)."""
    if not search:
        return {}
    return {"OMNIDR_SEARCH_INDEX": json.dumps({"pages": search}, ensure_ascii=False, separators=(",", ":"))}


@dataclass(frozen=True)
class SkillSetup:
    """The skills of one system: its capability level, the offline search door's index and the budgets."""

    capability: str = "full"
    search: list[dict] = field(default_factory=list)
    budgets: str = ""  # `web=25,video=5,document=3,anchor=3` (hyperparameters.json)
    max_repairs: int = 3

    def environment(self, ctx: AgentContext) -> dict[str, str]:
        env = {"OMNIDR_CAPABILITY": self.capability, "OMNIDR_SKILL_STATE": f"{ctx.logs_dir}/{SKILL_STATE_DIR}",
               "OMNIDR_SKILL_BUDGETS": self.budgets, "OMNIDR_MAX_REPAIRS": str(self.max_repairs)}
        return {**env, **index_environment(self.search)}

    @staticmethod
    def install_line(*options: str) -> str:
        """The shell line that writes the installed skills' files before the CLI starts."""
        return "omnidr-skill install " + " ".join(options) + " > /dev/null"


def budgets_text(hp) -> str:
    """The evidence budgets B_web, B_video, B_doc, B_anchor (App. D.3, hyperparameters.json) as
    `web=25,video=5,document=3,anchor=3`, the form the skills and the reference agent read."""
    b = hp.budgets
    return f"web={b.web_sources},video={b.related_videos},document={b.documents},anchor={b.records_per_anchor}"


def setup_from(capability: str, search: list[dict], hp) -> SkillSetup:
    """The skill setup of a system from the snapshot's hyperparameters (App. D.3 budgets, R_max)."""
    from omnidr.benchmark import Hyperparameters

    hp = hp or Hyperparameters()
    return SkillSetup(capability, list(search), budgets_text(hp), hp.max_repair_rounds)
