"""The short-answer leaderboard (paper 002, Sec. 3, App. D, E) on hand-made outcomes with known answers: accuracy
and its interval, breakdowns (a task with two format categories counts in both), tokens and time, terminations,
failed-call latency and tool-category transitions, provisional rows, mixed judges, the paired comparison, and the
tool use measured on a trajectory."""

from datetime import UTC, datetime, timedelta

import pytest

from omnidr.benchmark import ShortAnswerTask
from omnidr.scoring import (
    AnswerOutcome,
    AnswerSystem,
    ScoringInputError,
    SystemKey,
    ToolUse,
    answer_grids,
    answer_markdown,
    build_answer_leaderboard,
    compare_answer_systems,
    tool_category,
    tool_use,
)

VIDEO = {"url": "https://example.org/v", "file": "video.mp4", "sha256": "0" * 64}
JUDGE = "openai-compatible:judge-x:omnidr-answer-judge-1"


def _task(task_id, domain, modalities, formats, access, duration_s):
    return ShortAnswerTask(id=task_id, question=f"Question {task_id}?", answer="42", video={**VIDEO, "duration_s": duration_s},
                           domain=domain, modalities=modalities, formats=formats, access_types=access)


TASKS = [
    _task("t1", "nature", ["text"], ["html", "pdf"], ["observation"], 95.0),
    _task("t2", "nature", ["text", "image"], ["pdf"], ["hypermedia_transitions"], 200.0),
    _task("t3", "history", ["video"], ["csv", "xlsx"], ["artifact_transfer"], 1300.0),
    _task("t4", "science", ["audio"], ["mp3"], ["temporal_indexing"], 700.0),
]

USE_T1 = ToolUse(calls=3, failed_calls=1, timed_calls=3, latency_s=10.0, failed_latency_s=4.0,
                 categories={"search": 2, "read": 1}, transitions={"search->search": 1, "search->read": 1})
USE_T2 = ToolUse(calls=2, failed_calls=0, timed_calls=2, latency_s=6.0, failed_latency_s=0.0,
                 categories={"search": 1, "browse": 1}, transitions={"search->browse": 1})


def _out(task_id, correct, **kw):
    return AnswerOutcome(task_id=task_id, correct=correct, answered=kw.pop("answered", True), judge=JUDGE, **kw)


def _system(model, outcomes):
    return AnswerSystem(system=SystemKey(model=model, harness="reference"), outcomes=outcomes)


A = _system("model-a", [
    _out("t1", True, termination="complete_answer", tokens=1000, elapsed_s=10.0, tool_use=USE_T1),
    _out("t2", True, termination="complete_answer", tokens=2000, elapsed_s=20.0, tool_use=USE_T2),
    _out("t3", True, termination="budget_exhausted", tokens=3000, elapsed_s=30.0),
    _out("t4", False, answered=False, elapsed_s=40.0),
])
B = _system("model-b", [_out("t1", True), _out("t2", False), _out("t3", False), _out("t4", False)])


def _groups(row, name):
    return {g.group: (g.tasks, g.correct, g.accuracy) for g in row.breakdowns[name]}


