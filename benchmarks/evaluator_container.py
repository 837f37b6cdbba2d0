"""What does scoring in the evaluator image cost against scoring on the host, per report?

For each run size N (default 3, the demo's, and 12): a copy of the demo snapshot with N tasks (the first demo
task repeated under new ids beyond the demo's three) and a run folder where each task delivers the demo's good
report (tests/evaluation's helpers write it as `omnidr run` would). Each run is scored with the offline baseline
judge, REPEAT times each way: on the host (`--evaluator host`: this process's Chromium) and in the evaluator image
(`--evaluator docker`, the default: a probe container, then a judge container). The image is built (or found)
before the clock starts. Prints the seconds per report of each and their ratio; asserts nothing. The issue's
target: the image at most 1.5x the host's time per report. The image's cost is two container starts per scoring
plus a little per report, so the ratio falls as runs grow (a benchmark run has 50 tasks).

    .venv/bin/python benchmarks/evaluator_container.py [--repeat N] [--reports N ...]
"""

import argparse
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "evaluation"))


def snapshot_of(size: int, folder: Path) -> tuple[Path, list[str]]:
    """A copy of the demo snapshot with `size` tasks: the demo's, then the first one again under new ids."""
    from eval_helpers import DEMO, TASK

    shutil.copytree(DEMO, folder)
    meta = json.loads((folder / "snapshot.json").read_text())
    tasks = list(meta["tasks"])[:size]
    for k in range(len(tasks), size):
        new = f"{TASK}-{k + 1}"
        shutil.copytree(folder / "tasks" / TASK, folder / "tasks" / new)
        for name, field in (("task.json", "id"), ("facts.json", "task_id"), ("rubric.json", "task_id")):
            data = json.loads((folder / "tasks" / new / name).read_text())
            data[field] = new
            (folder / "tasks" / new / name).write_text(json.dumps(data))
        tasks.append(new)
    meta["tasks"] = tasks
    (folder / "snapshot.json").write_text(json.dumps(meta))
    return folder, tasks


def main(repeat: int, sizes: list[int]) -> None:
    from eval_helpers import GOOD, write_attempt, write_run

    from omnidr._offline import disable_telemetry
    from omnidr.evaluation import ScoreRequest, score_run
    from omnidr.evaluation._container import score_in_container
    from omnidr.images import build_images

    disable_telemetry()
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}; "
          "offline baseline judge")
    [image] = build_images(["evaluator"])[-1:]
    print(f"evaluator image {image.tag} ({image.status})")
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="omnidr-bench-") as tmp:
            snapshot, tasks = snapshot_of(size, Path(tmp) / "snapshot")
            run = write_run(Path(tmp) / "run", tasks, snapshot=snapshot)
            for task in tasks:
                write_attempt(run, task, 1, "success", report_from=GOOD)
            times: dict[str, list[float]] = {"host": [], "docker": []}
            totals: dict[str, float] = {}
            for i in range(repeat):
                for where in ("host", "docker"):
                    out = Path(tmp) / f"{where}-{i}"
                    start = time.monotonic()
                    if where == "host":
                        summary = score_run(ScoreRequest(run_dir=run, out_dir=out, snapshot=snapshot))
                    else:
                        summary = score_in_container(ScoreRequest(run_dir=run, out_dir=out, snapshot=snapshot))
                    times[where].append((time.monotonic() - start) / len(tasks))
                    totals[where] = summary.mean_total
            print(f"{size} reports per scoring:")
            for where, values in times.items():
                print(f"  {where:6}: median {statistics.median(values):.2f} s per report (min {min(values):.2f}, max "
                      f"{max(values):.2f}) over {repeat} scorings; mean score {totals[where]:.2f}")
            ratio = statistics.median(times["docker"]) / statistics.median(times["host"])
            print(f"  evaluator image / host, per report: {ratio:.2f}x (target: at most 1.5x)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="Scorings each way and size (default 3).")
    parser.add_argument("--reports", type=int, nargs="+", default=[3, 12], help="Run sizes (default 3 12).")
    args = parser.parse_args()
    main(args.repeat, args.reports)
