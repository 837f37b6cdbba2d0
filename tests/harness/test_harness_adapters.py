"""Adapters of the harnesses: commands, environment and native log places (no Docker).

The command is run through a real `sh` with the harness binary replaced by a stub that records
its argv and environment, so the quoting and the redirection are tested as the container runs them.
"""

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from testkit import ROOT

from omnidr.harness import AgentContext, ClaudeCodeHarness, CodexHarness, OpenClawHarness, ReferenceHarness
from omnidr.trajectory import NATIVE_LOG_GLOBS, parse_native_log

TRAJECTORY_FIXTURES = ROOT / "tests" / "trajectory" / "fixtures"  # the parsers' own small logs

INSTRUCTION = "Research the video; cite 'sources' and \"quotes\" $(not a command) `nor this`."


def context(root: Path) -> AgentContext:
    (root / "input").mkdir(parents=True, exist_ok=True)
    (root / "input" / "instruction.txt").write_text(INSTRUCTION, "utf-8")
    return AgentContext(
        instruction_path=str(root / "input/instruction.txt"), video_path="/input/video.mp4", contract_dir="/contract",
        output_dir=str(root / "output"), report_dir=str(root / "output/report"), gateway_url="http://gateway:8080",
        proxy_url="http://proxy:3128", token="dummy-token", model="test-model",
        logs_dir=str(root / "output/harness-logs"))


def run_with_stub(harness, ctx: AgentContext, root: Path, binary: str) -> dict:
    """Run the adapter's command in sh with `binary` on PATH as a stub printing its argv/env as JSON."""
    bin_dir = root / "bin"
    bin_dir.mkdir(exist_ok=True)
    stub = bin_dir / binary
    stub.write_text("#!/usr/bin/env python3\nimport json, os, sys\n"
                    "print(json.dumps({'argv': sys.argv[1:], 'env': dict(os.environ)}))\n", "utf-8")
    stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", **harness.environment(ctx)}
    argv = harness.command(ctx)
    assert argv[:2] == ["sh", "-c"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # stdout went to the native log
    return env


def read_log(path: Path) -> dict:
    return json.loads(path.read_text("utf-8"))


@pytest.mark.parametrize("cls", [ClaudeCodeHarness, CodexHarness, OpenClawHarness])
def test_adapters_follow_the_protocol(cls, tmp_path: Path):
    harness = cls(image_ref="omnidr/test:1")
    ctx = context(tmp_path)
    argv = harness.command(ctx)  # the sandbox hands it to Docker as the container's command: a list of strings
    assert isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)
    assert harness.image() == "omnidr/test:1"
    assert harness.name in NATIVE_LOG_GLOBS  # a parser reads its logs
    for path in harness.native_logs(ctx):
        assert path.startswith(ctx.logs_dir)
    env = harness.environment(ctx)
    assert "dummy-token" in env.values() and all(isinstance(v, str) for v in env.values())
    assert not any("api.openai.com" in v or "api.anthropic.com" in v for v in env.values())


def test_claude_code_command_and_environment(tmp_path: Path):
    harness = ClaudeCodeHarness(image_ref="img", max_turns=40)
    ctx = context(tmp_path)
    env = harness.environment(ctx)
    assert env["ANTHROPIC_BASE_URL"] == "http://gateway:8080"
    for key in ("ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
                "CLAUDE_CODE_SUBAGENT_MODEL"):
        assert env[key] == "test-model"
    for key in ("DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
                "DISABLE_ERROR_REPORTING"):
        assert env[key] == "1"
    assert env["CLAUDE_CONFIG_DIR"].startswith(ctx.logs_dir)
    run_with_stub(harness, ctx, tmp_path, "claude")
    seen = read_log(Path(ctx.logs_dir) / "claude-code.jsonl")
    argv = seen["argv"]
    assert argv[argv.index("-p") + 1] == INSTRUCTION  # passed verbatim, nothing expanded
    assert argv[argv.index("--output-format") + 1] == "stream-json" and "--verbose" in argv
    assert argv[argv.index("--model") + 1] == "test-model" and argv[argv.index("--max-turns") + 1] == "40"
    # provider-side search is off; WebFetch skips its preflight to api.anthropic.com
    assert argv[argv.index("--disallowedTools") + 1] == "WebSearch"
    assert json.loads(argv[argv.index("--settings") + 1]) == {"skipWebFetchPreflight": True}
    assert " < /dev/null > " in harness.command(ctx)[-1]


