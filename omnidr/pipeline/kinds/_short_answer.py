"""The short-answer kind: OpenDS-World (paper 002). An attempt delivers `/output/answer.json`; the answer judge
(App. C.4: the hard rules, then an OpenAI-compatible model or the offline baseline) compares it with the reference;
the board is accuracy with the paper's breakdowns (domain, modality, format, access, duration)."""

from omnidr.benchmark import TaskFormat

from ._answers import AnswerKind


class ShortAnswerKind(AnswerKind):
    name = "short_answer"
    task_format = TaskFormat.short_answer
    default_harness = "reference"
