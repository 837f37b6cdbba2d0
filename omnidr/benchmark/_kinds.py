"""Task kinds: what a snapshot's tasks ask for, and so how every later stage treats them.

A snapshot declares one kind in `snapshot.json` (`task_kind`); each kind brings four things, each owned by the
stage it belongs to and chosen there by the kind:

    kind          task model (benchmark)   delivery contract (attempts)      evaluator (evaluation)    aggregation (scoring)
    report        Task + facts + rubric    /output/report/ (the contract)    probes + rubric judge     Omni-ART score table
    short_answer  ShortAnswerTask          /output/answer.json (AnswerFile)  answer judge (App. C.4)   accuracy + breakdowns
    mcq           McqTask (+ videos.json)  /output/answer.json (AnswerFile)  option exact match        accuracy by CCL bin

`report` is OmniDR-Bench (paper 000); `short_answer` is OpenDS-World (paper 002); `mcq` is VideoOdyssey (paper
004). The two answer kinds share the answer file, the evaluation records and the accuracy leaderboard; they differ
in what the agent is given, how an answer is checked and which breakdowns are reported.
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
