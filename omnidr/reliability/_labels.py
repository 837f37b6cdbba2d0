"""Human labels of generated reports (paper App. A.5-A.6): the labels file and its checks.

A labels file is JSON Lines, one `HumanLabel` per line. A line is either an atom label (the
rater's verdict on one atom of one report: `atom` and `verdict`) or a holistic rating of the
whole report (`rating`, 1 to 5, no atom). A report is one system folder's report for one task
of a run root (`system` is the folder's name, as `omnidr eval` made it):

    {"rater": "r1", "system": "reference-full-scripted", "task": "pendant-lamp-safety", "atom": "C-FC-01", "verdict": "pass"}
    {"rater": "r1", "system": "reference-full-scripted", "task": "pendant-lamp-safety", "rating": 4}

`verdict` is in the evaluator's terms: `pass` when the report meets the criterion (polarity
already applied), `fail`, or `na` (not applicable).
"""

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from omnidr.errors import UserError

LABELS_DIR = "labels"
LABELS_FILE = "labels.jsonl"


class HumanLabel(BaseModel):
    """One rater's verdict on one atom of one report, or one rater's 1-5 rating of the report."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    rater: str = Field(min_length=1, description="Who labelled.")
    system: str = Field(min_length=1, description="The system folder of the run root whose report was labelled.")
    task: str = Field(min_length=1, description="Task id of the report.")
    atom: str | None = Field(None, description="Atom id of the task's rubric tree; None for a holistic rating.")
    verdict: Literal["pass", "fail", "na"] | None = Field(None, description="The rater's decision on the atom.")
    rating: int | None = Field(None, ge=1, le=5, description="Holistic usefulness of the report, 1 (poor) to 5.")

    @model_validator(mode="after")
    def _one_kind(self) -> "HumanLabel":
        if self.atom is not None and (self.verdict is None or self.rating is not None):
            raise ValueError("an atom label needs a verdict and no rating")
        if self.atom is None and (self.rating is None or self.verdict is not None):
            raise ValueError("a line without an atom is a holistic rating: give rating (1-5) and no verdict")
        return self

    @property
    def report(self) -> tuple[str, str]:
        return (self.system, self.task)

    @property
    def key(self) -> tuple[str, str, str, str | None]:
        """What a later label of the same rater replaces."""
        return (self.rater, self.system, self.task, self.atom)


def read_labels(path: Path) -> list[tuple[int, HumanLabel]]:
    """Every label of a JSON Lines file with its line number; a bad line is a user error naming the
    file, the line and the field."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such labels file; pass a JSON Lines file of labels (see README, 'Human labels')")
    out = []
    for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((number, HumanLabel.model_validate(json.loads(line))))
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}:{number}: not a JSON object ({exc.msg} at column {exc.colno})") from None
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in err["loc"]) or "line"
            raise UserError(f"{path}:{number}: {where}: {err['msg']}") from None
    if not out:
        raise UserError(f"{path}: holds no label")
    return out


def merge_labels(old: list[HumanLabel], new: list[HumanLabel]) -> list[HumanLabel]:
    """`old` with `new` added; a new label of the same rater on the same atom (or rating) replaces the old one."""
    merged = {label.key: label for label in old}
    merged.update({label.key: label for label in new})
    return list(merged.values())


def write_labels(path: Path, labels: list[HumanLabel]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(label.model_dump_json(exclude_none=True) + "\n" for label in labels), "utf-8")
    tmp.replace(path)
