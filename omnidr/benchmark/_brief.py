"""The evidence brief of behavioural calibration's R3 report (paper Sec. 3.4 S5, App. E.4).

"R3 receives compact evidence-map briefs": the task's fact library, cut down to what a researcher
needs to find the evidence, and appended to the agent's instruction. The paper does not print a brief;
this project's form is one line per video fact (its time span and claim), one per web fact (its
claim, how it relates to the video, and its sources with their verbatim quotes), and one per open
question: a fact marked `unavailable`, which no source answers (`- [<id> open question] <claim>`,
the tag `sandbox.models.OPEN_QUESTION_TAG`). The brief is the same for every harness, because it
travels in the instruction, the one input every harness reads.
"""

from sandbox.models import OPEN_QUESTION_TAG

from ._facts import FactLibrary, Origin, Verification
from ._task import Language

_HEAD = {
    Language.en: ("Evidence brief (the benchmark's evidence map for this task; open each source before you cite it):",
                  "Video moments:", "Outside evidence:", "relates to",
                  "Open questions (no available source answers them; say so in the report):"),
    Language.zh: ("证据简报（本任务的证据地图；引用前请先打开每个来源）：", "视频时刻：", "外部证据：", "关联",
                  "尚无来源能回答的问题（请在报告中如实说明）："),
}


def _clock(t: float) -> str:
    return f"{int(t) // 60}:{int(t) % 60:02d}"


def evidence_brief(facts: FactLibrary, language: Language) -> str:
    """The brief of one task, as text to append to its instruction."""
    head, video_head, web_head, relates, open_head = _HEAD[language]
    lines = [head, video_head]
    for f in facts.facts:
        if f.origin is Origin.video and f.video_ref is not None:
            lines.append(f"- [{f.id} {_clock(f.video_ref.start_s)}-{_clock(f.video_ref.end_s)}] {f.claim}")
    lines.append(web_head)
    for f in facts.facts:
        if f.origin is not Origin.web or f.verification is Verification.unavailable or not f.sources:
            continue
        links = "; ".join(f"{r.type.value} {r.target}" for r in f.relations)
        lines.append(f"- [{f.id}] {f.claim}" + (f" ({relates} {links})" if links else ""))
        for s in f.sources:
            quote = f" \u201c{s.quote}\u201d" if s.quote else ""
            lines.append(f"  {s.url} ({s.kind.value}, {s.tier.value}){quote}")
    open_questions = [f for f in facts.facts if f.verification is Verification.unavailable]
    if open_questions:
        lines.append(open_head)
        lines += [f"- [{f.id} {OPEN_QUESTION_TAG}] {f.claim}" for f in open_questions]
    return "\n".join(lines) + "\n"
