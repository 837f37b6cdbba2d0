"""The report material: what the rendered report says, by section, as the judge receives it."""

import hashlib
import json
from typing import Literal

from pydantic import Field

from ._models import EvaluationModel

SECTION_ORDER = ("overview", "timeline", "anchors", "findings", "sources")
MAX_SECTION_CHARS = 200_000
"""Characters of one section's text the judge is given; a longer section is cut there, and both
`material.json` (`cut_sections`) and the judge's prompt say so (never silently)."""


class MaterialUnit(EvaluationModel):
    """One readable unit of the rendered report: a paragraph, a timeline segment, a claim, a source record."""

    section: str = Field(description="Section id the unit sits in.")
    kind: Literal["paragraph", "segment", "anchor", "finding", "claim", "caption", "source", "line"] = Field(
        description="What the unit is."
    )
    text: str = Field(description="Its rendered text, whitespace-normalised.")
    cited: bool = Field(False, description="For claims: it carries at least one inline citation.")
    cites: list[str] = Field(default_factory=list, description="For claims: the source ids it cites.")


class Figure(EvaluationModel):
    """An image the report shows from its own folder."""

    path: str = Field(description="File relative to the report folder.")
    caption: str = Field(description="Its caption (or alt text).")


class ReportMaterial(EvaluationModel):
    """Everything the judge may be given about one report (`material.json` next to evaluation.json)."""

    title: str = Field("", description="Rendered report title.")
    query: str = Field("", description="The request shown in the report header.")
    sections: dict[str, str] = Field(default_factory=dict, description="Section id -> rendered text (at most "
                                     "MAX_SECTION_CHARS characters).")
    cut_sections: dict[str, int] = Field(default_factory=dict, description="Section id -> its full length in characters, "
                                         "for the sections longer than MAX_SECTION_CHARS (their text is the beginning).")
    units: list[MaterialUnit] = Field(default_factory=list, description="The sections split into units, document order.")
    figures: list[Figure] = Field(default_factory=list, description="Local images shown with a caption.")
    screenshots: dict[str, str] = Field(default_factory=dict, description="Screenshot name -> file relative to the evaluation folder.")
    moments: list[float] = Field(default_factory=list, description="Source-video moments the report cites (its timestamp "
                                 "links), seconds, distinct and sorted.")
    frames: dict[str, str] = Field(default_factory=dict, description="Moment (seconds, as text) -> frame of the snapshot's "
                                   "source video there, relative to the evaluation folder (visual criteria).")
    frames_note: str | None = Field(None, description="Why no frames were taken, when visual criteria needed them.")

    @property
    def empty(self) -> bool:
        return not any(u.text for u in self.units) and not any(self.sections.get(s) for s in SECTION_ORDER)

    def text_of(self, sections: tuple[str, ...], tag: str = "") -> str:
        """The named sections as one text, headed by the title (what a judge prompt carries). With `tag`, each
        section header carries it, so that a header the report's own text forges (without the tag) is told apart."""
        parts = [f"Title: {self.title}"] if self.title else []
        for s in sections:
            body = self.sections.get(s, "").strip()
            cut = (f" (only its first {MAX_SECTION_CHARS:,} of {self.cut_sections[s]:,} characters are shown)"
                   if s in self.cut_sections else "")
            parts.append(f"=== Section '{s}'{f' {tag}' if tag else ''}{cut} ===\n{body if body else '(empty)'}")
        return "\n\n".join(parts)

    def fence_tag(self, sections: tuple[str, ...]) -> str:
        """A tag the report's text cannot know: a digest of that very text (title and sections), so a line that
        forges it would have to contain the digest of the text it is part of."""
        shown = [self.title, [(s, self.sections.get(s, "")) for s in sections]]
        return hashlib.sha256(json.dumps(shown, ensure_ascii=False).encode()).hexdigest()[:16]
