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

The lower stages ask a format what it is (`delivers_answer`, `shared_videos`, `answered_directly`, `agent_kind`)
or look up what they keep per format in a table of their own; they do not compare kinds.
"""

from enum import Enum


class TaskFormat(str, Enum):
    report = "report"
    short_answer = "short_answer"
    mcq = "mcq"

    @property
    def delivers_answer(self) -> bool:
        """Whether an attempt delivers `/output/answer.json` (an answer, right or wrong) rather than a report
        folder scored by its rubric."""
        return self is not TaskFormat.report

    @property
    def shared_videos(self) -> bool:
        """Whether the tasks are questions on the snapshot's shared videos (`videos.json`) rather than each on a
        video of its own folder."""
        return self is TaskFormat.mcq

    @property
    def answered_directly(self) -> bool:
        """Whether the tasks go to the model directly, with inputs a harness's input setting prepares (no agent, no
        tools; paper 004 evaluates models), rather than to an agent that researches them."""
        return self is TaskFormat.mcq

    @property
    def agent_kind(self) -> str | None:
        """What the agent is told its task is (`OMNIDR_TASK_KIND`); None, nothing told, for a report, which the
        agents and skills assume when told nothing."""
        return None if self is TaskFormat.report else self.value


BUILT_KINDS = tuple(TaskFormat)
"""The kinds the sandbox runs end to end (each built-in kind has the name of its format)."""

_FORMATS: dict[str, TaskFormat] = {k.value: k for k in BUILT_KINDS}
"""Declared kind name -> the task format its snapshots use (files, task model, delivery). The three built-in
kinds are their own formats; a kind registered later (`omnidr.pipeline.register_kind`) names the format it builds on,
so that loading, validating and running its tasks need no new code below the kinds package."""


def register_task_format(name: str, fmt: TaskFormat) -> None:
    """Let snapshots declare `task_kind: name`, loaded and run as tasks of the built-in format `fmt`."""
    if name in _FORMATS and _FORMATS[name] is not fmt:
        raise ValueError(f"task kind {name!r} is already registered with the {_FORMATS[name].value} format")
    _FORMATS[name] = fmt


def task_format(kind: "TaskFormat | str") -> TaskFormat | None:
    """The task format of a declared kind name, None when no kind of that name is registered."""
    return _FORMATS.get(kind.value if isinstance(kind, TaskFormat) else kind)


def kind_name(kind: "TaskFormat | str") -> str:
    """A declared kind as its name (`TaskFormat.mcq` -> `mcq`)."""
    return kind.value if isinstance(kind, TaskFormat) else kind
