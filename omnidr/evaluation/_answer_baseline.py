"""The answer judge's verdict, and its offline baseline for short-answer tasks (task kind `short_answer`).

OpenDS-World's judge (paper 002, App. C.4) receives the question, the reference answer, the candidate answer and
the execution status, and returns JSON {correct, confidence, reason}. It judges semantic equivalence and
completeness, not the question itself. Numbers, named entities, dates, directions and list membership must be
right; refusals, empty answers, "insufficient evidence" and failed executions are incorrect.

`baseline_answer_verdict` is a deterministic stand-in so that a short-answer demo runs without an endpoint,
labelled `offline-baseline` like the report judge's baseline: normalised exact match, or every number and every
content word of the reference found in the candidate with no number contradicting it. It is not comparable with a
model judge: it cannot see paraphrase. The paper's hard rules (refusal, empty, failed execution) are applied the
same way by both.
"""

import re
import unicodedata

from pydantic import BaseModel, ConfigDict, Field

ANSWER_BASELINE_MODEL = "answer-lexical-baseline-1"

# What a refusal or an admission of insufficient evidence looks like (App. C.3.2 asks the model to acknowledge
# insufficient evidence; App. C.4 counts such an answer as incorrect).
_REFUSAL = re.compile(
    r"\b(insufficient (evidence|information)|not enough (evidence|information)|cannot (be )?(determine|determined|"
    r"answer|answered|find|found|verify|verified)|can ?not (determine|answer|find)|unable to (determine|answer|find|"
    r"verify)|could not (determine|find|verify)|no (reliable |sufficient )?(evidence|information) (was )?found|"
    r"i don'?t know)\b", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*")
_WORD = re.compile(r"[^\W\d_]+")
_STOP = frozenset("a an the of in on at to for and or is was are were be by with as from that this it its".split())


class AnswerVerdict(BaseModel):
    """The judge's decision on one candidate answer (App. C.4)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    correct: bool = Field(description="Whether the candidate is equivalent to the reference and complete.")
    confidence: float = Field(ge=0, le=1, description="The judge's confidence in the decision.")
    reason: str = Field(description="A brief reason.")


def _normal(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"[^\w\s.,-]", " ", text)
    return " ".join(text.split()).strip(" .,")


def _numbers(text: str) -> set[float]:
    found = set()
    for raw in _NUMBER.findall(text):
        digits = raw.replace(",", "") if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", raw) else raw.replace(",", ".")
        try:
            found.add(float(digits))
        except ValueError:
            continue
    return found


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if w not in _STOP}


def hard_rule(candidate: str, execution_error: str | None) -> AnswerVerdict | None:
    """The offline baseline's reading of the judge's fixed rules (App. C.4: failed executions, empty answers,
    refusals and insufficient evidence are incorrect), by pattern: the baseline cannot read a sentence, so it takes a
    refusal phrase anywhere as a refusal. The model judge does not use this (see `empty_answer`). None when no such
    rule applies."""
    if execution_error:
        return AnswerVerdict(correct=False, confidence=1.0, reason=f"execution failed: {execution_error}")
    if not candidate.strip():
        return AnswerVerdict(correct=False, confidence=1.0, reason="empty answer")
    if _REFUSAL.search(candidate):
        return AnswerVerdict(correct=False, confidence=1.0, reason="a refusal or insufficient evidence")
    return None


def empty_answer(candidate: str, execution_error: str | None) -> AnswerVerdict | None:
    """The one verdict taken without the model judge: an empty answer is incorrect. Seed 002, App. C.4: the judge
    receives the question, the reference, the candidate and the execution status and decides; refusals,
    insufficient evidence and failed executions are incorrect by its rules, so it is the judge that applies them (a
    right answer that adds "the date could not be verified" is the judge's to read). None for any other answer."""
    if candidate.strip():
        return None
    why = f"empty answer (execution failed: {execution_error})" if execution_error else "empty answer"
    return AnswerVerdict(correct=False, confidence=1.0, reason=why)


def baseline_answer_verdict(question: str, reference: str, candidate: str,
                            execution_error: str | None = None) -> AnswerVerdict:
    """The offline baseline's verdict on `candidate` against `reference` (the question is not used: the judge
    does not solve the task, App. C.4)."""
    del question
    fixed = hard_rule(candidate, execution_error)
    if fixed is not None:
        return fixed
    ref, cand = _normal(reference), _normal(candidate)
    if ref == cand:
        return AnswerVerdict(correct=True, confidence=1.0, reason="the same answer after normalisation")
    want_numbers, have_numbers = _numbers(reference), _numbers(candidate)
    missing_numbers = want_numbers - have_numbers
    if missing_numbers:
        shown = ", ".join(f"{n:g}" for n in sorted(missing_numbers))
        return AnswerVerdict(correct=False, confidence=0.9, reason=f"the reference's number(s) {shown} are missing")
    missing_words = _words(reference) - _words(candidate)
    if missing_words:
        return AnswerVerdict(correct=False, confidence=0.6,
                             reason=f"the reference's term(s) {', '.join(sorted(missing_words))} are missing")
    if want_numbers and len(have_numbers - want_numbers) > 0 and len(have_numbers) > len(want_numbers):
        return AnswerVerdict(correct=False, confidence=0.6, reason="other numbers besides the reference's: ambiguous")
    return AnswerVerdict(correct=True, confidence=0.7, reason="every number and term of the reference is in the answer")
