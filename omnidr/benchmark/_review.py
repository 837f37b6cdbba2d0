"""Review decisions on validation warnings (paper App. E.4: "Errors must be resolved before release,
while warnings require an explicit review decision").

A snapshot records them in `reviewed-warnings.json`, one entry per accepted warning, matched on the
warning's file, field and message exactly as `omnidr snapshot validate` prints them. `snapshot freeze`
refuses a snapshot that has a warning without a decision; an entry that matches no current warning is
an error, so the file never vouches for something that is no longer there.
"""

from typing import Literal

from pydantic import Field

from ._base import Record

REVIEW_FILE = "reviewed-warnings.json"


class WarningReview(Record):
    """One reviewer's decision to release a snapshot with one warning as it stands."""

    file: str = Field(description="The warning's file, relative to the snapshot root (as validate prints it).")
    field: str = Field("", description="The warning's field path inside the file ('' for the whole file).")
    message: str = Field(description="The warning's message, word for word.")
    decision: Literal["accept"] = Field(description="'accept': keep the content as it is; a fix needs no entry.")
    reviewer: str = Field(min_length=1, description="Who decided.")
    reason: str = Field(min_length=1, description="Why the warning is acceptable for this task.")

    def key(self) -> tuple[str, str, str]:
        return (self.file, self.field, self.message)


class WarningReviews(Record):
    reviews: list[WarningReview] = Field(description="Every recorded decision.")
