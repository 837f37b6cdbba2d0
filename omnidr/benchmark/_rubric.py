"""Omni-ART: the shared direction inventory, the probe catalog and one rubric tree per task."""

import json
from enum import Enum
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import Field, model_validator

from ._base import Record


class Dimension(str, Enum):
    """The three Omni-ART dimensions."""

    C = "C"  # content
    R = "R"  # citation
    P = "P"  # presentation


class EvaluatorKind(str, Enum):
    """Which evaluator may decide atoms of a direction."""

    J = "J"  # model judge
    M = "M"  # deterministic program or browser probe
    both = "both"


class GateLogic(str, Enum):
    """Declared logic of a direction: gates use all/any; core directions are diagnostic rates."""

    all = "all"
    any = "any"
    rate = "rate"


class Direction(Record):
    id: str = Field(description="Stable direction id such as C-FC.")
    name: str = Field(description="Direction name.")
    dimension: Dimension = Field(description="Dimension the direction belongs to.")
    evaluator: EvaluatorKind = Field(description="Evaluator kinds allowed for its atoms: J, M or both.")
    gate: bool = Field(description="A failed gate sets the direction's effective rate to zero.")
    logic: GateLogic = Field(description="'all': every applicable atom passes; 'any': at least one; 'rate': diagnostic only.")
    high_volume: bool = Field(
        description="Saturating direction: credited rate min(1, r/tau) and weight capped at kappa (hyperparameters)."
    )
    coverage: bool = Field(
        description="Its atoms are coverage checks (App. A.4): only they make a failed citation atom of the same "
        "fact an N/A candidate. Failing to explain a mechanism or to solve a reasoning problem is not evidence of "
        "omission, so only fact coverage is one in the released inventory."
    )
    visual: bool = Field(
        description="Its judge calls also carry images (App. A.3): screenshots of the report sections the criterion "
        "needs, the report's figures, and frames of the source video at the moments the report cites."
    )
    fact_origin: Literal["video", "web"] | None = Field(None, description=(
        "Direction boundary (App. E.4, this project's reading): the origin a linked fact must have. Statements "
        "about the source video (C-VF, C-AV) check video facts; checks of external support (C-XV, R-CS, R-SA) "
        "check web facts; None: either."))
    description: str = Field(description="What the direction tests.")

    @model_validator(mode="after")
    def _gate_logic(self) -> "Direction":
        if self.gate and self.logic is GateLogic.rate:
            raise ValueError("a gate direction must declare logic 'all' or 'any'")
        if not self.gate and self.logic is not GateLogic.rate:
            raise ValueError("a core direction must declare logic 'rate'")
        if self.gate and self.high_volume:
            raise ValueError("a high-volume (saturating) direction cannot be a gate")
        if self.coverage and self.dimension is not Dimension.C:
            raise ValueError("a coverage direction checks what the report states: it must be a content (C) direction")
        return self


class DirectionInventory(Record):
    version: str = Field(description="Version of the inventory.")
    note: str = Field(description="Where the inventory comes from.")
    directions: list[Direction] = Field(description="The 23 shared directions.")

    def by_id(self) -> dict[str, Direction]:
        return {d.id: d for d in self.directions}


class ProbeSpec(Record):
    name: str = Field(description="Probe name atoms reference.")
    description: str = Field(description="What the probe checks.")
    params: dict[str, str] = Field(description="Parameter name -> JSON type (number, integer, string, boolean).")
    directions: list[str] = Field(description=(
        "Direction boundary (App. E.4): the directions whose atoms may use this probe; another direction's atom is "
        "outside the boundary of what the probe measures."))
    defaults: dict[str, str] = Field(default_factory=dict, description=(
        "Parameters an atom may leave out -> the hyperparameter (hyperparameters.json) that then supplies the value."))


