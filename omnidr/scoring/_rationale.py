"""Why a coverage criterion failed, read from the judge's rationale (paper App. F.3: "inspection of failed coverage
criteria shows that omissions of audited research targets dominate explicit contradictions").

The paper inspected failures by hand and gives no rule; this is the project's reading of the judge's own words.
The judge prompt asks for a rationale "that points to what the report says or lacks" (omnidr.evaluation), so a
failure whose rationale says the report states something else, wrongly or in conflict with the fact, is an
explicit contradiction; one that says the report lacks the fact is an omission; one that says neither (a plain
"no", a decision without a rationale, the offline baseline's lexical reasons) is unclassified, and is counted as
such rather than guessed. Words of contradiction win over words of omission ("does not say X; it says Y instead").
English and Chinese, the benchmark's two languages.
"""

import re
from typing import Literal

FailureKind = Literal["omission", "contradiction", "unclassified"]
FAILURE_KINDS: tuple[FailureKind, ...] = ("omission", "contradiction", "unclassified")

_CONTRADICTION = re.compile(
    r"\b(contradict\w*|conflict\w*|inconsistent|incorrect\w*|wrong\w*|misstat\w*|erroneous\w*|mistaken\w*|"
    r"instead|rather than|opposite|false\w*)\b|矛盾|错误|不一致|相反|有误|不符",
    re.IGNORECASE)
_OMISSION = re.compile(
    r"\b(omit\w*|omission|missing|lacks?|lacking|absent|nowhere|silent)\b|\bno (mention|statement|reference)\b|"
    r"\bdoes not (mention|state|say|include|name|give|report|discuss|cover|address)\b|"
    r"\b(never|not) (mentioned|stated|included|named|given|reported|discussed|covered|addressed)\b|"
    r"未提及|没有提到|未提到|缺少|缺失|遗漏|未说明|没有说明|未涉及",
    re.IGNORECASE)


def failure_kind(rationale: str | None) -> FailureKind:
    """omission, contradiction or unclassified, from the words of a failed criterion's rationale."""
    text = rationale or ""
    if _CONTRADICTION.search(text):
        return "contradiction"
    if _OMISSION.search(text):
        return "omission"
    return "unclassified"
