"""`python -m sandbox.reference_agent --capability full`: run the reference agent in the sandbox.

Inputs come from the sandbox's environment (OMNIDR_INSTRUCTION, OMNIDR_VIDEO, OMNIDR_CONTRACT,
OMNIDR_REPORT_DIR, OMNIDR_LOGS_DIR, OMNIDR_MODEL, OPENAI_BASE_URL, OPENAI_API_KEY, HTTP(S)_PROXY),
OMNIDR_SEARCH_DOOR and OMNIDR_DENYLIST (the search door, see sandbox/skills/_web.py) or else
OMNIDR_SEARCH_INDEX (the offline search index), and OMNIDR_CAPTIONS (caption files beside the video). Exit 0 when the loop ended normally (with or
without a report: the sandbox judges that), 3 when the model API failed or refused, 1 on a crash.

With OMNIDR_TASK_KIND=short_answer it answers an OpenDS-World question instead (see `_short_answer`): the question
is the instruction, the protocol comes from /input/protocol.json (OMNIDR_PROTOCOL), and it writes
$OMNIDR_OUTPUT_DIR/answer.json (default /output) whatever ends research, and exits 0.
"""

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from sandbox.models import SHORT_ANSWER_KIND, TASK_KIND_ENV, AnswerFile
from sandbox.skills import WINDOW_S, SearchIndex, output_dir, write_answer_file
from sandbox.skills.__main__ import budgets_from

from ._capability import LEVELS, Capability, capability
from ._loop import IMAGE_TOOLS, NativeLog, run_agent
from ._short_answer import (
    config_record,
    load_protocol,
    protocol_path,
    research,
    short_answer_capability,
    user_message,
)
from ._tools import ToolBox, ToolSettings

LOG_FILE = "reference.jsonl"
CONFIG_FILE = "config.json"


def _user_message(instruction: str, contract_dir: Path, video: str) -> str:
    parts = [instruction.strip(), f"\nThe source video is at {video}."]
    contract = contract_dir / "contract.json"
    if contract.is_file():
        parts.append("\nReport contract: " + json.loads(contract.read_text("utf-8")).get("description", ""))
    schema = contract_dir / "data.schema.json"
    if schema.is_file():
        parts.append("\nJSON schema of window.DATA:\n" + json.dumps(json.loads(schema.read_text("utf-8")),
                                                                    separators=(",", ":"), ensure_ascii=False))
    return "\n".join(parts)


