"""Evaluation stage: one decision per Omni-ART atom of a delivered report, reproducibly.

M atoms are decided by deterministic probes of the report rendered in Debian's Chromium
(Playwright, hardened against hostile reports); J atoms by an OpenAI-compatible judge at
temperature 0 (three votes for gate atoms) or, without an endpoint, by a clearly labelled
offline baseline. Decisions are aggregated by the scoring stage and written, with everything
needed to audit them, to `evaluation.json`.

Short-answer tasks (OpenDS-World, paper 002) are judged by the answer judge (App. C.4): the paper's hard
rules first, then an OpenAI-compatible model (or the offline baseline) comparing each answer with the
reference; multiple-choice tasks (VideoOdyssey, paper 004) by the option letter read from each answer against the
key (`McqChecker`); `score_run` picks the evaluator by the snapshot's task kind.
"""

from ._answer_baseline import AnswerVerdict, baseline_answer_verdict, hard_rule
from ._answer_judge import (
    AnswerJudge,
    AnswerJudgement,
    AnswerRequest,
    BaselineAnswerJudge,
    OpenAIAnswerJudge,
)
from ._answer_prompt import ANSWER_PROMPT_VERSION
from ._answer_run import DeliveredAnswer, answer_judge_identity, delivered_answer, make_answer_judge, read_answer_run
from ._baseline import BaselineJudge
from ._browser import ChromiumBrowser, ProbeLimits, chromium_path
from ._cache import JudgeCache, report_sha256
from ._cli import probe, score
from ._container import judge_route, score_folder
from ._empty import check_empty_reports, content_free_report
from ._evaluate import TaskInputs, evaluate_report, read_evaluation
from ._judge import Judge, JudgeRequest, JudgeSettings, OpenAIJudge, judge_atom, parse_answer
from ._material import ReportMaterial
from ._mcq_check import (
    OFFICIAL_NO_REPLY,
    OFFICIAL_UNREAD,
    McqChecker,
    OptionReading,
    mcq_checker_identity,
    official_letter,
    parse_option,
    read_option,
)
from ._models import (
    ANSWER_EVALUATOR_VERSION,
    EVALUATOR_VERSION,
    AnswerEvaluation,
    AtomEvaluation,
    Evaluation,
    EvaluatorPlace,
    JudgeIdentity,
    JudgeUsage,
    JudgeVote,
    PageFault,
    ProbeResult,
    ProbeSession,
    RunEvaluation,
    TaskScore,
)
from ._probes import Call, ProbeContext, ProbeOutcome, entry_problem, probe_report
from ._prompt import PROMPT_VERSION
from ._request import ScoreRequest
from ._run import (
    JUDGE_CACHE_DIR,
    answer_systems,
    delivered_report,
    read_scored_run,
    require_one_judge,
    score_answers_with,
    score_run,
    score_run_async,
    system_decisions,
)

__all__ = [
    "ANSWER_EVALUATOR_VERSION", "ANSWER_PROMPT_VERSION", "AnswerEvaluation", "AnswerJudge", "AnswerJudgement",
    "AnswerRequest", "AnswerVerdict", "BaselineAnswerJudge", "DeliveredAnswer", "OpenAIAnswerJudge",
    "answer_judge_identity", "answer_systems", "baseline_answer_verdict", "delivered_answer", "hard_rule", "make_answer_judge",
    "read_answer_run", "score_answers_with", "McqChecker", "OptionReading", "mcq_checker_identity", "parse_option", "read_option", "official_letter", "OFFICIAL_NO_REPLY", "OFFICIAL_UNREAD",
    "EVALUATOR_VERSION", "JUDGE_CACHE_DIR", "PROMPT_VERSION", "AtomEvaluation", "BaselineJudge", "Call", "ChromiumBrowser",
    "Evaluation", "Judge", "JudgeCache", "JudgeIdentity", "JudgeRequest", "JudgeSettings", "JudgeUsage", "JudgeVote",
    "OpenAIJudge", "PageFault", "ProbeContext", "ProbeLimits", "ProbeOutcome", "ProbeResult", "ProbeSession",
    "ReportMaterial", "RunEvaluation", "TaskInputs", "TaskScore", "check_empty_reports", "chromium_path",
    "content_free_report", "delivered_report", "entry_problem", "evaluate_report", "judge_atom", "parse_answer",
    "probe", "probe_report", "read_evaluation", "read_scored_run", "report_sha256", "require_one_judge", "score",
    "judge_route", "ScoreRequest", "score_folder", "score_run", "score_run_async", "EvaluatorPlace", "system_decisions",
]
