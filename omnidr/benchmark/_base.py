"""Shared pydantic base for every file-backed model of the benchmark."""

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A model whose JSON dump is the file on disk: unknown keys are errors, values are checked."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True, use_enum_values=False)
