"""The checker of multiple-choice answers (task kind `mcq`, VideoOdyssey, paper 004): the option letter is read from
the model's reply and compared with the answer key.

Paper 004, Sec. 4.1: "all model outputs were evaluated through direct comparison with ground-truth answers", an
exact match of the chosen option. The paper does not say how a letter is read from free text; the rules here are
ours, chosen so that a reply in any common spelling of one letter counts and a reply that names no option, or two
different ones, never counts as a guess:

1. The whole reply is one letter, bare or dressed: `B`, `(B)`, `B.`, `b)`, `**B**`, `[C]`.
2. The reply starts with a letter followed by a delimiter (`B. The man...`, `c) ...`, `A: ...`, `D - ...`) or a
   line break, or starts with B, C or D followed by a space (`B because...`).
3. A letter after an answer phrase anywhere: `Answer: B`, `The answer is B because...`, `Option C`, `choice D`,
   `I choose A`, `final answer: (c)`.
4. With no letter read by 1-3, a reply that quotes exactly one option's text (case, spacing and punctuation
   aside; an option quoted only inside a longer quoted option does not count twice).

The article rule: a capital "A" that starts the reply (or follows a colon) and is followed by a space and a
lowercase word ("A red square appears three times") is the article, not option A, unless that word is a
reasoning connective ("A because ..."); after "answer is", "option", "choice" or a verb of choosing, "A" is always
the letter. A lowercase letter counts only where it cannot be a word: alone, in brackets or before a delimiter.
Such a reply is then read by rule 4 or refused.

Refused (no option): an empty reply, a reply with none of the above, and a reply that names two different letters
as answers ("A or C", "B/C", "Answer: A ... so the answer is C"). A refused reply is wrong and recorded as
unparseable.
"""

import json
import re
import time
import unicodedata
from dataclasses import dataclass

from sandbox.models import OPTION_LETTERS

from ._answer_baseline import AnswerVerdict
from ._answer_judge import AnswerJudgement, AnswerRequest
from ._models import JudgeIdentity

MCQ_CHECKER_MODEL = "option-letter-parser-1"
"""Version of the parsing rules above; bumped when they change, so that evaluations made by other rules are not
mixed with these."""

MCQ_CHECKER_DESCRIPTION = "the option letter parsed from the answer"

_CONNECTIVES = frozenset("because since as given for so is was -".split())
_MARKUP = re.compile(r"[*_`#>]+")
_OPEN, _CLOSE = r"[\(\[]?", r"[\)\]]?"
_STOP = r"(?![\w'’])"  # the letter is a token of its own, not the start of a word
_ALTERNATIVE = re.compile(rf"\s*{_CLOSE}\s*(?:(?i:or|and|vs\.?)|/|,|&)\s*{_OPEN}\s*([A-D]){_STOP}")
_WHOLE = re.compile(rf"^{_OPEN}\s*([A-Da-d])\s*{_CLOSE}\s*[.:;!]?$")
_LEADING = re.compile(rf"^{_OPEN}([A-Da-d])(?:[\)\]]|\s*[.:)\-–—,;]|\s*\n)")
_LEADING_BARE = re.compile(r"^([A-D])\s+(\S+)")
_FIRST = re.compile(rf"^{_OPEN}([A-D]){_STOP}")
_MARKER = re.compile(
    rf"\b(?:(?:final\s+|correct\s+|right\s+|best\s+)?(?:answer|option|choice|letter)(?:\s+(?:is|would\s+be|should\s+be|"
    rf"will\s+be|=))?|(?:i\s+)?(?:choose|chose|pick|picked|select|selected|go\s+with|going\s+with)(?:\s+(?:option|"
    rf"answer|choice))?)\s*(:|=|-)?\s*({_OPEN})\s*([A-Da-d]){_STOP}(\s*[\)\]])?", re.IGNORECASE)


@dataclass(frozen=True)
class OptionReading:
    """What was read from one reply: the letter, or why there is none, and by which rule."""

    letter: str | None
    how: str  # "letter", "option text", or why nothing was read


def _clean(text: str) -> str:
    return _MARKUP.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def _article(letter: str, rest: str) -> bool:
    """Whether a capital "A" followed by `rest` is the article: a space, then a lowercase word that is no connective."""
    m = re.match(r"[ \t]+([^\s]+)", rest)
    return letter == "A" and m is not None and m.group(1)[0].islower() and m.group(1).lower() not in _CONNECTIVES


def _with_alternative(letter: str, rest: str) -> set[str]:
    m = _ALTERNATIVE.match(rest)
    return {letter, m.group(1).upper()} if m else {letter}


def _mentions(text: str) -> set[str]:
    """Every letter the reply names as its answer (rules 2 and 3)."""
    found: set[str] = set()
    if (m := _FIRST.match(text)) and len(pair := _with_alternative(m.group(1), text[m.end(1):])) > 1:
        found |= pair  # "A or C", "B/C": two answers, whatever follows
    elif m := _LEADING.match(text):
        found |= _with_alternative(m.group(1).upper(), text[m.end(1):])
    elif (m := _LEADING_BARE.match(text)) and not _article(m.group(1), text[m.end(1):]):
        found |= _with_alternative(m.group(1), text[m.end(1):])
    for m in _MARKER.finditer(text):
        colon, bracket, letter, closed = m.group(1), m.group(2), m.group(3), m.group(4)
        rest = text[m.end(3):]
        if letter.islower() and not (bracket or closed or re.match(r"\s*(?:[.,;:!?]|$)", rest)):
            continue  # "the answer is a red square": a word, not a letter
        if colon and _article(letter, rest):
            continue  # "Answer: A red square ...": the article
        found |= _with_alternative(letter.upper(), rest)
    return found


