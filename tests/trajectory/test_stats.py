"""Process statistics (paper Tables 22-24) on hand-made and real trajectories."""

from pathlib import Path

from omnidr.trajectory import (
    AgentStep,
    Observation,
    ToolCall,
    Trajectory,
    UserStep,
    parse_native_log,
    phase_of,
    process_stats,
    summarize,
)


def trajectory(phases: str, failing: set[int] = frozenset(), same_args: bool = False) -> Trajectory:
    """A user step, then one agent step per letter: v(ideo) s(earch) r(ead) w(rite into the report)
    x (write a scratch file) c(heck=verify) o(ther)."""
    names = {"v": "video", "s": "search", "r": "read", "w": "write", "x": "write", "c": "verify", "o": "other"}
    steps = [UserStep(index=1, message="task")]
    for i, letter in enumerate(phases):
        args = {"n": 0 if same_args else i}
        if letter in "wx":
            args["file_path"] = "/output/report/index.html" if letter == "w" else f"/tmp/work/notes-{i}.md"
        call = ToolCall(id=f"c{i}", name=f"tool_{letter}", arguments=args, phase=names[letter])
        steps.append(AgentStep(index=i + 2, tool_calls=[call],
                               observations=[Observation(tool_call_id=f"c{i}", is_error=i in failing)]))
    return Trajectory(harness="test", source_format="common", steps=steps)


def test_phase_order_statistics():
    stats = process_stats(trajectory("vsswssrwsww"))
    # events 0..11 (the user's request, then the 11 calls): first report write at 4 -> 36.4%, last search at 9
    assert stats.events == 12 and stats.report_writes == 4
    assert stats.first_write_pct == round(100 * 4 / 11, 1) and stats.last_search_pct == round(100 * 9 / 11, 1)
    assert stats.searches_after_write_pct == 60.0  # 3 of 5 searches come after the first write
    assert stats.write_blocks == 3  # w | w | ww
    assert not stats.interleaved  # needs >= 4 blocks
    assert stats.phase_counts == {"video": 1, "search": 5, "read": 1, "write": 4, "verify": 0, "other": 0}
    assert stats.steps == 12 and stats.tool_calls == 11


def test_interleaved_rule():
    assert process_stats(trajectory("swswswsw")).interleaved  # 75% after write, 4 blocks
    assert not process_stats(trajectory("sssssswswsww")).interleaved  # 25% after write, 3 blocks
    assert not process_stats(trajectory("ssssssswwww")).interleaved  # write once at the end


def test_edge_cases():
    none = process_stats(trajectory(""))
    assert none.first_write_pct is None and none.searches_after_write_pct is None and none.write_blocks == 0
    no_write = process_stats(trajectory("ss"))
    assert no_write.searches_after_write_pct == 0.0 and no_write.last_search_pct == 100.0
    single = process_stats(trajectory("w"))
    assert single.first_write_pct == 100.0 and single.write_blocks == 1  # after the request, the last event


def test_only_writes_under_the_report_folder_are_report_writing_events():
    """App. F.7 counts report-writing events: a scratch file or a bare mkdir is not one."""
    stats = process_stats(trajectory("sxsxsw"))
    assert stats.report_writes == 1 and stats.write_blocks == 1
    assert stats.first_write_pct == 100.0 and stats.searches_after_write_pct == 0.0
    assert stats.phase_counts["write"] == 3  # still write-phase calls
    from omnidr.trajectory._phases import writes_report

    shell = lambda command: writes_report("Bash", {"command": command}, "write")  # noqa: E731
    assert not shell('mkdir -p "$OMNIDR_REPORT_DIR/assets"')
    assert shell('mkdir -p "$OMNIDR_REPORT_DIR" && cat > "$OMNIDR_REPORT_DIR/data.js" <<EOF')
    assert shell("cp /input/contract/template.html /output/report/index.html")
    assert not shell("cat > /tmp/work/draft.json <<EOF")
    assert writes_report("apply_patch", {"input": "*** Begin Patch\n*** Add File: /output/report/data.js\n+x"}, "write")
    assert writes_report("write_report", {"data": {}}, "write")


def test_repeated_failure_loops():
    stats = process_stats(trajectory("rrrrsr", failing={0, 1, 2, 3}, same_args=True))
    assert stats.tool_errors == 4
    assert len(stats.failure_loops) == 1 and stats.failure_loops[0].repeats == 4
    assert stats.failure_loops[0].first_action == 1
    # different arguments each time: not a loop
    assert process_stats(trajectory("rrrr", failing={0, 1, 2, 3})).failure_loops == []
    # two failures only: not a loop
    assert process_stats(trajectory("rrs", failing={0, 1}, same_args=True)).failure_loops == []


