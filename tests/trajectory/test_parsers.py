"""Parsers of native logs: real logs from public repositories, and the project's own fixtures."""

import json
from pathlib import Path

import pytest

from omnidr.errors import UserError
from omnidr.trajectory import (
    AgentStep,
    SystemStep,
    Trajectory,
    TrajectoryFormatError,
    dump_trajectory_jsonl,
    parse_native_log,
    read_common_trajectory,
    to_atif,
)

# file -> (format, tool calls, tool errors, complete)
REAL = {
    "claude-code/stream-json-hooks-apiretry-bgtasks.jsonl": ("claude-code-stream", 11, 2, True),
    "claude-code/stream-json-interrupted-no-result.jsonl": ("claude-code-stream", 3, 0, False),
    "claude-code/transcript-v1.0.108-inline-sidechain.jsonl": ("claude-code-transcript", 21, 3, None),
    "claude-code/transcript-v2.0.26-session.jsonl": ("claude-code-transcript", 10, 1, None),
    "claude-code/transcript-v2.1.38-task-subagent-progress.jsonl": ("claude-code-transcript", 16, 0, None),
    "claude-code/transcript-v2.1.39-subagent-file.jsonl": ("claude-code-transcript", 12, 0, None),
    "codex/exec-json-command-execution.jsonl": ("codex-exec", 1, 0, True),
    "codex/exec-json-file-change.jsonl": ("codex-exec", 1, 0, True),
    "codex/exec-json-zsh-two-reasoning.jsonl": ("codex-exec", 1, 0, True),
    "codex/exec-json-interrupted.jsonl": ("codex-exec", 0, 0, False),
    "codex/rollout-0.66.0-cli-apply-patch-errors.jsonl": ("codex-rollout", 5, 2, None),
    "codex/rollout-0.40.0-vscode-single-turn.jsonl": ("codex-rollout", 34, 0, None),
    "codex/rollout-0.40.0-vscode-multiturn-aborted-truncated.jsonl": ("codex-rollout", 31, 3, False),
}


def errors(traj: Trajectory) -> int:
    return sum(o.is_error for s in traj.agent_steps() for o in s.observations)


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_logs_parse(native_logs: Path, name: str):
    fmt, calls, errs, complete = REAL[name]
    traj = parse_native_log(native_logs / name)
    assert traj.source_format == fmt
    assert len(traj.tool_calls()) == calls
    assert errors(traj) == errs
    assert traj.complete is complete
    # every observation answers a call of the same step
    for step in traj.agent_steps():
        ids = {c.id for c in step.tool_calls}
        assert all(o.tool_call_id in ids for o in step.observations)
    assert [s.index for s in traj.steps] == list(range(1, len(traj.steps) + 1))
    Trajectory.model_validate_json(traj.model_dump_json())  # the dump is the model


def test_claude_usage_counted_once_per_message_id(native_logs: Path):
    path = native_logs / "claude-code/transcript-v1.0.108-inline-sidechain.jsonl"
    import json
    seen: dict[str, dict] = {}
    lines = 0
    for line in path.read_text("utf-8").splitlines():
        d = json.loads(line)
        if d.get("type") == "assistant":
            lines += 1
            seen[d["message"]["id"]] = d["message"]["usage"]
    traj = parse_native_log(path)
    assert len(traj.agent_steps()) == len(seen) < lines  # blocks of one message merged
    expected = sum(u["output_tokens"] for u in seen.values())
    assert traj.final_metrics.harness_tokens.output_tokens == expected
    assert sum(s.subagent for s in traj.agent_steps()) > 0  # inline sidechain turns flagged


def test_claude_stream_fixture(fixtures: Path):
    traj = parse_native_log(fixtures / "claude-code-stream.jsonl", "claude-code")
    agents = traj.agent_steps()
    assert len(agents) == 4  # msg_1 arrives as two lines, one step
    assert agents[0].message == "I will search first." and agents[0].tool_calls[0].name == "WebSearch"
    assert agents[0].usage.input_tokens == 1000 and agents[0].usage.output_tokens == 40
    assert [c.phase for c in traj.tool_calls()] == ["search", "write", "video"]
    assert traj.observation_for("toolu_2").is_error
    assert any(isinstance(s, SystemStep) and s.is_error for s in traj.steps)  # the API retry
    m = traj.final_metrics
    assert (m.harness_tokens.input_tokens, m.harness_tokens.output_tokens) == (4680, 280)
    assert m.harness_cost_usd == 0.01 and m.harness_duration_s == 42.0 and traj.complete


def test_codex_exec_has_no_timestamps_and_sums_turn_usage(native_logs: Path):
    traj = parse_native_log(native_logs / "codex/exec-json-command-execution.jsonl")
    assert all(s.timestamp is None for s in traj.steps)
    assert traj.final_metrics.harness_tokens.input_tokens == 6040
    step = traj.agent_steps()[0]
    assert step.reasoning == "**Preparing to list files with bash shell**"
    assert step.observations[0].content.startswith("stream-output-1.jsonl")


