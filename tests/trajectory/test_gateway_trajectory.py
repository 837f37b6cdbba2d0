"""The gateway log: token totals beside the harness's, and the trajectory of last resort."""

import json
from pathlib import Path

import pytest
from trajectory_helpers import exchange, write_gateway

from omnidr.trajectory import (
    TrajectoryFormatError,
    attach_gateway_totals,
    parse_native_log,
    process_stats,
    trajectory_from_gateway,
)


def chat_call(call_id: str, name: str, args: dict) -> dict:
    return {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}}]}


def test_gateway_totals_are_the_source_of_truth(fixtures: Path, tmp_path: Path):
    traj = parse_native_log(fixtures / "claude-code-stream.jsonl")
    harness = traj.final_metrics.harness_tokens
    log = write_gateway(tmp_path / "gateway.jsonl", [
        exchange(1, {}, tokens=(5000, 100)), exchange(2, {}, tokens=(6000, 200)),
        exchange(3, {}, tokens=None, outcome="upstream_error", status=500)])
    attach_gateway_totals(traj, log)
    m = traj.final_metrics
    assert (m.gateway_tokens.input_tokens, m.gateway_tokens.output_tokens, m.gateway_tokens.requests) == (11000, 300, 3)
    assert m.harness_tokens == harness  # kept beside
    assert m.gateway_errors == 1
    stats = process_stats(traj)
    assert stats.token_source == "gateway" and stats.total_tokens == 11300
    assert stats.harness_total_tokens == harness.total_tokens


def test_trajectory_from_gateway_three_apis(tmp_path: Path):
    exchanges = [
        exchange(1, chat_call("c1", "web_search", {"query": "q"}),
                 request_body={"messages": [{"role": "user", "content": "task"}]}),
        exchange(2, {"content": [{"type": "text", "text": "writing"},
                                 {"type": "tool_use", "id": "t1", "name": "write_file", "input": {"path": "r.html"}}]},
                 route="messages",
                 request_body={"messages": [{"role": "tool", "tool_call_id": "c1", "content": "results"}]}),
        exchange(3, {"output": [{"type": "function_call", "call_id": "f1", "name": "fetch_page",
                                 "arguments": "{\"url\": \"https://example.org\"}"}]}, route="responses",
                 request_body={"messages": [{"role": "user", "content": [
                     {"type": "tool_result", "tool_use_id": "t1", "content": "denied", "is_error": True}]}]}),
        exchange(4, {"choices": [{"message": {"content": "done"}}]},
                 request_body={"input": [{"type": "function_call_output", "call_id": "f1", "output": "<html>"}]}),
    ]
    traj = trajectory_from_gateway(write_gateway(tmp_path / "gateway.jsonl", exchanges))
    assert traj.source_format == "gateway" and traj.harness == "command"
    assert [c.name for c in traj.tool_calls()] == ["web_search", "write_file", "fetch_page"]
    assert [c.phase for c in traj.tool_calls()] == ["search", "write", "read"]
    assert traj.tool_calls()[2].arguments == {"url": "https://example.org"}
    assert traj.observation_for("c1").content == "results"
    assert traj.observation_for("t1").is_error
    assert traj.observation_for("f1").content == "<html>"
    assert traj.agent_steps()[3].message == "done"
    assert all(s.timestamp is not None for s in traj.steps)
    assert traj.final_metrics.gateway_tokens.input_tokens == 400


def test_trajectory_from_streamed_answers(tmp_path: Path):
    anthropic_sse = "\n".join("data: " + json.dumps(e) for e in [
        {"type": "message_start", "message": {}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t9", "name": "Bash",
                                                                     "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"comm"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta",
                                                              "partial_json": "and\": \"ffprobe v.mp4\"}"}},
        {"type": "message_stop"}])
    chat_sse = "\n".join("data: " + json.dumps(e) for e in [
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c9", "function": {"name": "search_web",
                                                                                    "arguments": "{\"q\":"}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\"x\"}"}}]}}]}]) + "\ndata: [DONE]"
    responses_sse = "\n".join("data: " + json.dumps(e) for e in [
        {"type": "response.output_item.done", "item": {"type": "function_call", "call_id": "r9", "name": "apply_patch",
                                                       "arguments": "{}"}}])
    traj = trajectory_from_gateway(write_gateway(tmp_path / "g.jsonl", [
        exchange(1, anthropic_sse, route="messages", stream=True), exchange(2, chat_sse, stream=True),
        exchange(3, responses_sse, route="responses", stream=True)]), "command")
    calls = traj.tool_calls()
    assert [(c.name, c.arguments) for c in calls] == [("Bash", {"command": "ffprobe v.mp4"}), ("search_web", {"q": "x"}),
                                                       ("apply_patch", {})]
    assert [c.phase for c in calls] == ["video", "search", "write"]


def test_bad_gateway_line_names_file_and_line(tmp_path: Path):
    good = exchange(1, {}).model_dump_json()
    path = tmp_path / "gateway.jsonl"
    path.write_text(good + "\n" + json.dumps({"seq": 2}) + "\n" + good + "\n", "utf-8")
    with pytest.raises(TrajectoryFormatError, match=r"gateway.jsonl:2: not a gateway exchange"):
        trajectory_from_gateway(path)
    path.write_text(good + "\n" + good[:40], "utf-8")  # killed while writing the last line
    traj = trajectory_from_gateway(path)
    assert len(traj.steps) == 1 and "cut short" in traj.warnings[0]