def test_openclaw_fixture_statistics(fixtures: Path):
    stats = process_stats(parse_native_log(fixtures / "openclaw-session.jsonl"))
    # events: system, user, video search write read read read search write, final answer (11)
    assert stats.tool_calls == 8 and stats.tool_errors == 3 and stats.events == 11 and stats.report_writes == 2
    assert stats.first_write_pct == 40.0 and stats.last_search_pct == 80.0
    assert stats.searches_after_write_pct == 50.0 and stats.write_blocks == 2
    assert len(stats.failure_loops) == 1 and stats.failure_loops[0].tool == "web_fetch"
    assert stats.wall_time_s == 59.99  # model_change step at 10:00:00.010 to the last answer at 10:01:00
    assert stats.token_source == "harness" and stats.total_tokens == stats.harness_total_tokens


def test_summary_medians_and_rule():
    summary = summarize([process_stats(trajectory(p)) for p in ("swswswsw", "swswswswsw", "ssw")])
    assert summary.trajectories == 3
    assert summary.medians["write_blocks"] == 4.0
    assert summary.interleaved


def test_phase_tables():
    assert phase_of("claude-code", "WebSearch") == "search"
    assert phase_of("claude-code", "Bash", {"command": "ffmpeg -i v.mp4 -vf fps=1 f%03d.png"}) == "video"
    assert phase_of("codex", "shell", {"command": ["bash", "-lc", "cat > /output/report/index.html <<EOF"]}) == "write"
    assert phase_of("codex", "shell", {"command": ["bash", "-lc", "pytest -q"]}) == "verify"
    assert phase_of("codex", "apply_patch", "*** Begin Patch") == "write"
    assert phase_of("openclaw", "web_fetch") == "read"
    assert phase_of("command", "google_search") == "search"  # name keywords for unknown tools
    assert phase_of("command", "extract_frames") == "video"
    assert phase_of("command", "mystery") == "other"
    # words inside a URL are not commands; tool discovery is not a search; running a checker verifies
    assert phase_of("claude-code", "Bash", {"command": "curl -o p.txt 'https://x.org/safety/test-before-touch'"}) == "read"
    assert phase_of("claude-code", "ToolSearch", {"query": "select:WebFetch"}) == "other"
    assert phase_of("codex", "exec_command", {"cmd": "python3 /tmp/work/check.py"}) == "verify"


def test_real_subagent_search_trace(native_logs: Path):
    stats = process_stats(parse_native_log(native_logs / "claude-code/transcript-v2.1.39-subagent-file.jsonl"))
    assert stats.phase_counts["search"] > 0 and stats.first_write_pct is None
    assert stats.subagent_steps == stats.agent_steps


def test_the_statistics_are_of_the_main_trajectory_and_the_merged_view_is_kept_beside_them():
    """App. F.7: "Claude Code main trajectories also omit internal steps executed in isolated subagent contexts".
    The main agent searches, writes, dispatches a subagent that searches three times and fails once, then writes
    twice more; the subagent's steps sit between the main ones."""
    traj = trajectory("swoww", failing={3})
    sub = [AgentStep(index=1, subagent=True, tool_calls=[ToolCall(id=f"s{i}", name="tool_s", arguments={"i": i},
                                                                   phase="search")],
                     observations=[Observation(tool_call_id=f"s{i}", is_error=i == 2)]) for i in range(3)]
    traj.steps = traj.steps[:4] + sub + traj.steps[4:]  # user, s, w, o, [s s s], w, w
    stats = process_stats(traj)
    # main: 6 entries (user + 5 agent steps), events 0..5: user, s, w, o, w, w
    assert (stats.steps, stats.agent_steps, stats.subagent_steps, stats.tool_calls) == (6, 5, 3, 5)
    assert stats.tool_errors == 1  # the main agent's failed write
    assert stats.first_write_pct == 40.0 and stats.last_search_pct == 20.0  # events 2 and 1 of 0..5
    assert stats.searches_after_write_pct == 0.0 and stats.write_blocks == 2  # w | ww: the dispatch splits them
    # the merged view: 9 entries, 8 calls, 2 failures; merged, the last search would sit at event 6 of 0..8 (75%)
    assert (stats.steps_with_subagents, stats.tool_calls_with_subagents, stats.tool_errors_with_subagents) == (9, 8, 2)
    medians = summarize([stats]).medians
    assert (medians["steps"], medians["steps_with_subagents"], medians["tool_calls_with_subagents"]) == (6, 9, 8)
