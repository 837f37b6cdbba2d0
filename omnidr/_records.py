"""The base of every run file another stage reads (run.json, attempt.json, eval.json, leaderboard.json,
evaluation.json, the evaluation summary, the archive manifest): the JSON on disk is the model's dump, and it
names its format in `schema_version` (`<kind>/<number>`), the way Inspect AI's `EvalLog` carries its version.

A file written before the field existed reads as the current version (the formats have only grown fields
with defaults since); a file of another version is refused with a message that names both, instead of being
misread. A format change that old files cannot be read as bumps the number."""

from typing import Any, ClassVar

from pydantic import BaseModel, Field, model_validator


class DiskRecord(BaseModel):
    SCHEMA: ClassVar[str] = ""
    """`<kind>/<number>` of the subclass's file format."""

    schema_version: str = Field("", description="Format of this file, `<kind>/<number>` (e.g. omnidr.attempt/1).")

    @model_validator(mode="before")
    @classmethod
    def _schema(cls, data: Any) -> Any:
        if isinstance(data, dict):
            given = data.get("schema_version")
            if not given:  # written by a version without the field, or built in code: this format
                return {**data, "schema_version": cls.SCHEMA}
            if given != cls.SCHEMA:
                raise ValueError(f"schema_version {given!r}: this omnidr reads {cls.SCHEMA}; read the file with "
                                 "the omnidr version that wrote it")
        return data
