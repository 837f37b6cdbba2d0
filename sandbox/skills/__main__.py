"""`omnidr-skill`: the research skills on the command line (`python -m sandbox.skills`).

    omnidr-skill SKILL ACTION [ARGS]       run one action; prints its JSON result
    omnidr-skill list                      the skills installed at this capability level
    omnidr-skill install --claude-code DIR | --codex DIR [--agents-md FILE]
                                           write the installed skills' SKILL.md files (and AGENTS.md)

The sandbox's environment says where things are: OMNIDR_CAPABILITY (the level; `full` when unset),
OMNIDR_VIDEO, OMNIDR_REPORT_DIR, OMNIDR_CONTRACT, OMNIDR_SEARCH_DOOR (PROVIDER@URL: a search provider
reached through the egress proxy, which holds its key; OMNIDR_DENYLIST hosts are left out of its results)
or else OMNIDR_SEARCH_INDEX (the offline index),
OMNIDR_CAPTIONS (caption files fetched with the video, comma-separated),
OMNIDR_SKILL_BUDGETS (`web=25,video=5,document=3,anchor=3`), OMNIDR_MAX_REPAIRS, OMNIDR_SPEECH_URL and
OMNIDR_SPEECH_KEY (speech-to-text; default the gateway's OPENAI_BASE_URL and the attempt's OPENAI_API_KEY,
which every agent container gets), OMNIDR_SPEECH_MODEL (default whisper-1), OMNIDR_SKILL_STATE
(the shared research state and `calls.jsonl`, one line per call; default `$OMNIDR_LOGS_DIR/skills`),
OMNIDR_TASK_KIND (`report` when unset, or `short_answer`: which skills serve the task), OMNIDR_OUTPUT_DIR
(the agent's /output, where `answer submit` writes answer.json),
OMNIDR_ARTIFACTS_DIR (downloads, sampled frames and views of files; default /output/artifacts),
OMNIDR_MAX_DOWNLOAD_BYTES (one download's cap; default 256 MiB), OMNIDR_PROTOCOL (a short-answer snapshot's
protocol, default /input/protocol.json: the video reader's frame defaults, `video_frames` and
`video_frames_max`), OMNIDR_BROWSER_IDLE_S (the browser daemon stops after this long unused) and
OMNIDR_CHROMIUM (the browser; default /usr/bin/chromium).

Exit codes: 0 done, 1 the action failed (the reason on stderr, as for a tool error), 2 bad usage (an empty
`answer submit` too), 127 the action is not installed at this capability level (as a missing command).
"""

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sandbox.models import ARTIFACTS_DIR, MCQ_KIND, TASK_KIND_ENV

from ._answer import EmptyAnswer
from ._artifacts import MAX_DOWNLOAD_BYTES
from ._manifest import DEFAULT_KIND, LEVELS, SKILLS, TASK_KINDS, agents_md, find_action, skill_md, skills_at
from ._media import SAMPLE_FRAMES, SAMPLE_FRAMES_MAX
from ._speech import DEFAULT_MODEL
from ._web import SearchIndex
from ._workspace import NotInstalled, SkillError, Workspace

CALLS_LOG = "calls.jsonl"
NOT_INSTALLED = 127


def budgets_from(text: str) -> dict[str, int]:
    """`web=25,video=5,document=3,anchor=3` -> {"web": 25, ...}."""
    out = {}
    for part in filter(None, text.split(",")):
        key, sep, value = part.partition("=")
        if not sep or key not in ("web", "video", "document", "anchor") or not value.isdigit():
            raise ValueError(f"{part!r}: give KIND=COUNT with KIND web, video, document or anchor")
        out[key] = int(value)
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="omnidr-skill", description="The research skills of the OmniDR sandbox.")
    sub = p.add_subparsers(dest="skill", required=True, metavar="SKILL")
    sub.add_parser("list", help="the skills installed at this capability level")
    inst = sub.add_parser("install", help="write the installed skills' SKILL.md files")
    inst.add_argument("--claude-code", type=Path, help="Claude Code's skills folder ($CLAUDE_CONFIG_DIR/skills)")
    inst.add_argument("--codex", type=Path, help="Codex's skills folder ($CODEX_HOME/skills)")
    inst.add_argument("--agents-md", type=Path, help="also write the AGENTS.md section to this file")
    for s in SKILLS:
        sp = sub.add_parser(s.name, help=s.summary)
        acts = sp.add_subparsers(dest="action", required=True, metavar="ACTION")
        for a in s.actions:
            ap = acts.add_parser(a.name, help=a.description, description=a.description)
            for prm in a.params:
                kind = {"integer": int, "number": float}.get(prm.type, str)
                if prm.positional:
                    ap.add_argument(prm.name, type=kind, help=prm.description, nargs=None if prm.required else "?")
                elif prm.type == "boolean":
                    ap.add_argument(f"--{prm.name.replace('_', '-')}", dest=prm.name, action="store_true",
                                    help=prm.description)
                else:
                    ap.add_argument(f"--{prm.name.replace('_', '-')}", dest=prm.name, type=kind,
                                    required=prm.required, choices=prm.enum or None, help=prm.description)
    return p


