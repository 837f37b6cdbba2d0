"""The offline baseline judge: a deterministic lexical stand-in for the model judge.

It exists so that the demo runs end to end without an endpoint, and it is labelled as such in
every evaluation (judge kind `offline-baseline`): its scores are not comparable with model-judged
scores, and leaderboards refuse to mix them.

Rule, for an atom bound to a fact: the report states the fact when one unit of the relevant
sections (a paragraph, a timeline segment, a claim, a source record) contains the fact's numbers
and at least half of its key terms. Citation atoms (dimension R) only look at cited claims: the
fact must be stated next to a citation. An atom with expected polarity "no" describes a
misstatement; it is found when a unit matches the criterion's own numbers and terms without
carrying the fact's numbers.
"""

import re
import time

from omnidr.benchmark import direction_inventory

from ._judge import JudgeRequest
from ._material import MaterialUnit
from ._models import JudgeIdentity, JudgeVote
from ._prompt import sections_for

BASELINE_MODEL = "lexical-baseline-1"
BASELINE_LABEL = "[offline baseline]"
TERM_SHARE = 0.5
MISSTATEMENT_SHARE = 0.6

_STOP = frozenset("""
about above after again also among another because been before being below between both cannot could does doing
down during each either every from further have having here into itself just more most much must only other
over same should some such than that their them then there these they this those through under until very
what when where which while whom with within without would your report reports video does states state
stated give gives given mention mentions name names says said tell tells explain explains uses used using
""".split())
_NUMBER = re.compile(r"\d+(?:[.:]\d+)?")
_WORD = re.compile(r"[a-z][a-z'-]{3,}")
_CJK = re.compile(r"[\u4e00-\u9fff]+")


def numbers(text: str) -> set[str]:
    """Numbers as written (6.8, 50, 0:24), with trailing zeros of decimals dropped."""
    out = set()
    for n in _NUMBER.findall(text):
        if "." in n:
            n = n.rstrip("0").rstrip(".")
        out.add(n)
    return out


def terms(text: str) -> set[str]:
    """Key terms: 5-letter stems of longer Latin words that are not stop words, and CJK bigrams."""
    lower = text.lower()
    found = {w.strip("'-")[:5] for w in _WORD.findall(lower) if w.strip("'-") not in _STOP}
    for run in _CJK.findall(text):
        found.update(run[i:i + 2] for i in range(len(run) - 1))
    return {t for t in found if len(t) >= 2}


def _unit_terms(unit: MaterialUnit) -> tuple[set[str], set[str]]:
    return numbers(unit.text), terms(unit.text)


def _share(wanted: set[str], have: set[str]) -> float:
    return len(wanted & have) / len(wanted) if wanted else 1.0


class BaselineJudge:
    """Deterministic, offline, free. See the module docstring for the rule."""

    def __init__(self) -> None:
        self.identity = JudgeIdentity(kind="offline-baseline", model=BASELINE_MODEL, prompt_version="no-prompt")
        self.endpoint = None

    async def aclose(self) -> None:
        return None

    def _units(self, request: JudgeRequest) -> list[MaterialUnit]:
        atom = request.atom
        wanted = set(sections_for(atom))
        units = [u for u in request.material.units if u.section in wanted and u.kind != "line"]
        if direction_inventory().by_id()[atom.direction].dimension.value == "R":
            units = [u for u in units if u.kind == "claim" and u.cited]
        return units

    async def vote(self, request: JudgeRequest, index: int) -> JudgeVote:
        started = time.monotonic()
        verdict, rationale, quote = self.decide(request)
        return JudgeVote(verdict=verdict, rationale=f"{BASELINE_LABEL} {rationale}", quote=quote,
                         quote_found=True if quote else None, elapsed_s=round(time.monotonic() - started, 4))

    def decide(self, request: JudgeRequest) -> tuple[str, str, str]:
        atom = request.atom
        units = self._units(request)
        if not units:
            return "no", "the relevant report sections hold no text (or no cited claim)", ""
        fact_text = request.fact.claim if request.fact is not None else atom.criterion
        fact_nums, fact_terms = numbers(fact_text), terms(fact_text)
        if atom.polarity.value == "no":
            crit_nums = numbers(atom.criterion) - fact_nums
            crit_terms = terms(atom.criterion)
            for u in units:
                nums, words = _unit_terms(u)
                if crit_nums and not crit_nums <= nums:
                    continue
                if fact_nums and fact_nums <= nums:
                    continue
                if _share(crit_terms, words) >= (MISSTATEMENT_SHARE if crit_nums else 0.8):
                    return "yes", f"a {u.kind} in '{u.section}' matches the misstatement's numbers and terms", u.text[:300]
            return "no", "no unit states the misstatement the criterion describes", ""
        best: tuple[float, MaterialUnit | None] = (-1.0, None)
        for u in units:
            nums, words = _unit_terms(u)
            if not fact_nums <= nums:
                continue
            share = _share(fact_terms, words)
            if share > best[0]:
                best = (share, u)
        share, unit = best
        if unit is not None and share >= TERM_SHARE:
            cited = " with a citation" if unit.cited else ""
            return "yes", (f"a {unit.kind} in '{unit.section}'{cited} carries the fact's numbers "
                           f"{sorted(fact_nums) or '(none)'} and {share:.0%} of its key terms"), unit.text[:300]
        if unit is None:
            return "no", f"no unit carries all of the fact's numbers {sorted(fact_nums)}", ""
        return "no", f"the closest unit carries only {share:.0%} of the fact's key terms", ""
