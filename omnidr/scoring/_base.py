"""Pydantic base shared by the scoring models."""

from pydantic import BaseModel, ConfigDict


class ScoringModel(BaseModel):
    """A scoring record whose JSON dump is the file on disk: unknown keys are errors, values are checked."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)
