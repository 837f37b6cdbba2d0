"""`python -m sandbox.direct_agent`: answer one multiple-choice question with one model request (paper 004, Sec.
4.1: models are evaluated directly, without an agent or tools).

Reads /input/question.json and the prepared inputs in /input/media (see `sandbox.models._mcq`), sends the one
Chat Completions request `build_messages` lays out to the gateway (`_client.py`; OPENAI_BASE_URL, OPENAI_API_KEY:
the attempt's token; the gateway holds the real key, logs the exchange and applies the budget), and writes the
reply as $OMNIDR_OUTPUT_DIR/answer.json (default /output): the host parses the option from it. The request is sent at
temperature 0 (the paper does not give its sampling settings; 0 makes a rerun comparable), or 1.0 under the authors'
runner protocol (inputs prepared with protocol `official`, laid out by `build_official_messages`), and is not
retried here:
the gateway retries upstream failures itself. A line per run goes to $OMNIDR_LOGS_DIR/direct.jsonl.

Exit 0 with an answer; 3 when the model API failed or refused (the host tells an outage from the model's fault by
the gateway's log); 2 when the inputs are missing or unreadable.
"""

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from sandbox.models import (
    MEDIA_DIR,
    MEDIA_MANIFEST,
    OFFICIAL_TEMPERATURE,
    QUESTION_FILE,
    AnswerFile,
    McqQuestion,
    MediaInputs,
)
from sandbox.skills import write_answer_file

from ._client import chat_completion
from ._request import build_messages

LOG_FILE = "direct.jsonl"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sandbox.direct_agent")
    p.add_argument("--model", default=os.environ.get("OMNIDR_MODEL", "gpt-4o"))
    p.add_argument("--setting", default="", help="the input setting the host prepared (recorded in the log)")
    p.add_argument("--input", type=Path, default=Path("/input"))
    p.add_argument("--timeout-s", type=float, default=600.0)
    args = p.parse_args(argv)
    env = os.environ
    output = Path(env.get("OMNIDR_OUTPUT_DIR", "/output"))
    logs = Path(env.get("OMNIDR_LOGS_DIR", "/output/harness-logs"))
    logs.mkdir(parents=True, exist_ok=True)
    media = args.input / MEDIA_DIR
    try:
        question = McqQuestion.model_validate_json((args.input / QUESTION_FILE).read_text("utf-8"))
        inputs = MediaInputs.model_validate_json((media / MEDIA_MANIFEST).read_text("utf-8"))
        messages = build_messages(question, inputs, media)
    except (OSError, ValidationError, ValueError) as exc:
        print(f"direct runner: the inputs are unreadable: {str(exc).splitlines()[0][:300]}", file=sys.stderr)
        return 2
    temperature = OFFICIAL_TEMPERATURE if inputs.protocol == "official" else 0
    record = {"type": "request", "at": _now(), "model": args.model, "setting": args.setting, "question": question.id,
              "protocol": inputs.protocol, "temperature": temperature,
              "frames": len(inputs.frames), "window": inputs.window, "subtitles": inputs.subtitles is not None,
              "audio": inputs.audio is not None}
    from sandbox.reference_agent import classify_failure

    base_url = env.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    t0 = time.monotonic()
    try:
        reply = chat_completion(base_url, env.get("OPENAI_API_KEY", ""),
                                {"model": args.model, "messages": messages, "temperature": temperature}, args.timeout_s)
    except Exception as exc:  # noqa: BLE001 - every failure of the one request is recorded as the attempt's end
        termination, text = classify_failure(exc)
        write_answer_file(AnswerFile(answer="", termination=termination, source="none", execution_error=text[:500]),
                          output)
        _log(logs, {**record, "type": "failed", "elapsed_s": round(time.monotonic() - t0, 3), "error": text[:500],
                    "termination": termination})
        print(f"direct runner: the model request failed: {text[:300]}", file=sys.stderr)
        return 3
    choices = reply.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    content = (choice.get("message") or {}).get("content")
    text = content.strip() if isinstance(content, str) else ""
    cut = choice.get("finish_reason") == "length"
    termination = "complete_answer" if text and not cut else "incomplete_output"
    write_answer_file(AnswerFile(answer=text, termination=termination, source="research" if text else "none"), output)
    _log(logs, {**record, "type": "answered", "elapsed_s": round(time.monotonic() - t0, 3), "answer": text,
                "finish_reason": choice.get("finish_reason"), "usage": reply.get("usage")})
    print(json.dumps({"question": question.id, "answer": text[:200], "termination": termination}))
    return 0


def _log(logs: Path, line: dict) -> None:
    with (logs / LOG_FILE).open("a", encoding="utf-8") as f:
        f.write(json.dumps(line, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    sys.exit(main())
