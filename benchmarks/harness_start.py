"""Per-attempt start overhead of each harness, relative to the reference harness (prints figures;
asserts nothing).

For each harness, `--repeats` attempts of one demo task run in the real sandbox with the scripted
model (images already built). Per attempt:
- start overhead: from the attempt's start (attempt.json `started_at`: networks, gateway, proxy and
  agent container set up) to the first model request the gateway saw; this is everything before the
  agent's first step, CLI boot included;
- attempt time: `started_at` to `ended_at` (setup, the episode, teardown, copying the output).
Medians are printed with the ratio to the reference harness.

Usage: .venv/bin/python benchmarks/harness_start.py [--repeats 3] [--task nd-filter-waterfall]
"""

import argparse
import json
import statistics
import sys
import tempfile
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from omnidr.harness import SystemConfig, SystemRunOptions, SystemSpec, run_system  # noqa: E402
from sandbox.models import Budget  # noqa: E402

HARNESSES = ["reference", "claude-code", "codex"]


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def measure(harness: str, task: str, repeats: int, work: Path) -> tuple[list[float], list[float]]:
    starts, totals = [], []
    for n in range(repeats):
        run_dir = work / f"{harness}-{n}"
        config = SystemConfig(agent=SystemSpec(harness=harness), budget=Budget(attempts_per_task=1, wall_time_s=300),
                              budget_label="benchmark")
        ran = run_system(ROOT / "snapshots" / "demo", run_dir, config,
                         SystemRunOptions(tasks=[task], on_note=lambda _m: None))
        [record] = ran.records[task]
        if record.reason.value != "success":
            raise SystemExit(f"{harness}: the attempt ended {record.reason.value}: {record.detail}")
        attempt = run_dir / "attempts" / task / "1"
        first = json.loads((attempt / "logs" / "gateway.jsonl").read_text("utf-8").splitlines()[0])
        starts.append((_when(first["started_at"]) - record.started_at).total_seconds())
        totals.append((record.ended_at - record.started_at).total_seconds())
    return starts, totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--task", default="nd-filter-waterfall")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="omnidr-harness-start-") as tmp:
        for harness in HARNESSES:
            results[harness] = measure(harness, args.task, args.repeats, Path(tmp))
    base_start = statistics.median(results["reference"][0])
    base_total = statistics.median(results["reference"][1])
    print(f"{args.repeats} attempt(s) per harness of {args.task}, scripted model, medians")
    print(f"{'harness':<12} {'start overhead s':>17} {'x reference':>12} {'attempt s':>10} {'x reference':>12}")
    for harness, (starts, totals) in results.items():
        s, t = statistics.median(starts), statistics.median(totals)
        print(f"{harness:<12} {s:>17.2f} {s / base_start:>12.2f} {t:>10.2f} {t / base_total:>12.2f}")


if __name__ == "__main__":
    main()
