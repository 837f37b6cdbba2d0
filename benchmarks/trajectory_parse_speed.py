"""How fast the trajectory parsers and statistics run: lines per second over the real native logs
(../shared/fixtures/native-logs) and a large synthetic OpenClaw session. Prints figures only."""

import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from omnidr.trajectory import parse_native_log, process_stats  # noqa: E402


def measure(path: Path, repeats: int = 5) -> tuple[int, float]:
    lines = sum(1 for _ in path.open("rb"))
    start = time.perf_counter()
    for _ in range(repeats):
        process_stats(parse_native_log(path))
    return lines, (time.perf_counter() - start) / repeats


def synthetic_openclaw(path: Path, turns: int) -> None:
    rows = [{"type": "session", "version": 3, "id": "bench", "timestamp": "2026-05-01T10:00:00Z"}]
    parent = None
    for i in range(turns):
        call = {"type": "toolCall", "id": f"c{i}", "name": "web_search" if i % 3 else "write",
                "arguments": {"query": f"q{i}", "path": "/output/report/index.html", "content": "x" * 500}}
        rows.append({"type": "message", "id": f"a{i}", "parentId": parent, "timestamp": "2026-05-01T10:00:01Z",
                     "message": {"role": "assistant", "content": [{"type": "text", "text": "t" * 200}, call],
                                 "usage": {"input": 1000 + i, "output": 50}, "stopReason": "toolUse"}})
        rows.append({"type": "message", "id": f"r{i}", "parentId": f"a{i}", "timestamp": "2026-05-01T10:00:02Z",
                     "message": {"role": "toolResult", "toolCallId": f"c{i}", "toolName": "web_search",
                                 "content": [{"type": "text", "text": "r" * 2000}], "isError": i % 17 == 0}})
        parent = f"r{i}"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")


def main() -> None:
    logs = ROOT.parent / "shared" / "fixtures" / "native-logs"
    paths = sorted(logs.glob("*/*.jsonl")) if logs.is_dir() else []
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "openclaw-10k-turns.jsonl"
        synthetic_openclaw(big, 10_000)
        for path in [*paths, big]:
            lines, seconds = measure(path, repeats=1 if path == big else 5)
            print(f"{path.name:62s} {lines:7d} lines {seconds * 1000:9.1f} ms {lines / seconds:12,.0f} lines/s")


if __name__ == "__main__":
    main()
