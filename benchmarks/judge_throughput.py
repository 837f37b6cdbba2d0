"""Judge throughput and tokens per report, against the tests' fake OpenAI-compatible server.

Starts the fake judge of the tests (tests/evaluation/fake_judge.py) on loopback with a fixed
per-request latency standing in for a model's answer time, takes the demo's good report and its
rendered material (probed once in Chromium), and judges every J atom of the task (three votes for
gate atoms) with the real `openai` client at several concurrency levels. Prints calls, wall time,
calls per second, and the prompt and completion tokens of one report (the fake counts a token per
four characters of the request text; images are not counted). Then re-judges with a warm cache.
Asserts nothing.

    .venv/bin/python benchmarks/judge_throughput.py [--latency 0.5] [--concurrency 1 4 8 16]
"""

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "snapshots" / "demo"
TASK = "pendant-lamp-safety"


async def material_of_good_report(tmp: Path):
    from omnidr.benchmark import open_snapshot
    from omnidr.evaluation import ChromiumBrowser, ProbeContext, probe_report, report_sha256

    snap = open_snapshot(DEMO)
    report = DEMO / snap.info.reports["good"]
    async with ChromiumBrowser() as browser:
        out = await probe_report(browser, report, [], ProbeContext(duration_s=36.0, screenshots_dir=tmp / "screenshots"))
    return snap, report, out.material, report_sha256(report)


async def judge_all(settings, snap, report, material, report_hash, tmp, cache=None):
    from omnidr.evaluation import JudgeRequest, OpenAIJudge, judge_atom
    from omnidr.evaluation._evaluate import gate_directions

    bundle = snap.tasks[TASK]
    facts = {f.id: f for f in bundle.facts.facts}
    gates = gate_directions()
    judge = OpenAIJudge(settings, cache)
    requests = [JudgeRequest(atom=a, task=bundle.task, fact=facts.get(a.fact_id or ""), material=material,
                             report_hash=report_hash, report_dir=report, evaluation_dir=tmp)
                for a in bundle.rubric.atoms if a.probe is None]
    start = time.monotonic()
    try:
        evs = await asyncio.gather(*(judge_atom(judge, r, 3 if r.atom.direction in gates else 1) for r in requests))
    finally:
        await judge.aclose()
    return evs, time.monotonic() - start


def main(latency: float, levels: list[int]) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "evaluation"))
    from fake_judge import FakeJudge

    from omnidr.evaluation import JudgeCache, JudgeSettings

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        snap, report, material, report_hash = asyncio.run(material_of_good_report(tmp))
        server = FakeJudge(latency_s=latency).start()
        try:
            print(f"fake judge latency {latency:.2f} s per request; demo task {TASK}")
            for level in levels:
                server.reset()
                settings = JudgeSettings(base_url=server.url, model="fake-judge", concurrency=level, timeout_s=60)
                evs, wall = asyncio.run(judge_all(settings, snap, report, material, report_hash, tmp))
                calls = server.calls
                print(f"concurrency {level:3}: {calls} calls in {wall:6.2f} s = {calls / wall:6.1f} calls/s "
                      f"(peak in flight {server.peak_in_flight})")
            tokens_in = sum(e.input_tokens for e in evs)
            tokens_out = sum(e.output_tokens for e in evs)
            print(f"tokens per report: {tokens_in} prompt + {tokens_out} completion over {len(evs)} J atoms "
                  f"({calls} calls; mean {tokens_in / calls:.0f} prompt tokens per call)")
            cache = JudgeCache(tmp / "cache")
            settings = JudgeSettings(base_url=server.url, model="fake-judge", concurrency=max(levels), timeout_s=60)
            asyncio.run(judge_all(settings, snap, report, material, report_hash, tmp, cache))
            server.reset()
            _, wall = asyncio.run(judge_all(settings, snap, report, material, report_hash, tmp, cache))
            print(f"warm cache: {server.calls} calls, {wall:.3f} s for the whole report")
        finally:
            server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.5, help="fake answer time per request, seconds")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8, 16])
    args = parser.parse_args()
    main(args.latency, args.concurrency)
