"""Task kinds as plugins: the `TaskKind` protocol, its registry, and the three built-in kinds (report: OmniDR-Bench;
short_answer: OpenDS-World; mcq: VideoOdyssey). Adding a kind is one module that implements the protocol (usually
by extending `KindBase` or `AnswerKind`) and calls `register_kind`; nothing else branches on the kind."""

from ._answers import AnswerKind
from ._base import KindBase
from ._mcq import McqKind
from ._protocol import Scoring, TaskKind
from ._registry import (
    DEFAULT_KIND,
    declared_kind,
    folder_kind,
    folders_kind,
    kind_named,
    register_kind,
    registered_kinds,
    snapshot_kind,
)
from ._report import ReportKind
from ._short_answer import ShortAnswerKind

for _kind in (ReportKind(), ShortAnswerKind(), McqKind()):
    register_kind(_kind)

__all__ = ["DEFAULT_KIND", "AnswerKind", "KindBase", "McqKind", "ReportKind", "Scoring", "ShortAnswerKind", "TaskKind",
           "declared_kind", "folder_kind", "folders_kind", "kind_named", "register_kind", "registered_kinds",
           "snapshot_kind"]
