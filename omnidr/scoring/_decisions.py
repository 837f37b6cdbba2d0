"""The evaluator's verdicts for one report: one decision per atom, the input of scoring."""

from typing import Annotated, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from ._base import ScoringModel

Outcome = Literal["pass", "fail", "na", "skipped"]
"""pass / fail: the atom was decided; na: the judge found it not applicable; skipped: the evaluator failed."""

Vote = Literal["pass", "fail"]


class AtomDecision(ScoringModel):
    """The decision on one atom. Gate atoms carry their judge votes and are decided by majority."""

    outcome: Outcome | None = Field(
        None,
        description="pass, fail, na (judge: not applicable) or skipped (evaluator error). "
        "May be left out when votes are given; it is then the majority of the votes.",
    )
    votes: list[Vote] = Field(
        default_factory=list,
        description="Judge votes of a gate atom (normally three), each pass or fail; the majority decides.",
    )
    rationale: str | None = Field(None, description="Short reason the evaluator gave, kept for audit.")

    @model_validator(mode="after")
    def _votes_agree(self) -> "AtomDecision":
        if self.votes:
            if len(self.votes) % 2 == 0:
                raise ValueError(f"{len(self.votes)} votes cannot give a majority; give an odd number of votes")
            if self.outcome in ("na", "skipped"):
                raise ValueError(f"outcome '{self.outcome}' cannot come with votes")
            if self.outcome is not None and self.outcome != self.majority():
                raise ValueError(f"outcome '{self.outcome}' contradicts the majority of the votes ({self.majority()})")
        elif self.outcome is None:
            raise ValueError("give an outcome (pass, fail, na, skipped) or the votes")
        return self

    def majority(self) -> Vote:
        """The majority of the votes (only meaningful when votes are present)."""
        return "pass" if 2 * self.votes.count("pass") > len(self.votes) else "fail"

    @property
    def decided(self) -> Outcome:
        """The outcome that scoring uses: the majority of the votes when there are votes."""
        if self.votes:
            return self.majority()
        assert self.outcome is not None
        return self.outcome


def _decision_kind(value: object) -> str:
    return "outcome" if isinstance(value, str) else "decision"


Decision = Annotated[
    Annotated[Outcome, Tag("outcome")] | Annotated[AtomDecision, Tag("decision")],
    Discriminator(_decision_kind),
]
"""A decision as written in the file: a plain outcome string or an `AtomDecision` object."""


class Decisions(ScoringModel):
    """Every atom decision for one report of one task (the file `omnidr aggregate --decisions` reads).

    A decision may be written as a plain string ("pass") or as an object with votes and a rationale.
    """

    task_id: str = Field(description="Task the report answers; must match the rubric tree's task_id.")
    failure: str | None = Field(
        None,
        description="Set when the report is missing or unreadable: the reason. The report then scores 0 "
        "and counts as a failure; decisions are ignored.",
    )
    judge: str | None = Field(
        None, description="Identity of the judge that decided the J atoms (kind:model:prompt version); "
        "leaderboards refuse to mix judges.",
    )
    decisions: dict[str, Decision] = Field(
        default_factory=dict,
        description="Atom id -> decision: a plain outcome string, or an object with votes and a rationale. "
        "Atoms of the tree left out count as skipped.",
    )

    def outcome(self, atom_id: str) -> Outcome | None:
        """The decided outcome of one atom (majority of votes where given); None without a decision."""
        d = self.decisions.get(atom_id)
        return d if d is None or isinstance(d, str) else d.decided