def _budgets(text: str) -> dict[str, int]:
    try:
        return budgets_from(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sandbox.reference_agent")
    p.add_argument("--capability", choices=LEVELS, default="full")
    p.add_argument("--model", default=os.environ.get("OMNIDR_MODEL", "gpt-4o"))
    p.add_argument("--max-steps", type=int, default=None,
                   help="model calls at most (default: no cap of its own; the gateway's budget decides)")
    p.add_argument("--max-repairs", type=int, default=3,
                   help="automatic check-and-repair turns (full workflow; hyperparameters.json max_repair_rounds)")
    p.add_argument("--window-s", type=float, default=WINDOW_S)
    p.add_argument("--budgets", type=_budgets, default={},
                   help="minimum counts the workflow aims for, e.g. web=25,video=5,document=3,anchor=3 (App. D.3)")
    p.add_argument("--frames-per-window", type=int, default=6)
    p.add_argument("--search", choices=("index", "none"), default="index")
    p.add_argument("--attach-frames", action=argparse.BooleanOptionalAction, default=True,
                   help="show each window's frames to the model as image parts (default; --no-attach-frames for "
                        "models that read no images)")
    args = p.parse_args(argv)

    env = os.environ
    if env.get(TASK_KIND_ENV) == SHORT_ANSWER_KIND:
        return short_answer_main(args)
    logs_dir = Path(env.get("OMNIDR_LOGS_DIR", "/output/harness-logs"))
    report_dir = Path(env.get("OMNIDR_REPORT_DIR", "/output/report"))
    contract_dir = Path(env.get("OMNIDR_CONTRACT", "/input/contract"))
    video = env.get("OMNIDR_VIDEO", "/input/video.mp4")
    instruction = Path(env.get("OMNIDR_INSTRUCTION", "/input/instruction.txt")).read_text("utf-8")
    cap = capability(args.capability)
    search = SearchIndex.from_env(env.get("OMNIDR_SEARCH_INDEX")) if args.search == "index" else None
    door = (env.get("OMNIDR_SEARCH_DOOR") or None) if args.search == "index" else None

    logs_dir.mkdir(parents=True, exist_ok=True)
    config = {"agent": "reference", "capability": cap.as_record(), "model": args.model, "max_steps": args.max_steps,
              "max_repairs": args.max_repairs, "window_s": args.window_s, "budgets": args.budgets, "frames_per_window": args.frames_per_window,
              # the search door (OMNIDR_SEARCH_DOOR, reached through the egress proxy) wins over the offline index
              "search_backend": door.partition("@")[0] if door else args.search if search else "none",
              "search_entries": len(search.entries) if search else 0, "attach_frames": args.attach_frames,
              "log": LOG_FILE,
              "started_at": datetime.now(UTC).isoformat(timespec="seconds")}
    (logs_dir / CONFIG_FILE).write_text(json.dumps(config, indent=2), "utf-8")
    log = NativeLog(logs_dir / LOG_FILE)
    log.write({"type": "run_start", "at": datetime.now(UTC).isoformat(timespec="milliseconds"), "config": config})

    from openai import OpenAI  # imported late: --help works without it

    client = OpenAI(max_retries=2, timeout=600.0)  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment
    tools = _toolbox(cap, args, video, report_dir, contract_dir, search, door)
    t0 = time.monotonic()
    try:
        summary = run_agent(client, args.model, cap, tools, _user_message(instruction, contract_dir, video), log,
                            max_steps=None if args.max_steps is None else max(1, args.max_steps),
                            attach_frames=args.attach_frames and any(t in cap.tools for t in IMAGE_TOOLS))
    finally:
        tools.close()
    summary["wall_time_s"] = round(time.monotonic() - t0, 3)
    summary["report"] = (report_dir / "index.html").is_file()
    log.write({"type": "run_end", "at": datetime.now(UTC).isoformat(timespec="milliseconds"), **summary})
    (logs_dir / "evidence.json").write_text(json.dumps(tools.evidence, ensure_ascii=False, indent=2), "utf-8")
    print(json.dumps({k: summary[k] for k in ("steps", "model_calls", "tool_calls", "tool_errors", "end", "report")}))
    return 3 if summary["end"] == "model_error" else 0


def _toolbox(cap: Capability, args: argparse.Namespace, video: str, report_dir: Path, contract_dir: Path,
             search: SearchIndex | None, door: str | None) -> ToolBox:
    env = os.environ
    return ToolBox(cap, video, report_dir, contract_dir, ToolSettings(
        search=search, window_s=args.window_s, frames_per_window=args.frames_per_window, budgets=args.budgets,
        max_repairs=args.max_repairs,
        # speech-to-text goes to the gateway, as the model calls do (the gateway holds the key)
        speech_url=env.get("OPENAI_BASE_URL"), speech_key=env.get("OPENAI_API_KEY"),
        captions=tuple(c for c in env.get("OMNIDR_CAPTIONS", "").split(",") if c), door=door,
        denylist=tuple(d for d in env.get("OMNIDR_DENYLIST", "").split(",") if d)))


def short_answer_main(args: argparse.Namespace) -> int:
    """A short-answer task: research, then answer.json whatever ended it; exit 0 once the file is written."""
    env = os.environ
    logs_dir = Path(env.get("OMNIDR_LOGS_DIR", "/output/harness-logs"))
    logs_dir.mkdir(parents=True, exist_ok=True)
    log = NativeLog(logs_dir / LOG_FILE)
    t0 = time.monotonic()
    summary: dict = {}
    try:
        source = protocol_path()
        protocol = load_protocol(source)
        video = env.get("OMNIDR_VIDEO", "/input/video.mp4")
        question = Path(env.get("OMNIDR_INSTRUCTION", "/input/instruction.txt")).read_text("utf-8")
        cap = short_answer_capability(args.capability)
        search = SearchIndex.from_env(env.get("OMNIDR_SEARCH_INDEX")) if args.search == "index" else None
        door = (env.get("OMNIDR_SEARCH_DOOR") or None) if args.search == "index" else None
        config = {"agent": "reference", "capability": cap.as_record(), "model": args.model,
                  "max_steps": args.max_steps, **config_record(protocol, source),
                  "search_backend": door.partition("@")[0] if door else args.search if search else "none",
                  "log": LOG_FILE, "started_at": datetime.now(UTC).isoformat(timespec="seconds")}
        (logs_dir / CONFIG_FILE).write_text(json.dumps(config, indent=2), "utf-8")
        log.write({"type": "run_start", "at": datetime.now(UTC).isoformat(timespec="milliseconds"), "config": config})
        report_dir = Path(env.get("OMNIDR_REPORT_DIR", "/output/report"))
        tools = _toolbox(cap, args, video, report_dir, Path(env.get("OMNIDR_CONTRACT", "/input/contract")), search,
                         door)

        from openai import OpenAI  # imported late: --help works without it

        client = OpenAI(max_retries=2, timeout=600.0)  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment
        try:
            run = research(client, args.model, tools, user_message(question, video), log, protocol,
                           max_steps=None if args.max_steps is None else max(1, args.max_steps))
        finally:
            tools.close()  # the persistent browser's daemon, when one was started
        answer, summary = run.answer, run.summary()
    except Exception as exc:  # a fault of the run itself: recorded as the execution error, the file still written
        error = f"{type(exc).__name__}: {exc}"
        answer = AnswerFile(answer="", termination="execution_error", source="none", execution_error=error)
        summary = {"end": "execution_error", "termination": "execution_error", "error": error}
    path = write_answer_file(answer, output_dir())
    summary["wall_time_s"] = round(time.monotonic() - t0, 3)
    log.write({"type": "run_end", "at": datetime.now(UTC).isoformat(timespec="milliseconds"), **summary,
               "answer_file": str(path)})
    print(json.dumps({"termination": answer.termination, "source": answer.source, "answer": answer.answer,
                      **{k: summary[k] for k in ("steps", "model_calls", "tool_calls") if k in summary}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