def _frames_protocol(path: Path) -> tuple[int, int]:
    """The video reader's (default, most) frames from a short-answer snapshot's protocol (ShortAnswerProtocol's
    `video_frames` and `video_frames_max`), App. C.1.2's 10 and 100 when there is none."""
    if not path.is_file():
        return SAMPLE_FRAMES, SAMPLE_FRAMES_MAX
    data = json.loads(path.read_text("utf-8"))
    most = int(data.get("video_frames_max", SAMPLE_FRAMES_MAX))
    return min(int(data.get("video_frames", SAMPLE_FRAMES)), most), most


def _workspace(level: str, kind: str) -> Workspace:
    env = os.environ
    logs = env.get("OMNIDR_LOGS_DIR", "/output/harness-logs")
    budgets = budgets_from(env.get("OMNIDR_SKILL_BUDGETS", ""))
    frames, frames_max = _frames_protocol(Path(env.get("OMNIDR_PROTOCOL") or "/input/protocol.json"))
    return Workspace(level, env.get("OMNIDR_VIDEO", "/input/video.mp4"),
                     Path(env.get("OMNIDR_REPORT_DIR", "/output/report")),
                     Path(env.get("OMNIDR_CONTRACT", "/input/contract")),
                     search=SearchIndex.from_env(env.get("OMNIDR_SEARCH_INDEX")), budgets=budgets,
                     max_repairs=int(env.get("OMNIDR_MAX_REPAIRS", "3")), workflow=level == "full",
                     state_dir=Path(env.get("OMNIDR_SKILL_STATE") or f"{logs}/skills"),
                     # speech-to-text goes to the gateway the sandbox names for OpenAI-compatible calls
                     speech_url=env.get("OMNIDR_SPEECH_URL") or env.get("OPENAI_BASE_URL") or None,
                     speech_key=env.get("OMNIDR_SPEECH_KEY") or env.get("OPENAI_API_KEY"),
                     speech_model=env.get("OMNIDR_SPEECH_MODEL") or DEFAULT_MODEL,
                     door=env.get("OMNIDR_SEARCH_DOOR") or None,
                     captions=[c for c in env.get("OMNIDR_CAPTIONS", "").split(",") if c],
                     denylist=[d for d in env.get("OMNIDR_DENYLIST", "").split(",") if d], kind=kind,
                     artifacts_dir=Path(env.get("OMNIDR_ARTIFACTS_DIR") or Path("/output") / ARTIFACTS_DIR),
                     max_download_bytes=int(env.get("OMNIDR_MAX_DOWNLOAD_BYTES") or MAX_DOWNLOAD_BYTES),
                     sample_frames=frames, sample_frames_max=frames_max)


def _arguments(ns: argparse.Namespace) -> dict:
    args = {k: v for k, v in vars(ns).items() if k not in ("skill", "action") and v is not None}
    if args.get("merge") is False:
        del args["merge"]
    if "data" in args:  # a JSON file, or - for stdin
        text = sys.stdin.read() if args["data"] == "-" else Path(args["data"]).read_text("utf-8")
        args["data"] = json.loads(text)
    return args


