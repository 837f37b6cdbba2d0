"""How much of each report's judge prompts a provider's prompt cache can reuse (prints figures; asserts nothing).

For every model-judged atom of a scored report, the chat messages the judge would send are built exactly as
`OpenAIJudge` builds them (from the report's saved `material.json`). A provider with prompt caching bills the
longest prefix a call shares with an earlier call at the cached rate; this script reports, per report, the
share of prompt tokens that lies in such a prefix (estimated: 4 characters of text a token, an image 765).

Usage: .venv/bin/python benchmarks/judge_prefix.py RUN_ROOT_OR_SYSTEM_FOLDER [--snapshot snapshots/demo]
       (a folder `omnidr eval` scored; the demo's run root works)
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from omnidr.benchmark import open_snapshot  # noqa: E402
from omnidr.evaluation import JudgeRequest, ReportMaterial  # noqa: E402
from omnidr.evaluation._judge import build_messages  # noqa: E402

IMAGE_TOKENS = 765  # an image, as OpenAI bills a 1024x1024 one at high detail; text: 4 characters a token


def parts(messages: list[dict]) -> list[tuple[str, str]]:
    """The prompt as the provider reads it: (kind, value) with kind `t` (text) or `i` (image data URL)."""
    out = []
    for m in messages:
        content = m["content"]
        out.append(("t", f"<{m['role']}>"))
        for p in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            out.append(("t", p["text"]) if p["type"] == "text" else ("i", p["image_url"]["url"]))
    return out


def tokens(part: tuple[str, str]) -> float:
    return IMAGE_TOKENS if part[0] == "i" else len(part[1]) / 4


def common_prefix(a: list[tuple[str, str]], b: list[tuple[str, str]]) -> float:
    """Tokens of the longest shared prefix of two prompts."""
    shared = 0.0
    for x, y in zip(a, b, strict=False):
        if x == y:
            shared += tokens(x)
            continue
        if x[0] == y[0] == "t":
            n = 0
            while n < min(len(x[1]), len(y[1])) and x[1][n] == y[1][n]:
                n += 1
            shared += n / 4
        break
    return shared


def report_share(prompts: list[list[tuple[str, str]]]) -> tuple[float, float]:
    """Share of prompt tokens in a prefix shared with an earlier call of the same report, and the total."""
    total = sum(tokens(p) for prompt in prompts for p in prompt)
    shared = sum(max(common_prefix(p, q) for q in prompts[:i]) for i, p in enumerate(prompts) if i)
    return (shared / total if total else 0.0), total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--snapshot", type=Path, default=ROOT / "snapshots" / "demo")
    args = ap.parse_args()
    snap = open_snapshot(args.snapshot)
    shares, weights = [], []
    for material_file in sorted(args.folder.rglob("evaluation/*/material.json")):
        task_id = material_file.parent.name
        bundle = snap.tasks.get(task_id)
        if bundle is None:
            continue
        material = ReportMaterial.model_validate_json(material_file.read_text("utf-8"))
        facts = {f.id: f for f in bundle.facts.facts} if bundle.facts else {}
        evaluation = json.loads((material_file.parent / "evaluation.json").read_text("utf-8"))
        report_dir = material_file.parents[2] / "attempts" / task_id / str(evaluation.get("attempt") or 1) / "output" / "report"
        prompts = []
        for atom in (a for a in bundle.rubric.atoms if a.probe is None):
            request = JudgeRequest(atom=atom, task=bundle.task, fact=facts.get(atom.fact_id or ""), material=material,
                                   report_hash="0" * 64, report_dir=report_dir if report_dir.is_dir() else None,
                                   evaluation_dir=material_file.parent)
            prompts.append(parts(build_messages(request)[0]))
        share, total = report_share(prompts)
        shares.append(share)
        weights.append(total)
        print(f"{material_file.parent.relative_to(args.folder)}: {len(prompts)} judge calls, ~{total:,.0f} prompt tokens, "
              f"{share:.1%} in a prefix shared with an earlier call")
    if weights:
        overall = sum(s * w for s, w in zip(shares, weights, strict=True)) / sum(weights)
        print(f"overall: {overall:.1%} of judge prompt tokens in a shared prefix ({len(shares)} reports)")
    else:
        print("no scored report found under", args.folder)


if __name__ == "__main__":
    main()
