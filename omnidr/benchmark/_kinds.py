"""Task kinds: what a snapshot's tasks ask for, and so how every later stage treats them.

A snapshot declares one kind in `snapshot.json` (`task_kind`); each kind brings four things, each owned by the
stage it belongs to and chosen there by the kind:

    kind          task model (benchmark)   delivery contract (attempts)      evaluator (evaluation)    aggregation (scoring)
    report        Task + facts + rubric    /output/report/ (the contract)    probes + rubric judge     Omni-ART score table
    short_answer  ShortAnswerTask          /output/answer.json (AnswerFile)  answer judge (App. C.4)   accuracy + breakdowns
    mcq           (VideoOdyssey, next)     one option letter                 exact match               accuracy by CCL bin

`report` is OmniDR-Bench (paper 000); `short_answer` is OpenDS-World (paper 002); `mcq` is VideoOdyssey (paper
004), declared here so that stages dispatch on a closed set, and refused by the loader until it is built.
"""

from enum import Enum


class TaskKind(str, Enum):
    report = "report"
    short_answer = "short_answer"
    mcq = "mcq"


BUILT_KINDS = (TaskKind.report, TaskKind.short_answer)
"""The kinds the sandbox runs end to end today."""
