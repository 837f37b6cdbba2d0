"""The answer judge of short-answer tasks (OpenDS-World, paper 002, App. C.4), against any OpenAI-compatible
endpoint, and its offline baseline.

The judge decides (App. C.4): only an empty answer is incorrect without a call (`empty_answer`); refusals,
admissions of insufficient evidence and failed executions are incorrect by the judge's rules, which the model applies
to what it is shown (the execution status included). The offline baseline, which cannot read, applies them by
pattern (`hard_rule`). Any other answer goes to the model at temperature
0 with a JSON-schema answer ({correct, confidence, reason}), through the same endpoint handling as the report
judge (`ChatEndpoint`: a concurrency bound, retries with backoff on 429, 5xx, timeouts and dropped connections).
A verdict is cached by content (`answer_key`), so re-scoring an unchanged answer calls nothing; a judge that still
fails after its retries gives no verdict, and the evaluation records why.
"""

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ._answer_baseline import ANSWER_BASELINE_MODEL, AnswerVerdict, baseline_answer_verdict, empty_answer, hard_rule
from ._answer_prompt import ANSWER_PROMPT_VERSION, ANSWER_RESPONSE_FORMAT, answer_messages, parse_answer_verdict
from ._baseline import BASELINE_LABEL
from ._cache import JudgeCache, answer_key
from ._judge import ChatEndpoint, JudgeSettings
from ._models import JudgeIdentity, JudgeUsage

ANSWER_BASELINE_DESCRIPTION = "normalised exact and numeric match"


@dataclass(frozen=True)
class AnswerRequest:
    """What the judge is given about one answer (App. C.4)."""

    question: str
    reference: str
    candidate: str  # "" when there is no answer
    execution_error: str | None = None
    options: tuple[str, ...] | None = None  # a multiple-choice question's options, A to D in order (reference: a letter)


@dataclass(frozen=True)
class AnswerJudgement:
    """The judge's verdict on one answer, or why there is none, and what it cost."""

    verdict: AnswerVerdict | None
    hard_rule: bool = False
    cached: bool = False
    error: str | None = None
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    elapsed_s: float = 0.0
    chosen: str | None = None  # multiple choice: the option letter read from the answer
    unparseable: bool = False  # multiple choice: a non-empty answer from which no single option could be read

    def usage(self) -> JudgeUsage:
        asked = not self.hard_rule
        return JudgeUsage(calls=self.calls, cache_hits=int(self.cached), votes=int(asked),
                          failed_votes=int(asked and self.verdict is None), input_tokens=self.input_tokens,
                          output_tokens=self.output_tokens, cached_input_tokens=self.cached_input_tokens)


class AnswerJudge(Protocol):
    """Anything that judges one answer: a short answer (the model judge or its baseline) or a multiple-choice
    answer (`McqChecker`)."""

    identity: JudgeIdentity

    @property
    def endpoint(self) -> str | None: ...

    async def judge(self, request: AnswerRequest) -> AnswerJudgement: ...

    async def aclose(self) -> None: ...


def answer_judge_identity(settings: JudgeSettings | None) -> JudgeIdentity:
    """The identity the short-answer judge of these settings has (the offline baseline without settings): known
    before any answer is judged, so that a resumed run finds the evaluations of the same judge."""
    if settings is None:
        return JudgeIdentity(kind="offline-baseline", model=ANSWER_BASELINE_MODEL, prompt_version="no-prompt",
                             description=ANSWER_BASELINE_DESCRIPTION)
    return JudgeIdentity(kind="openai-compatible", model=settings.model, prompt_version=ANSWER_PROMPT_VERSION)


def _fixed(request: AnswerRequest, started: float, rule=hard_rule) -> AnswerJudgement | None:
    verdict = rule(request.candidate, request.execution_error)
    if verdict is None:
        return None
    return AnswerJudgement(verdict=verdict, hard_rule=True, elapsed_s=round(time.monotonic() - started, 4))


class OpenAIAnswerJudge:
    """The model answer judge behind an OpenAI-compatible chat-completions endpoint."""

    def __init__(self, settings: JudgeSettings, cache: JudgeCache | None = None):
        self.identity = answer_judge_identity(settings)
        self.endpoint = settings.base_url
        self.cache = cache
        self.chat = ChatEndpoint(settings)

    async def aclose(self) -> None:
        await self.chat.aclose()

    async def judge(self, request: AnswerRequest) -> AnswerJudgement:
        started = time.monotonic()
        fixed = _fixed(request, started, empty_answer)
        if fixed is not None:
            return fixed
        key = answer_key(self.identity, request.question, request.reference, request.candidate, request.execution_error)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            try:
                verdict = AnswerVerdict.model_validate(hit["verdict"])
            except (KeyError, ValueError):
                verdict = None  # a damaged entry: ask again
            if verdict is not None:
                return AnswerJudgement(verdict=verdict, cached=True, elapsed_s=round(time.monotonic() - started, 4))
        messages = answer_messages(request.question, request.reference, request.candidate, request.execution_error)
        result = await self.chat.ask(messages, ANSWER_RESPONSE_FORMAT, parse_answer_verdict)
        if result.value is not None and self.cache is not None:
            self.cache.put(key, {"verdict": result.value.model_dump(mode="json"), "judge": self.identity.key,
                                 "reference": request.reference, "candidate": request.candidate})
        return AnswerJudgement(verdict=result.value, error=None if result.value is not None else result.error,
                               calls=result.calls, input_tokens=result.input_tokens, output_tokens=result.output_tokens,
                               cached_input_tokens=result.cached_input_tokens,
                               elapsed_s=round(time.monotonic() - started, 3))


class BaselineAnswerJudge:
    """Deterministic, offline, free: `baseline_answer_verdict` (normalised exact match, or every number and term of
    the reference in the answer). Not comparable with a model judge: it cannot see paraphrase."""

    def __init__(self) -> None:
        self.identity = answer_judge_identity(None)
        self.endpoint = None

    async def aclose(self) -> None:
        return None

    async def judge(self, request: AnswerRequest) -> AnswerJudgement:
        started = time.monotonic()
        fixed = _fixed(request, started)
        if fixed is not None:
            return fixed
        verdict = baseline_answer_verdict(request.question, request.reference, request.candidate,
                                          request.execution_error)
        labelled = verdict.model_copy(update={"reason": f"{BASELINE_LABEL} {verdict.reason}"})
        return AnswerJudgement(verdict=labelled, elapsed_s=round(time.monotonic() - started, 4))


def make_short_answer_judge(settings: JudgeSettings | None, cache_dir: Path | None) -> AnswerJudge:
    """The model answer judge when an endpoint is configured, else the offline baseline."""
    if settings is None:
        return BaselineAnswerJudge()
    return OpenAIAnswerJudge(settings, JudgeCache(cache_dir) if cache_dir is not None else None)
