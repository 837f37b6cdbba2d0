"""A web corpus's index: `corpus.json` of a replay or record folder, and of a snapshot's `web/` folder."""

from pydantic import BaseModel, ConfigDict, Field

CORPUS_FILE = "corpus.json"


class CorpusPage(BaseModel):
    """One page of a corpus (a snapshot's `web/corpus.json` too)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    url: str = Field(description="Canonical URL the page is served under.")
    path: str = Field(description="File of the page, relative to the corpus folder.")
    content_type: str = Field(
        description="MIME type served for the page, e.g. text/html; charset=utf-8 or application/pdf."
    )
    title: str = Field(description="Title of the page or document.")
    indexed: bool = Field(True, exclude_if=lambda v: v is True,
                          description="Whether the offline search index lists the page; False for a page reached only "
                                      "by following a link or submitting a form (a query's result page, a data API's "
                                      "answer), so that a parameterized query cannot be skipped by a search.")


class WebCorpus(BaseModel):
    """`corpus.json` of a corpus folder (a snapshot's `web/` too)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    pages: list[CorpusPage] = Field(description="Every page of the corpus.")
