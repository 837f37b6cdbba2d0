"""Wall time of `omnidr eval` on the demo (3 tasks, scripted model, offline baseline judge).

Measures, each in a fresh runs root: the local executor with 1 and 3 tasks at once, the Ray
executor (a local Ray instance) with 3 at once, a resume (rerun of a finished root), and the MLflow
logging cost per attempt (the finished root logged again into a new SQLite store).
Needs the images built (`omnidr images build`). Usage: .venv/bin/python benchmarks/eval_end_to_end.py
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def eval_once(runs: Path, *extra: str) -> float:
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "omnidr.cli", "eval", "--snapshot", str(ROOT / "snapshots" / "demo"), "--runs-root",
                        str(runs), *extra], capture_output=True, text=True, env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
    elapsed = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"omnidr eval failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return elapsed


def tracking_cost(root: Path) -> tuple[float, int]:
    """Seconds to log every attempt of `root` (run, metrics, artifacts) into a new store, and the attempt count."""
    from omnidr.attempts import AttemptRecord
    from omnidr.tracking import Tracker

    with tempfile.TemporaryDirectory() as tmp:
        tracker = Tracker(f"sqlite:///{tmp}/mlflow.db", "bench", Path(tmp) / "artifacts")
        records = [(p.parent, AttemptRecord.model_validate_json(p.read_text()))
                   for p in sorted(root.glob("*/attempts/*/*/attempt.json"))]
        t0 = time.monotonic()
        parent = tracker.system_run("bench", {"model": "scripted-demo"})
        for folder, record in records:
            tracker.attempt_run(parent, "bench", record)
            tracker.attempt_artifacts("bench", record.task_id, record.attempt, folder)
        return time.monotonic() - t0, len(records)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        eval_once(tmp / "warm")  # builds or checks the images, warms the page cache
        local1 = eval_once(tmp / "local1")
        resume = eval_once(tmp / "local1")
        local3 = eval_once(tmp / "local3", "--parallel", "3")
        ray3 = eval_once(tmp / "ray3", "--executor", "ray", "--parallel", "3")
        [root] = (tmp / "local1").glob("demo-*")
        avg = json.loads((root / "leaderboard.json").read_text())["leaderboard"]["rows"][0]["avg"]
        cost, attempts = tracking_cost(root)
    print("omnidr eval on the demo (3 tasks, scripted model, offline baseline judge), wall time per command:")
    print(f"  local executor, 1 task at once   : {local1:6.1f} s   (Avg {avg:.1f})")
    print(f"  rerun of the finished root       : {resume:6.1f} s   ({resume / local1:.2f}x of a fresh run)")
    print(f"  local executor, 3 tasks at once  : {local3:6.1f} s   ({local1 / local3:.2f}x faster than 1 at once)")
    print(f"  ray executor (local), 3 at once  : {ray3:6.1f} s   ({ray3 / local3:.2f}x the local executor's time)")
    print(f"  MLflow logging per attempt       : {cost / attempts * 1000:6.0f} ms  ({attempts} attempts, artifacts included)")


if __name__ == "__main__":
    main()