def _fold(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def _quoted_option(text: str, options: list[str]) -> list[int]:
    """Indices of the options whose text the reply quotes, leaving out one quoted only inside another."""
    reply = f" {_fold(text)} "
    folded = [_fold(o) for o in options]
    hits = [i for i, o in enumerate(folded) if o and f" {o} " in reply]
    return [i for i in hits if not any(j != i and f" {folded[i]} " in f" {folded[j]} " for j in hits)]


def read_option(text: str, options: list[str]) -> OptionReading:
    """The option a reply chooses, by the rules of the module docstring, or why none is read."""
    letters = OPTION_LETTERS[:len(options)]
    clean = _clean(text)
    if not clean:
        return OptionReading(None, "empty answer")
    if m := _WHOLE.match(clean):
        letter = m.group(1).upper()
        return OptionReading(letter, "letter") if letter in letters else OptionReading(None, f"no option {letter}")
    named = _mentions(clean)
    if len(named) > 1:
        return OptionReading(None, f"names more than one option ({', '.join(sorted(named))})")
    if named:
        letter = named.pop()
        return OptionReading(letter, "letter") if letter in letters else OptionReading(None, f"no option {letter}")
    quoted = _quoted_option(clean, options)
    if len(quoted) == 1:
        return OptionReading(letters[quoted[0]], "option text")
    if len(quoted) > 1:
        return OptionReading(None, f"quotes more than one option ({', '.join(letters[i] for i in quoted)})")
    return OptionReading(None, "no option letter found")


def parse_option(text: str, options: list[str]) -> str | None:
    """The letter (A-D) of the option `text` chooses among `options`, or None when it names none or several."""
    return read_option(text, options).letter


OFFICIAL_NO_REPLY = "API_Error"
OFFICIAL_UNREAD = "Error"
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_OFFICIAL_FIELD = re.compile(r"(?:predicted_)?answer[\"']?\s*[:=]\s*[\"']?([A-D])[\"']?", re.IGNORECASE)
_OFFICIAL_WORD = re.compile(r"\b([A-D])\b")
_OFFICIAL_ANY = re.compile(r"([A-D])")


def official_letter(reply: str | None) -> str:
    """The option letter the VideoOdyssey authors' runner (`scripts/run_eval.py` of their release) extracts from a
    reply, or what it writes instead: `API_Error` when there is no reply (the request failed), `Error` when none of
    its rules finds a letter. Its rules, in order: the text inside a ``` fence, if any, is read instead of the
    whole; a JSON object's `predicted_answer` (else `answer`) holding a standalone letter; `answer: X` or
    `predicted_answer = X`; the first standalone A-D of the upper-cased text; the first A-D character anywhere in
    it. Looser than `read_option` on purpose: it reproduces the authors' numbers, not ours (a reply "a red square"
    reads as A, "I don't know" as D)."""
    if reply is None:
        return OFFICIAL_NO_REPLY
    text = reply.strip()
    if not text:
        return OFFICIAL_UNREAD
    fenced = _FENCE.search(text)
    if fenced is not None:
        text = fenced.group(1).strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        value = parsed.get("predicted_answer") or parsed.get("answer")
        found = _OFFICIAL_WORD.search(str(value).upper()) if value is not None else None
        if found is not None:
            return found.group(1)
    for pattern, source in ((_OFFICIAL_FIELD, text), (_OFFICIAL_WORD, text.upper()), (_OFFICIAL_ANY, text.upper())):
        found = pattern.search(source)
        if found is not None:
            return found.group(1).upper()
    return OFFICIAL_UNREAD


def mcq_checker_identity() -> JudgeIdentity:
    """The checker's identity, the same for every run (nothing is configured)."""
    return JudgeIdentity(kind="mcq-exact-match", model=MCQ_CHECKER_MODEL, prompt_version="no-prompt",
                         description=MCQ_CHECKER_DESCRIPTION)


class McqChecker:
    """The `AnswerJudge` of multiple-choice tasks: no network, no cache, no cost. The request's `reference` is the
    key's letter and its `options` the four options. A failed execution or an empty answer is wrong by rule; an
    answer whose option cannot be read is wrong and marked unparseable."""

    def __init__(self) -> None:
        self.identity = mcq_checker_identity()
        self.endpoint: str | None = None

    async def aclose(self) -> None:
        return None

    async def judge(self, request: AnswerRequest) -> AnswerJudgement:
        started = time.monotonic()
        if request.options is None:
            raise ValueError("a multiple-choice answer is checked against its options; the request has none")

        def done(correct: bool, reason: str, **kw) -> AnswerJudgement:
            return AnswerJudgement(verdict=AnswerVerdict(correct=correct, confidence=1.0, reason=reason),
                                   elapsed_s=round(time.monotonic() - started, 4), **kw)

        if request.execution_error:
            return done(False, f"execution failed: {request.execution_error}", hard_rule=True)
        if not request.candidate.strip():
            return done(False, "empty answer", hard_rule=True)
        reading = read_option(request.candidate, list(request.options))
        if reading.letter is None:
            return done(False, f"unparseable: {reading.how}", unparseable=True)
        by = " (by its option text)" if reading.how == "option text" else ""
        return done(reading.letter == request.reference, f"chose {reading.letter}{by}; the key is {request.reference}",
                    chosen=reading.letter)