def test_codex_rollout_token_count_is_cumulative(native_logs: Path):
    import json
    path = native_logs / "codex/rollout-0.40.0-vscode-single-turn.jsonl"
    last = None
    for line in path.read_text("utf-8").splitlines():
        p = json.loads(line)["payload"]
        if p.get("type") == "token_count" and p.get("info"):
            last = p["info"]["total_token_usage"]
    traj = parse_native_log(path)
    assert traj.final_metrics.harness_tokens.input_tokens == last["input_tokens"]
    assert traj.final_metrics.harness_tokens.output_tokens == last["output_tokens"]
    assert traj.model == "gpt-5-codex" and traj.harness_version == "0.40.0"
    assert all(s.timestamp is not None for s in traj.steps)


def test_codex_exec_killed_mid_write(fixtures: Path):
    traj = parse_native_log(fixtures / "codex-exec-killed.jsonl")
    assert traj.complete is False
    assert [c.phase for c in traj.tool_calls()] == ["read", "read"]  # ls, then the unfinished curl
    assert traj.observation_for("item_2") is None
    assert any("cut short" in w for w in traj.warnings)
    assert any("never finished" in w for w in traj.warnings)


def test_truncated_real_file_parses_to_last_whole_line(native_logs: Path, tmp_path: Path):
    source = native_logs / "claude-code/stream-json-hooks-apiretry-bgtasks.jsonl"
    data = source.read_bytes()
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(data[: len(data) // 2])
    traj = parse_native_log(cut)
    assert 0 < len(traj.steps) < len(parse_native_log(source).steps)
    assert traj.complete is False and "cut short" in traj.warnings[0]


def test_openclaw_session_fixture(fixtures: Path):
    traj = parse_native_log(fixtures / "openclaw-session.jsonl", "openclaw")
    assert traj.source_format == "openclaw-session" and traj.session_id.startswith("6f1c2a9e")
    assert traj.model == "test-model" and traj.complete is True
    assert [c.phase for c in traj.tool_calls()] == ["video", "search", "write", "read", "read", "read", "search",
                                                    "write"]
    assert errors(traj) == 3
    first = traj.agent_steps()[0]
    assert first.reasoning == "First look at the video." and first.usage.input_tokens == 1200
    assert traj.final_metrics.harness_tokens.output_tokens == 50 + 40 + 300 + 30 * 4 + 80 + 20


@pytest.mark.parametrize("content, problem", [
    ("", "empty"),
    ("\n\n", "empty"),
    ('{"hello": 1}\n{"world": 2}\n', "unknown log format"),
    ('{"type":"thread.started"}\nnot json\n{"type":"turn.started"}\n', "not a JSON line"),
    ("[1, 2]\n", "expected a JSON object"),
    ('{"type":"thread.st', "not a JSON line"),
])
def test_bad_logs_name_file_and_line(tmp_path: Path, content: str, problem: str):
    path = tmp_path / "native.jsonl"
    path.write_text(content, "utf-8")
    with pytest.raises(TrajectoryFormatError) as info:
        parse_native_log(path)
    message = str(info.value)
    assert message.startswith(str(path)) and problem in message and "\n" not in message
    assert isinstance(info.value, UserError)
    if problem == "not a JSON line" and "turn.started" in content:
        assert message.startswith(f"{path}:2:")


def test_wrong_harness_is_refused(fixtures: Path):
    with pytest.raises(TrajectoryFormatError, match="not a codex log"):
        parse_native_log(fixtures / "openclaw-session.jsonl", "codex")


def test_common_format_round_trip_and_atif(fixtures: Path, tmp_path: Path):
    traj = parse_native_log(fixtures / "openclaw-session.jsonl")
    path = tmp_path / "trajectory.jsonl"
    path.write_text(dump_trajectory_jsonl(traj), "utf-8")
    again = read_common_trajectory(path, "openclaw")
    assert again.source_format == "common"
    assert [s.model_dump(exclude={"line"}) for s in again.steps] == [s.model_dump(exclude={"line"}) for s in traj.steps]
    atif = to_atif(again)
    assert atif["schema_version"].startswith("ATIF") and len(atif["steps"]) == len(traj.steps)
    agent = next(s for s in atif["steps"] if s["source"] == "agent" and "tool_calls" in s)
    assert agent["tool_calls"][0]["function_name"] == "exec" and agent["observation"]["results"]


def test_common_format_bad_step_names_line(tmp_path: Path):
    path = tmp_path / "trajectory.jsonl"
    path.write_text('{"type":"user","message":"hi"}\n{"type":"agent","tool_calls":[{"name":"x"}]}\n', "utf-8")
    with pytest.raises(TrajectoryFormatError, match=r"trajectory.jsonl:2: not a trajectory step"):
        read_common_trajectory(path, "reference")


def test_steps_are_a_discriminated_union(fixtures: Path):
    traj = parse_native_log(fixtures / "openclaw-session.jsonl")
    data = traj.model_dump(mode="json")
    assert {s["type"] for s in data["steps"]} == {"system", "user", "agent"}
    back = Trajectory.model_validate(data)
    assert [type(s) for s in back.steps] == [type(s) for s in traj.steps]
    assert isinstance(back.steps[2], AgentStep)


# ---- logs of today's CLIs, from this project's own runs (tests/trajectory/fixtures/real) ------------
# Both are attempts that the gateway stopped after 2 model requests (budget max_iterations); the
# gateway counted exactly these tokens.
GATEWAY = {"claude-code": (25459, 402), "codex": (23985, 487)}


def test_claude_code_2_1_327_per_step_usage_comes_from_the_transcript(fixtures: Path):
    traj = parse_native_log(fixtures / "real" / "claude-code-2.1.327" / "claude-code.jsonl")
    assert traj.harness_version == "2.1.327" and traj.complete is True
    answered = [s for s in traj.agent_steps() if s.usage and not s.error]
    # the stream says 1 output token per step (message_start); the transcript has the final counts
    assert [s.usage.output_tokens for s in answered] == [95, 307]
    m = traj.final_metrics
    assert (m.harness_tokens.input_tokens, m.harness_tokens.output_tokens) == GATEWAY["claude-code"]
    assert any("Budget exhausted" in (s.error or "") for s in traj.agent_steps())


def test_codex_0_147_0_failed_turn_is_not_a_completed_run(fixtures: Path):
    [rollout] = sorted((fixtures / "real" / "codex-0.147.0").glob("rollout-*.jsonl"))
    traj = parse_native_log(rollout)
    assert traj.harness_version == "0.147.0" and traj.complete is False
    # the exec stream beside it says the model name was outside Codex's catalog; the trajectory records it
    assert any("fallback model metadata for `scripted-demo`" in w for w in traj.warnings)
    assert any(isinstance(s, SystemStep) and s.is_error and "Budget exhausted" in s.message for s in traj.steps)
    m = traj.final_metrics
    assert (m.harness_tokens.input_tokens, m.harness_tokens.output_tokens) == GATEWAY["codex"]
    exec_stream = parse_native_log(fixtures / "real" / "codex-0.147.0" / "codex-exec.jsonl")
    assert exec_stream.complete is False
    assert exec_stream.final_metrics.harness_tokens is None or exec_stream.final_metrics.harness_tokens.requests is None


def test_codex_unified_exec_failure_is_a_tool_error(tmp_path: Path):
    import json

    lines = [
        {"type": "session_meta", "payload": {"id": "s", "cli_version": "0.147.0"}},
        {"type": "response_item", "payload": {"type": "function_call", "name": "exec_command", "call_id": "c1",
                                              "arguments": json.dumps({"cmd": "false"})}},
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1",
                                              "output": "Chunk ID: 1\nWall time: 0.0 seconds\nProcess exited with code 1\n"}},
        {"type": "event_msg", "payload": {"type": "task_complete", "last_agent_message": "done"}},
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    traj = parse_native_log(path)
    [call] = [c for s in traj.agent_steps() for c in s.tool_calls]
    [obs] = [o for s in traj.agent_steps() for o in s.observations]
    assert call.name == "exec_command" and obs.is_error and traj.complete is True


def test_claude_code_subagent_files_are_merged_and_marked(tmp_path: Path, fixtures: Path, native_logs: Path):
    """Claude Code 2.1 keeps a subagent's turns in <session>/subagents/agent-*.jsonl, not in the stream."""
    import shutil

    real = fixtures / "real" / "claude-code-2.1.327"
    shutil.copytree(real, tmp_path / "logs")
    [transcript] = (tmp_path / "logs" / "claude-config" / "projects" / "-tmp").glob("*.jsonl")
    subagents = transcript.with_suffix("") / "subagents"
    subagents.mkdir(parents=True)
    shutil.copy(native_logs / "claude-code" / "transcript-v2.1.39-subagent-file.jsonl", subagents / "agent-a1.jsonl")
    main = parse_native_log(real / "claude-code.jsonl")
    merged = parse_native_log(tmp_path / "logs" / "claude-code.jsonl")
    sub = [s for s in merged.agent_steps() if s.subagent]
    assert sub and len(merged.agent_steps()) == len(main.agent_steps()) + len(sub)
    assert [s.index for s in merged.steps] == list(range(1, len(merged.steps) + 1))
    assert not any(s.subagent for s in main.agent_steps())


def _message_tokens(*files: Path) -> tuple[int, int]:
    """(input, output) over the distinct assistant messages of Claude Code transcripts, each message's last usage:
    input counts cache reads and writes (Anthropic's `input_tokens` leaves them out)."""
    last: dict[str, dict] = {}
    for file in files:
        for line in file.read_text().splitlines():
            d = json.loads(line)
            msg = d.get("message") if d.get("type") == "assistant" else None
            if isinstance(msg, dict) and msg.get("usage"):
                last[msg["id"]] = msg["usage"]
    return (sum(u["input_tokens"] + u.get("cache_read_input_tokens", 0) + u.get("cache_creation_input_tokens", 0)
                for u in last.values()), sum(u["output_tokens"] for u in last.values()))


def _session(tmp_path: Path, fixtures: Path, native_logs: Path) -> tuple[Path, Path, Path]:
    """The real 2.1.327 run (stream and main transcript) with the real 2.1.39 subagent transcript beside the main
    one, where Claude Code 2.1 writes a foreground subagent's turns. Returns (stream, transcript, subagent file)."""
    import shutil

    shutil.copytree(fixtures / "real" / "claude-code-2.1.327", tmp_path / "logs")
    [transcript] = (tmp_path / "logs" / "claude-config" / "projects" / "-tmp").glob("*.jsonl")
    (transcript.with_suffix("") / "subagents").mkdir(parents=True)
    sub = transcript.with_suffix("") / "subagents" / "agent-a1.jsonl"
    shutil.copy(native_logs / "claude-code" / "transcript-v2.1.39-subagent-file.jsonl", sub)
    return tmp_path / "logs" / "claude-code.jsonl", transcript, sub


def test_a_foreground_subagents_tokens_are_read_from_its_transcript_beside_the_main_one(tmp_path, fixtures, native_logs):
    stream, transcript, sub = _session(tmp_path, fixtures, native_logs)
    main_in, main_out = _message_tokens(transcript)
    sub_in, sub_out = _message_tokens(sub)
    got = parse_native_log(transcript)  # the main transcript alone, as a user may hand it over
    h = got.final_metrics.harness_tokens
    assert (h.input_tokens, h.output_tokens) == (main_in + sub_in, main_out + sub_out)
    assert any(s.subagent for s in got.agent_steps()) and not got.main().steps[-1].subagent


def test_a_background_subagents_turns_in_the_stream_are_counted_once(tmp_path, fixtures, native_logs):
    """A background subagent's turns reach stream-json (with parent_tool_use_id) and its own transcript: its tokens
    and steps count once. The stream is cut before its `result`, so the tokens are summed over the steps."""
    stream, transcript, sub = _session(tmp_path, fixtures, native_logs)
    lines = [json.loads(x) for x in stream.read_text().splitlines()]
    echoed = [{"type": "assistant", "message": d["message"], "parent_tool_use_id": "toolu_background_1",
               "session_id": lines[0]["session_id"]}
              for d in map(json.loads, sub.read_text().splitlines()) if d.get("type") == "assistant"]
    stream.write_text("".join(json.dumps(d) + "\n" for d in lines[:-1] + echoed))  # no result line
    got = parse_native_log(stream)
    main_in, main_out = _message_tokens(transcript)
    sub_in, sub_out = _message_tokens(sub)
    h = got.final_metrics.harness_tokens
    assert (h.input_tokens, h.output_tokens) == (main_in + sub_in, main_out + sub_out)
    subagent_turns = [s for s in got.agent_steps() if s.subagent]
    assert len(subagent_turns) == len({json.loads(x)["message"]["id"] for x in sub.read_text().splitlines()
                                       if json.loads(x).get("type") == "assistant"})
    # the stream's own steps carry the transcript's final output counts, not message_start's 1
    assert sum(s.usage.output_tokens for s in got.main().agent_steps() if s.usage) == main_out


def test_a_run_that_ended_on_an_api_error_reads_as_failed(fixtures):
    """The project's own recording of Claude Code 2.1.327 ends on the gateway's budget refusal (a 400 after two model
    requests): the CLI writes a synthetic assistant message and a `result` whose subtype is "success" but whose
    is_error is true, with terminal_reason api_error. The trajectory reads it as a failed run."""
    got = parse_native_log(fixtures / "real" / "claude-code-2.1.327" / "claude-code.jsonl")
    assert got.complete is True  # the log itself is whole
    assert got.ended_with_error is not None
    assert got.ended_with_error.startswith("api_error 400 API Error: 400 Budget exhausted (max_iterations)")
    assert got.agent_steps()[-1].error is not None and "Budget exhausted" in got.agent_steps()[-1].error
    # a run whose result is not an error (is_error false; a failed tool call inside it is no run error) ends without one
    assert parse_native_log(fixtures / "claude-code-stream.jsonl").ended_with_error is None