def test_codex_command_and_environment(tmp_path: Path):
    harness = CodexHarness(image_ref="img", reasoning_effort="high")
    ctx = context(tmp_path)
    run_with_stub(harness, ctx, tmp_path, "codex")
    seen = read_log(Path(ctx.logs_dir) / "codex-exec.jsonl")
    argv = seen["argv"]
    assert argv[:2] == ["exec", "--json"] and argv[-1] == INSTRUCTION
    overrides = dict(a.split("=", 1) for a, prev in zip(argv[1:], argv, strict=False) if prev == "-c")
    assert overrides["model_provider"] == '"omnidr"'
    assert overrides["model_providers.omnidr.base_url"] == '"http://gateway:8080/v1"'
    assert overrides["model_providers.omnidr.wire_api"] == '"responses"'
    assert overrides["model_providers.omnidr.env_key"] == '"OPENAI_API_KEY"'
    assert overrides["check_for_update_on_startup"] == "false"
    assert overrides["model_reasoning_effort"] == '"high"'
    assert overrides["features.plugins"] == "false" and overrides["analytics.enabled"] == "false"
    assert overrides["web_search"] == '"disabled"' and "--strict-config" in argv
    assert seen["env"]["OPENAI_API_KEY"] == "dummy-token"
    assert seen["env"]["CODEX_HOME"] == f"{ctx.logs_dir}/codex-home"
    assert Path(seen["env"]["CODEX_HOME"]).is_dir()  # created before codex starts


def test_openclaw_command_writes_its_config(tmp_path: Path):
    harness = OpenClawHarness(image_ref="img")
    ctx = context(tmp_path)
    env = run_with_stub(harness, ctx, tmp_path, "openclaw")
    seen = read_log(Path(ctx.logs_dir) / "openclaw.jsonl")
    argv = seen["argv"]
    assert argv[:2] == ["agent", "--local"] and argv[argv.index("--message") + 1] == INSTRUCTION
    config = json.loads(Path(env["OPENCLAW_CONFIG_PATH"]).read_text("utf-8"))
    provider = config["models"]["providers"]["omnidr"]
    assert provider["baseUrl"] == "http://gateway:8080/v1" and provider["api"] == "openai-responses"
    assert provider["apiKey"] == "${OPENAI_API_KEY}"  # the token comes from the environment, not the file
    assert config["agents"]["defaults"]["model"]["primary"] == "omnidr/test-model"
    assert env["OPENCLAW_STATE_DIR"].startswith(ctx.logs_dir)


def test_the_harness_adapter_describes_the_agent():
    ctx = AgentContext("/input/instruction.txt", "/input/video.mp4", "/input/contract", "/output", "/output/report",
                       "http://gateway:8080", "http://proxy:3128", "tok", "m1", "/output/harness-logs")
    h = ReferenceHarness("video", image="omnidr/reference:x", search=[{"url": "https://a.example/", "title": "A"}])
    assert h.name == "reference" and h.image() == "omnidr/reference:x"
    assert h.command(ctx) == ["python", "-m", "sandbox.reference_agent", "--capability", "video", "--model", "m1"]
    env = h.environment(ctx)
    assert env["OMNIDR_CAPABILITY"] == "video" and json.loads(env["OMNIDR_SEARCH_INDEX"])["pages"][0]["title"] == "A"
    assert h.native_logs(ctx)[0] == "/output/harness-logs/reference.jsonl"
    with pytest.raises(ValueError):
        ReferenceHarness("everything")


def test_native_log_places_match_the_audit(tmp_path: Path):
    """A session where the OpenClaw adapter puts it is found and parsed by the audit's globs."""
    from omnidr.trajectory._audit import native_log

    ctx = context(tmp_path / "attempt")
    sessions = Path(OpenClawHarness(image_ref="img").native_logs(ctx)[0])
    sessions.mkdir(parents=True)
    (sessions / "omnidr-attempt.jsonl").write_bytes((TRAJECTORY_FIXTURES / "openclaw-session.jsonl").read_bytes())
    found = native_log(tmp_path / "attempt", "openclaw")
    assert found is not None and parse_native_log(found, "openclaw").tool_calls()


def test_the_cli_offers_exactly_the_registrys_harnesses_and_levels():
    from omnidr.cli import run
    from omnidr.harness import CAPABILITIES, HARNESSES

    choices = {p.name: p.type.choices for p in run.params if p.name in ("harness", "capability")}
    assert sorted(choices["harness"]) == sorted(HARNESSES)
    assert tuple(choices["capability"]) == CAPABILITIES


def test_omnidr_harnesses_lists_each_harness_with_its_cli():
    from testkit import run_cli

    r = run_cli("harnesses")
    assert r.returncode == 0, r.stderr
    rows = {line.split("│")[1].strip(): line for line in r.stdout.splitlines() if line.count("│") > 5}
    assert set(rows) == {"reference", "claude-code", "codex", "openclaw", "direct", "command"}
    assert "MODALITY-NNNf-WINDOW" in rows["direct"] and "reference" in rows["direct"]  # its image
    assert "claude 2.1.327" in rows["claude-code"] and "anthropic" in rows["claude-code"]
    assert "codex 0.147.0" in rows["codex"] and "npm" in rows["openclaw"]