def test_accuracy_breakdowns_and_process_on_known_outcomes():
    board = build_answer_leaderboard([B, A], TASKS, replicates=500)
    assert [r.label for r in board.rows] == ["model-a / reference", "model-b / reference"]
    a, b = board.rows
    assert (a.rank, a.accuracy, a.correct, a.tasks, a.answered) == (1, 75.0, 3, 4, 3)
    assert (b.rank, b.accuracy) == (2, 25.0)
    assert a.accuracy_ci_low <= 75.0 <= a.accuracy_ci_high and a.accuracy_ci_high <= 100.0 and a.accuracy_ci_low >= 0
    assert board.task_ids == ["t1", "t2", "t3", "t4"] and board.judge == JUDGE

    formats = _groups(a, "format")
    assert list(formats) == ["html", "mp4", "pdf", "mp3", "jpg", "csv", "zip", "other"]  # the paper's order
    assert formats["html"] == (1, 1, 100.0) and formats["pdf"] == (2, 2, 100.0)  # t1 counts under html and pdf
    assert formats["csv"] == (1, 1, 100.0) and formats["other"] == (1, 1, 100.0)  # xlsx is "other"
    assert formats["mp3"] == (1, 0, 0.0) and formats["zip"] == (0, 0, None)
    assert _groups(b, "format")["pdf"] == (2, 1, 50.0)
    assert _groups(a, "domain")["nature"] == (2, 2, 100.0) and _groups(a, "domain")["science"] == (1, 0, 0.0)
    assert _groups(a, "modality")["text"] == (2, 2, 100.0) and _groups(a, "modality")["audio"] == (1, 0, 0.0)
    assert _groups(a, "access_type")["artifact_transfer"] == (1, 1, 100.0) and len(a.breakdowns["access_type"]) == 7
    durations = _groups(a, "duration")
    assert list(durations) == ["<2 min", "2-5 min", "5-10 min", "10-20 min", ">=20 min"]
    assert durations["<2 min"] == (1, 1, 100.0) and durations["10-20 min"] == (1, 0, 0.0)
    assert durations[">=20 min"] == (1, 1, 100.0) and durations["5-10 min"] == (0, 0, None)

    p = a.process
    assert (p.tasks_with_tokens, p.mean_tokens, p.median_tokens) == (3, 2000.0, 2000.0)
    assert (p.tasks_timed, p.mean_elapsed_s, p.median_elapsed_s) == (4, 25.0, 25.0)
    assert p.terminations == {"budget_exhausted": 1, "complete_answer": 2, "unrecorded": 1}
    assert p.budget_exhausted_share == 0.25
    assert (p.traces, p.tool_calls, p.failed_calls, p.failed_call_share) == (2, 5, 1, 0.2)
    assert p.tool_latency_s == 16.0 and p.failed_latency_share == 0.25
    assert p.categories == {"search": 3, "browse": 1, "read": 1}
    assert p.transition_shares == {"search->search": pytest.approx(1 / 3), "search->browse": pytest.approx(1 / 3),
                                   "search->read": pytest.approx(1 / 3)}
    assert b.process.traces == 0 and b.process.failed_latency_share is None and b.process.mean_tokens is None


def test_the_tables_show_the_numbers():
    board = build_answer_leaderboard([A, B], TASKS, replicates=500, with_comparisons=True)
    grids = answer_grids(board)
    assert list(grids) == ["leaderboard", "by_domain", "by_modality", "by_format", "by_access_type", "by_duration",
                           "terminations", "tool_use", "transitions", "paired"]
    top = grids["leaderboard"].rows[0]
    assert top[:3] == ["1", "model-a / reference", "75.0"] and top[3].startswith("[") and top[4:6] == ["3/4", "3"]
    assert ["pdf", "2", "100.0", "50.0"] in grids["by_format"].rows and ["zip", "0", "-", "-"] in grids["by_format"].rows
    assert ["model-a / reference", "search", "33.3%", "33.3%", "33.3%", "0.0%", "0.0%", "0.0%"] in grids["transitions"].rows
    assert grids["paired"].rows[0][:3] == ["model-a / reference", "model-b / reference", "+50.0"]  # A ranks higher
    text = answer_markdown(board)
    assert "| html | 1 | 100.0 | 100.0 |" in text and "25.0%" in text  # budget exhaustion of model-a


def test_a_paired_comparison_of_accuracy():
    c = compare_answer_systems(A, B, replicates=2000)
    assert c.mean_a == 75.0 and c.mean_b == 25.0 and c.mean_difference == 50.0
    assert (c.wins, c.ties, c.losses) == (2, 2, 0)
    assert 0.0 <= c.ci_low <= 50.0 <= c.ci_high <= 100.0
    same = compare_answer_systems(A, _system("model-a2", A.outcomes), replicates=200)
    assert same.mean_difference == 0.0 and same.ci_low == same.ci_high == 0.0


