"""The snapshot's bundled web corpus (`web/corpus.json`): pages the replay proxy serves offline."""

from pydantic import Field

from ._base import Record


class CorpusPage(Record):
    url: str = Field(description="Canonical URL the page is served under.")
    path: str = Field(description="File of the page, relative to the snapshot's `web/` folder.")
    content_type: str = Field(description="MIME type served for the page, e.g. text/html; charset=utf-8 or application/pdf.")
    title: str = Field(description="Title of the page or document.")


class WebCorpus(Record):
    pages: list[CorpusPage] = Field(description="Every bundled page.")
