"""`omnidr audit`: where the trajectory comes from, the files written, the tables, bad input."""

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from trajectory_helpers import attempt_record, exchange, make_run, network_log, write_gateway

from omnidr.errors import UserError
from omnidr.trajectory import Trajectory, audit_run, dump_trajectory_jsonl, parse_native_log
from omnidr.trajectory._cli import audit


def chat_call(call_id: str, name: str, args: dict) -> dict:
    return {"choices": [{"message": {"tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}}]}


def gateway(folder: Path) -> None:
    write_gateway(folder / "logs" / "gateway.jsonl", [
        exchange(1, chat_call("a", "web_search", {"query": "q"})),
        exchange(2, chat_call("b", "write_report", {"html": "<p>x</p>"})),
        exchange(3, {"choices": [{"message": {"content": "done"}}]})])


def test_native_log_with_gateway_totals(tmp_path: Path, fixtures: Path):
    folder = make_run(tmp_path / "run", "openclaw")
    sessions = folder / "output/harness-logs/openclaw-state/agents/main/sessions"
    sessions.mkdir(parents=True)
    shutil.copy(fixtures / "openclaw-session.jsonl", sessions / "s.jsonl")
    gateway(folder)
    attempt_record(folder, "openclaw", wall_time_s=95.0)
    network_log(folder)
    [result] = audit_run(tmp_path / "run")
    assert result.origin == "output/harness-logs/openclaw-state/agents/main/sessions/s.jsonl"
    assert result.stats.wall_time_s == 95.0  # attempt.json wins over timestamps
    assert result.stats.token_source == "gateway" and result.stats.total_tokens == 330
    assert result.reason == "success"
    saved = Trajectory.model_validate_json((folder / "trajectory.json").read_text("utf-8"))
    assert saved.final_metrics.harness_tokens is not None and saved.final_metrics.gateway_tokens is not None
    page = (folder / "audit.html").read_text("utf-8")
    assert '<span id="step-count">11</span>' in page
    assert "https://benchmark.example/answers" in page and "blocked (denylist)" in page
    assert "token budget 50,000" in page


def test_common_trajectory_first(tmp_path: Path, fixtures: Path):
    folder = make_run(tmp_path / "run", "reference")
    traj = parse_native_log(fixtures / "claude-code-stream.jsonl")
    (folder / "output" / "trajectory.jsonl").write_text(dump_trajectory_jsonl(traj), "utf-8")
    gateway(folder)
    [result] = audit_run(tmp_path / "run")
    assert result.origin == "output/trajectory.jsonl" and result.stats.tool_calls == 3


def test_command_harness_from_gateway_alone(tmp_path: Path):
    folder = make_run(tmp_path / "run", "command")
    gateway(folder)
    [result] = audit_run(tmp_path / "run")
    assert result.origin == "logs/gateway.jsonl"
    assert result.stats.agent_steps == 3 and result.stats.phase_counts["write"] == 1
    # events: the search, the report write, the final answer -> the write sits in the middle
    assert result.stats.first_write_pct == 50.0 and result.stats.searches_after_write_pct == 0.0


def test_missing_native_log_falls_back_to_gateway(tmp_path: Path):
    folder = make_run(tmp_path / "run", "claude-code")
    gateway(folder)
    [result] = audit_run(tmp_path / "run")
    assert result.origin == "logs/gateway.jsonl" and "no native claude-code log" in result.warnings[0]


def test_cli_prints_tables_and_filters_task(tmp_path: Path, fixtures: Path):
    for task in ("task-a", "task-b"):
        folder = make_run(tmp_path / "run", "claude-code", task=task)
        shutil.copy(fixtures / "claude-code-stream.jsonl", folder / "output/harness-logs/claude-code.jsonl")
    result = CliRunner().invoke(audit, [str(tmp_path / "run"), "--task", "task-b"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "Process statistics" in result.output and "Phase order" in result.output
    assert "task-b" in result.output and "task-a" not in result.output
    assert (tmp_path / "run/attempts/task-b/1/audit.html").is_file()
    assert not (tmp_path / "run/attempts/task-a/1/audit.html").exists()
    everything = CliRunner().invoke(audit, [str(tmp_path / "run")], terminal_width=200)
    assert everything.exit_code == 0 and "task-a" in everything.output and "median of 2 tasks" in everything.output
    # a retried task still counts once: the paper's medians are over tasks, one trace each (App. F.7)
    retry = make_run(tmp_path / "run", "claude-code", task="task-a", attempt=2)
    shutil.copy(fixtures / "claude-code-stream.jsonl", retry / "output/harness-logs/claude-code.jsonl")
    again = CliRunner().invoke(audit, [str(tmp_path / "run")], terminal_width=200)
    assert again.exit_code == 0 and "median of 2 tasks" in again.output  # 3 attempts, 2 tasks


def test_interrupted_attempt_folders_are_skipped(tmp_path: Path):
    folder = make_run(tmp_path / "run", "command")
    gateway(folder)
    shutil.copytree(folder, folder.with_name("1.interrupted-20260501T100000"))
    assert len(audit_run(tmp_path / "run")) == 1


def user_error(args: list[str]) -> str:
    """Run the command as omnidr.cli.main does: a UserError is the one-line message (exit code 2)."""
    with pytest.raises(UserError) as info:
        audit.main(args, standalone_mode=False)
    message = str(info.value)
    assert "\n" not in message and info.value.exit_code == 2
    return message


def test_bad_input_is_one_line(tmp_path: Path):
    assert "not a run folder" in user_error([str(tmp_path)])
    folder = make_run(tmp_path / "run", "claude-code")
    assert "no attempts for task 'nope'" in user_error([str(tmp_path / "run"), "--task", "nope"])
    assert "nothing to audit" in user_error([str(tmp_path / "run")])
    log = folder / "output/harness-logs/claude-code.jsonl"
    log.write_text("", "utf-8")
    assert user_error([str(tmp_path / "run")]) == f"{log}: the log is empty; the agent wrote no events"
    log.write_text('{"type": "assistant", "message": {}}\n<html>\n{"type": "result"}\n', "utf-8")
    assert user_error([str(tmp_path / "run")]).startswith(f"{log}:2: not a JSON line")
    log.write_text('{"something": "else"}\n', "utf-8")
    assert "unknown log format" in user_error([str(tmp_path / "run")])


def test_unknown_harness_without_logs(tmp_path: Path):
    make_run(tmp_path / "run", "mystery-agent")
    message = user_error([str(tmp_path / "run")])
    assert "unknown harness 'mystery-agent'" in message and "claude-code" in message


def test_bad_run_json(tmp_path: Path):
    (tmp_path / "run.json").write_text("{not json", "utf-8")
    assert "run.json is not valid JSON" in user_error([str(tmp_path)])
    (tmp_path / "run.json").write_text("{}", "utf-8")
    assert "names no harness" in user_error([str(tmp_path)])
    (tmp_path / "run.json").write_text('{"harness": "command"}', "utf-8")
    assert "no attempt folders" in user_error([str(tmp_path)])


def test_the_audit_says_when_the_run_ended_on_an_api_error(tmp_path: Path, fixtures: Path):
    """The project's Claude Code 2.1.327 recording ends on the gateway's 400 budget refusal, which the CLI's
    `result` still calls subtype "success": the audit prints it as a failed run; a normal run prints no such line."""
    real = make_run(tmp_path / "run", "claude-code", task="refused")
    shutil.copytree(fixtures / "real" / "claude-code-2.1.327", real / "output/harness-logs", dirs_exist_ok=True)
    normal = make_run(tmp_path / "run", "claude-code", task="normal")
    shutil.copy(fixtures / "claude-code-stream.jsonl", normal / "output/harness-logs/claude-code.jsonl")
    result = CliRunner().invoke(audit, [str(tmp_path / "run")], terminal_width=300)
    assert result.exit_code == 0, result.output
    ended = [line for line in result.output.splitlines() if "the run ended on an error" in line]
    assert len(ended) == 1 and "api_error 400 API Error: 400 Budget exhausted" in ended[0], result.output


def test_the_audit_names_each_file_it_writes_and_leaves_an_unchanged_one_alone(tmp_path: Path):
    folder = make_run(tmp_path / "run", "command")
    gateway(folder)  # three exchanges: three steps
    first = CliRunner().invoke(audit, [str(tmp_path / "run")], terminal_width=200)
    assert first.exit_code == 0, first.output
    assert "  wrote trajectory.json\n" in first.output and "  wrote audit.html\n" in first.output
    written = {name: (folder / name).stat().st_mtime_ns for name in ("trajectory.json", "audit.html")}

    again = CliRunner().invoke(audit, [str(tmp_path / "run")], terminal_width=200)
    assert again.exit_code == 0 and "wrote" not in again.output  # nothing changed, nothing written or named
    assert {name: (folder / name).stat().st_mtime_ns for name in written} == written

    # a trajectory.json another omnidr wrote (here: one step) is replaced, and the audit says so and why
    saved = json.loads((folder / "trajectory.json").read_text("utf-8"))
    saved["steps"] = saved["steps"][:1]
    (folder / "trajectory.json").write_text(json.dumps(saved), "utf-8")
    rewritten = CliRunner().invoke(audit, [str(tmp_path / "run")], terminal_width=200)
    assert ("  rewrote trajectory.json: it held 1 step(s), this omnidr reads 3 from logs/gateway.jsonl\n"
            in rewritten.output), rewritten.output
    assert "wrote audit.html" not in rewritten.output  # the page reads the same steps as before: left alone