def _log(ws: Workspace, record: dict) -> None:
    if ws.state_dir is None:
        return
    ws.state_dir.mkdir(parents=True, exist_ok=True)
    with open(ws.state_dir / CALLS_LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")


def _settings() -> tuple[str, str]:
    """The capability level and task kind from the environment; a wrong one raises `ValueError` (its message)."""
    level = os.environ.get("OMNIDR_CAPABILITY") or "full"
    if level not in LEVELS:
        raise ValueError(f"OMNIDR_CAPABILITY={level!r} is no capability level; use one of {', '.join(LEVELS)}")
    kind = os.environ.get(TASK_KIND_ENV) or DEFAULT_KIND
    if kind == MCQ_KIND:  # VideoOdyssey's questions go to the model directly (paper 004, Sec. 4.1)
        raise ValueError(f"{MCQ_KIND} questions are answered without tools, so no skill serves them; use one of "
                         f"{', '.join(TASK_KINDS)}")
    if kind not in TASK_KINDS:
        raise ValueError(f"OMNIDR_TASK_KIND={kind!r} is no task kind; use one of {', '.join(TASK_KINDS)}")
    return level, kind


def _install(ns: argparse.Namespace, level: str, kind: str) -> int:
    """Write the skills' SKILL.md files for Claude Code or Codex, or one AGENTS.md."""
    if not (ns.claude_code or ns.codex or ns.agents_md):
        print("omnidr-skill install: give --claude-code DIR, --codex DIR or --agents-md FILE", file=sys.stderr)
        return 2
    written = []
    for folder in filter(None, (ns.claude_code, ns.codex)):
        for s in skills_at(level, kind):
            path = folder / s.title / "SKILL.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(skill_md(s, level, kind), "utf-8")
            written.append(str(path))
    if ns.agents_md:
        ns.agents_md.parent.mkdir(parents=True, exist_ok=True)
        ns.agents_md.write_text(agents_md(level, kind), "utf-8")
        written.append(str(ns.agents_md))
    print(json.dumps({"capability": level, "written": written}))
    return 0


def _run_action(ws: Workspace, ns: argparse.Namespace, args: dict) -> tuple[int, str | None, Any]:
    """Run one skill action: its exit code, its error (None: none) and its result."""
    try:
        with ws.locked():
            return 0, None, ws.run(ns.skill, ns.action, args)
    except NotInstalled as exc:
        return NOT_INSTALLED, str(exc), None
    except EmptyAnswer as exc:  # bad input: one line, exit 2
        return 2, str(exc), None
    except SkillError as exc:
        return 1, str(exc), None
    except (TypeError, ValueError) as exc:
        return 1, f"bad arguments: {exc}", None
    except OSError as exc:  # the state or report folder cannot be written
        return 1, f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), None


def main(argv: list[str] | None = None) -> int:
    try:
        level, kind = _settings()
    except ValueError as exc:
        print(f"omnidr-skill: {exc}", file=sys.stderr)
        return 2
    ns = _parser().parse_args(argv)
    if ns.skill == "list":
        print(json.dumps({"capability": level, "task_kind": kind, "skills": [
            {"skill": s.name, "title": s.title, "actions": [a.name for a in s.actions_at(level, kind)]}
            for s in skills_at(level, kind)]}, indent=1))
        return 0
    if ns.skill == "install":
        return _install(ns, level, kind)
    try:
        ws = _workspace(level, kind)
        args = _arguments(ns)
    except (OSError, ValueError) as exc:
        print(f"omnidr-skill: {exc}", file=sys.stderr)
        return 2
    started, t0 = datetime.now(UTC).isoformat(timespec="milliseconds"), time.monotonic()
    record = {"at": started, "skill": ns.skill, "action": ns.action, "phase": find_action(ns.skill, ns.action).phase,
              "capability": level, "args": {k: ("<data>" if k == "data" else v) for k, v in args.items()}}
    code, error, result = _run_action(ws, ns, args)
    try:
        _log(ws, {**record, "exit": code, "error": error, "duration_s": round(time.monotonic() - t0, 3)})
    except OSError:
        pass  # the call's own outcome is what the agent needs; a read-only state folder is reported above
    if error is not None:
        print(f"omnidr-skill {ns.skill} {ns.action}: {error}", file=sys.stderr)
        return code
    print(json.dumps(result, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
