"""How long do the browser probes take on one demo report?

Launches the system Chromium once, then, for each demo example report (the filled `good`
report and the unfilled `skeleton`), runs every M atom of its task's rubric in one browser
context, screenshots included, several times; then one full `evaluate_report` (probes plus the
offline baseline judge plus scoring) per report. Prints seconds; asserts nothing. The issue's
target: all probes of one demo report in under 10 s.

    .venv/bin/python benchmarks/probe_speed.py [--repeat N]
"""

import argparse
import asyncio
import platform
import statistics
import tempfile
import time
from pathlib import Path

from omnidr.benchmark import open_snapshot
from omnidr.evaluation import BaselineJudge, ChromiumBrowser, ProbeContext, TaskInputs, evaluate_report, probe_report

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "snapshots" / "demo"


async def main(repeat: int) -> None:
    snap = open_snapshot(DEMO)
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
    t0 = time.monotonic()
    browser = ChromiumBrowser()
    await browser.start()
    print(f"Chromium {browser.version}: launched in {time.monotonic() - t0:.2f} s")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for label, folder in snap.info.reports.items():
                report = DEMO / folder
                task_id = report.parent.name
                bundle = snap.tasks[task_id]
                calls = [a.probe for a in bundle.rubric.atoms if a.probe is not None]
                times, shots = [], 0
                for i in range(repeat):
                    ctx = ProbeContext(duration_s=bundle.task.video.duration_s, screenshots_dir=Path(tmp) / f"{label}-{i}")
                    start = time.monotonic()
                    out = await probe_report(browser, report, calls, ctx)
                    times.append(time.monotonic() - start)
                    shots = len(out.session.screenshots)
                passed = sum(1 for c in calls if out.result(c).status == "pass")
                print(f"{label:9} ({task_id}): {len(calls)} M atoms ({passed} pass), {shots} screenshots: "
                      f"median {statistics.median(times):.2f} s, max {max(times):.2f} s over {repeat} runs")
                inputs = TaskInputs(rubric=bundle.rubric, task=bundle.task, facts=bundle.facts,
                                    hyperparameters=snap.hyperparameters, contract=snap.contract)
                start = time.monotonic()
                ev = await evaluate_report(browser, BaselineJudge(), report, inputs, Path(tmp) / f"{label}-ev")
                print(f"{'':9}  full evaluation ({len(ev.atoms)} atoms, offline baseline judge, scoring): "
                      f"{time.monotonic() - start:.2f} s, score {ev.score.total:.1f}")
    finally:
        await browser.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="probe runs per report")
    asyncio.run(main(parser.parse_args().repeat))