class ProbeCatalog(Record):
    version: str = Field(description="Version of the probe catalog.")
    note: str = Field(description="What the catalog is.")
    probes: list[ProbeSpec] = Field(description="Every probe the evaluator implements.")

    def by_name(self) -> dict[str, ProbeSpec]:
        return {p.name: p for p in self.probes}


class Polarity(str, Enum):
    """The verdict that counts as a pass."""

    yes = "yes"
    no = "no"


class Difficulty(str, Enum):
    """Evidence difficulty (App. E.3): L0 one video fact, L1 external evidence,
    L2 independent verification or conflict handling, L3 composition across facts."""

    L0 = "L0"
    L1 = "L1"
    L2 = "L2"
    L3 = "L3"


class AtomEvaluator(str, Enum):
    J = "J"
    M = "M"


class ProbeCall(Record):
    name: str = Field(description="Probe name from the probe catalog.")
    params: dict[str, Any] = Field(default_factory=dict, description="Arguments for the probe.")


class Atom(Record):
    id: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="Atom id, unique within the tree.")
    direction: str = Field(description="Direction id from the inventory.")
    criterion: str = Field(min_length=1, description="One binary, checkable question, in the task language.")
    evaluator: AtomEvaluator = Field(description="J (model judge) or M (deterministic probe).")
    probe: ProbeCall | None = Field(None, description="For M atoms: the probe and its parameters.")
    polarity: Polarity = Field(Polarity.yes, description="Verdict that counts as a pass.")
    fact_id: str | None = Field(None, description="Fact library record the atom is bound to (required for J atoms).")
    composes: list[str] = Field(
        default_factory=list, description="Other fact ids the criterion combines with fact_id (composition "
        "across distinct facts: App. E.3's L3).",
    )
    difficulty: Difficulty = Field(description="Evidence difficulty L0-L3 (App. E.3; `snapshot validate` derives "
                                   "it from the evidence and warns where it differs).")
    evidence_note: str = Field(description="What evidence decides the atom; shown to the judge.")
    impact: str | None = Field(
        None, description="For M atoms without a fact: what a reader loses when the check fails."
    )
    coverage: bool | None = Field(
        None, description="Whether the atom is a coverage check of its fact (App. A.4: it asks that the report "
        "state the fact). None: its direction's `coverage` flag decides (C-FC). True on a positive atom of "
        "another content direction: a failed citation of the fact may become N/A when this check fails too, and "
        "the guard weighs its direction with gamma = 1 (a direction without saturation).",
    )

    @model_validator(mode="after")
    def _binding(self) -> "Atom":
        if self.evaluator is AtomEvaluator.M and self.probe is None:
            raise ValueError("an M atom needs a probe")
        if self.evaluator is AtomEvaluator.J and self.probe is not None:
            raise ValueError("a J atom must not name a probe")
        if self.composes and self.fact_id is None:
            raise ValueError("an atom that composes facts needs a fact_id (the first of them)")
        if self.coverage and (self.fact_id is None or self.polarity is not Polarity.yes):
            raise ValueError("a coverage check needs a fact_id and polarity yes (it asks that the report state the fact)")
        return self


class RubricTree(Record):
    task_id: str = Field(description="Task this tree scores.")
    atoms: list[Atom] = Field(description="Task-specific atomic criteria.")
    na_reasons: dict[str, str] = Field(
        default_factory=dict, description="Direction id -> instance-specific reason the direction has no atom."
    )


def _package_json(name: str) -> Any:
    return json.loads(resources.files("omnidr.benchmark").joinpath(f"data/{name}").read_text("utf-8"))


@cache
def direction_inventory() -> DirectionInventory:
    """The shared inventory shipped with the package (`omnidr/benchmark/data/directions.json`)."""
    return DirectionInventory.model_validate(_package_json("directions.json"))


@cache
def probe_catalog() -> ProbeCatalog:
    """The probe catalog shipped with the package (`omnidr/benchmark/data/probes.json`)."""
    return ProbeCatalog.model_validate(_package_json("probes.json"))
