"""Task formats: how a snapshot's tasks are stored and what an attempt delivers.

A snapshot declares its task kind in `snapshot.json` (`task_kind`). The kinds themselves are plugins
(`omnidr.pipeline.kinds`: a protocol, a registry, one module per kind) that own evaluation, score, board, tables,
metrics and comparisons. Each kind builds on one of the three built-in formats below, which the lower stages read:

    format        task model (benchmark)   delivery contract (attempts)      evaluator (evaluation)
    report        Task + facts + rubric    /output/report/ (the contract)    probes + rubric judge
    short_answer  ShortAnswerTask          /output/answer.json (AnswerFile)  answer judge (App. C.4)
    mcq           McqTask (+ videos.json)  /output/answer.json (AnswerFile)  option exact match

`report` is OmniDR-Bench (paper 000); `short_answer` is OpenDS-World (paper 002); `mcq` is VideoOdyssey (paper
004); each built-in kind has the name of its format. A kind registered later names the format it builds on
(`register_task_format`), so that its snapshots load, validate and run with no new code in these stages.
"""

from enum import Enum


class TaskKind(str, Enum):
    report = "report"
    short_answer = "short_answer"
    mcq = "mcq"


BUILT_KINDS = (TaskKind.report, TaskKind.short_answer, TaskKind.mcq)
"""The kinds the sandbox runs end to end."""

ANSWER_KINDS = (TaskKind.short_answer, TaskKind.mcq)
"""The kinds whose tasks are answered in `/output/answer.json` and scored by accuracy."""

_FORMATS: dict[str, TaskKind] = {k.value: k for k in BUILT_KINDS}
"""Declared kind name -> the task format its snapshots use (files, task model, delivery). The three built-in
kinds are their own formats; a kind registered later (`omnidr.pipeline.register_kind`) names the format it builds on,
so that loading, validating and running its tasks need no new code below the kinds package."""


def register_task_format(name: str, fmt: TaskKind) -> None:
    """Let snapshots declare `task_kind: name`, loaded and run as tasks of the built-in format `fmt`."""
    if name in _FORMATS and _FORMATS[name] is not fmt:
        raise ValueError(f"task kind {name!r} is already registered with the {_FORMATS[name].value} format")
    _FORMATS[name] = fmt


def task_format(kind: "TaskKind | str") -> TaskKind | None:
    """The task format of a declared kind name, None when no kind of that name is registered."""
    return _FORMATS.get(kind.value if isinstance(kind, TaskKind) else kind)


def kind_name(kind: "TaskKind | str") -> str:
    """A declared kind as its name (`TaskKind.mcq` -> `mcq`)."""
    return kind.value if isinstance(kind, TaskKind) else kind