def test_a_missing_outcome_is_incorrect_and_a_pending_one_makes_the_row_provisional():
    pending = _system("model-c", [_out("t1", True), _out("t2", True, incomplete="the judge did not answer"),
                                  _out("t3", True)])
    board = build_answer_leaderboard([A, pending], TASKS, ["t1", "t2", "t3", "t4"], replicates=200)
    c = board.rows[-1]
    assert c.label == "model-c / reference" and c.rank is None and c.incomplete == ["t2"]
    assert c.accuracy == 75.0 and c.process.terminations == {"unrecorded": 4}
    assert board.rows[0].rank == 1
    assert "provisional" in answer_grids(board)["leaderboard"].title


def test_mixed_judges_and_unknown_tasks_are_refused():
    other = _system("model-d", [AnswerOutcome(task_id="t1", correct=True, answered=True, judge="offline-baseline:x:y")])
    with pytest.raises(ScoringInputError, match="different judges"):
        build_answer_leaderboard([A, other], TASKS)
    stray = _system("model-e", [_out("t9", True)])
    with pytest.raises(ScoringInputError, match="t9"):
        build_answer_leaderboard([stray], TASKS)


def test_tool_categories_come_from_one_table():
    assert tool_category("search_web") == "search" and tool_category("browser_click") == "browse"
    assert tool_category("fetch_url") == "read" and tool_category("read_artifact") == "read"
    assert tool_category("download_file") == "download" and tool_category("download_media") == "download"
    assert tool_category("sample_video") == "video"
    assert tool_category("read_subtitles") == "video" and tool_category("TodoWrite") == "other"
    assert tool_category("Bash", "browser open") == "browse"
    assert tool_category("Bash", None, {"command": "omnidr-skill artifact read /output/artifacts/a.pdf"}) == "read"
    assert tool_category("Bash", None, {"command": "ls -la"}) == "other"


def test_tool_use_of_a_trajectory():
    from omnidr.trajectory import AgentStep, Observation, ToolCall, Trajectory

    t0 = datetime(2026, 3, 1, tzinfo=UTC)

    def at(s):
        return t0 + timedelta(seconds=s)

    steps = [
        AgentStep(index=1, timestamp=at(0), tool_calls=[ToolCall(id="a", name="search_web"),
                                                        ToolCall(id="b", name="fetch_url")],
                  observations=[Observation(tool_call_id="a", timestamp=at(2)),
                                Observation(tool_call_id="b", is_error=True, timestamp=at(7))]),
        AgentStep(index=2, timestamp=at(8), tool_calls=[ToolCall(id="c", name="Bash", skill="download get")],
                  observations=[Observation(tool_call_id="c", timestamp=at(11))]),
        AgentStep(index=3, timestamp=None, tool_calls=[ToolCall(id="d", name="sample_video")],
                  observations=[Observation(tool_call_id="d", is_error=True, timestamp=at(20))]),
    ]
    use = tool_use(Trajectory(harness="reference", source_format="common", steps=steps))
    assert use.calls == 4 and use.failed_calls == 2 and use.timed_calls == 3  # the last turn has no timestamp
    assert use.latency_s == 10.0 and use.failed_latency_s == 5.0  # 2 s search, 5 s failed fetch, 3 s download
    assert use.categories == {"search": 1, "read": 1, "download": 1, "video": 1}
    assert use.transitions == {"search->read": 1, "read->download": 1, "download->video": 1}


def test_accuracy_by_difficulty_when_the_tasks_carry_it():
    """Paper 002, Sec. 3.2: accuracy by the human-calibrated difficulty group (Low, Medium, High); a release without
    the labels gets no such table."""
    labelled = [t.model_copy(update={"difficulty": d}) for t, d in zip(TASKS, ("low", "low", "medium", "high"),
                                                                        strict=True)]
    board = build_answer_leaderboard([A], labelled, replicates=200)
    groups = {g.group: (g.tasks, g.correct, g.accuracy) for g in board.rows[0].breakdowns["difficulty"]}
    # A: t1, t2 (low) right; t3 (medium) right; t4 (high) wrong
    assert groups == {"low": (2, 2, 100.0), "medium": (1, 1, 100.0), "high": (1, 0, 0.0)}
    assert "by_difficulty" in answer_grids(board)
    assert "by_difficulty" not in answer_grids(build_answer_leaderboard([A], TASKS, replicates=200))
