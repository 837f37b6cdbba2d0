"""The multiple-choice leaderboard (paper 004) on hand-made questions and outcomes with known answers: accuracy by
CCL bin (bins from the windows, in CCL_BINS order), the other breakdowns (a V question has no audio type), the
chance level, unparseable answers, and leave-one-video-out accuracy with its maximum change computed by hand."""

import pytest

from omnidr.benchmark import McqTask, McqVideo
from omnidr.scoring import (
    AnswerOutcome,
    AnswerSystem,
    ScoringInputError,
    SystemKey,
    answer_grids,
    build_answer_leaderboard,
)

CHECKER = "mcq-exact-match:option-letter-parser-1:no-prompt"
OPTIONS = ["one", "two", "three", "four"]


def _q(task_id, video, window, subset="V", audio=None, task_type="counting", dimension="perception"):
    return McqTask(id=task_id, video=video, subset=subset, question="?", options=OPTIONS, answer="A",
                   task_type=task_type, dimension=dimension, audio_type=audio,
                   ccl={"start_s": window[0], "end_s": window[1]})


def _video(vid, domain):
    return McqVideo(id=vid, url="https://example.org/v", file=f"{vid}.mp4", sha256="0" * 64, duration_s=5000.0,
                    domain=domain, subcategory="misc")


VIDEOS = {"v1": _video("v1", "sports"), "v2": _video("v2", "travel"), "v3": _video("v3", "sports")}
TASKS = [
    _q("q1", "v1", (0, 10)),                                  # 0.17 min  -> [0, 0.5)
    _q("q2", "v1", (0, 120), subset="AV", audio="speech"),    # 2 min     -> [0.5, 3)
    _q("q3", "v2", (0, 600), task_type="ordering"),           # 10 min    -> [3, 15)
    _q("q4", "v2", (60, 1860), subset="AV", audio="music"),   # 30 min    -> [15, 60)
    _q("q5", "v3", (0, 3700), dimension="summarization"),     # 61.7 min  -> [60, inf)
    _q("q6", "v3", (0, 20)),                                  # 0.33 min  -> [0, 0.5)
]


def _system(model, right, unparseable=()):
    return AnswerSystem(system=SystemKey(model=model, harness="direct"), outcomes=[
        AnswerOutcome(task_id=t.id, correct=t.id in right, answered=True, judge=CHECKER, unparseable=t.id in unparseable)
        for t in TASKS])


def _groups(row, name):
    return {g.group: (g.tasks, g.correct, g.accuracy) for g in row.breakdowns[name]}


def test_accuracy_by_ccl_bin_and_the_other_breakdowns():
    board = build_answer_leaderboard([_system("m", {"q1", "q3", "q5"}, unparseable={"q4"})], TASKS, videos=VIDEOS)
    assert board.task_kind == "mcq" and board.chance_accuracy == 25.0
    (row,) = board.rows
    assert row.accuracy == 50.0 and row.unparseable == 1
    assert _groups(row, "ccl_bin") == {"[0, 0.5)": (2, 1, 50.0), "[0.5, 3)": (1, 0, 0.0), "[3, 15)": (1, 1, 100.0),
                                       "[15, 60)": (1, 0, 0.0), "[60, inf)": (1, 1, 100.0)}
    assert [g.group for g in row.breakdowns["ccl_bin"]] == ["[0, 0.5)", "[0.5, 3)", "[3, 15)", "[15, 60)", "[60, inf)"]
    assert _groups(row, "subset") == {"V": (4, 3, 75.0), "AV": (2, 0, 0.0)}
    assert _groups(row, "audio_type") == {"speech": (1, 0, 0.0), "sound": (0, 0, None), "music": (1, 0, 0.0)}
    assert _groups(row, "domain") == {"sports": (4, 2, 50.0), "travel": (2, 1, 50.0)}
    assert _groups(row, "task_type") == {"counting": (5, 2, 40.0), "ordering": (1, 1, 100.0)}
    assert _groups(row, "dimension")["summarization"] == (1, 1, 100.0)
    grids = answer_grids(board)
    assert list(grids) == ["leaderboard", "subsets", "official_breakdowns", "by_subset", "by_task_type", "by_dimension", "by_domain",
                           "by_audio_type", "by_duration", "by_ccl_bin", "lovo"]
    # every video is 5000 s (83.3 min): the authors' [60, 90) bin
    assert _groups(row, "duration") == {"[60, 90)": (6, 3, 50.0), "[90, 120)": (0, 0, None),
                                        "[120, 180)": (0, 0, None), "[180, 270)": (0, 0, None),
                                        "Other/Short": (0, 0, None)}
    assert "chance 25%" in grids["leaderboard"].title and grids["leaderboard"].rows[0][6] == "1"  # unparseable
    assert "terminations" not in grids and "tool_use" not in grids


def test_leave_one_video_out_accuracy_and_its_maximum_change():
    # right on q1, q2 (v1), q3 (v2): overall 3/6 = 50%.
    # without v1: q3..q6 -> 1/4 = 25% (-25 pp); without v2: q1, q2, q5, q6 -> 2/4 = 50% (0); without v3: 3/4 = 75% (+25)
    board = build_answer_leaderboard([_system("m", {"q1", "q2", "q3"})], TASKS, videos=VIDEOS)
    lovo = board.rows[0].lovo
    assert [(h.video, h.questions, h.accuracy, h.change) for h in lovo.holdouts] == [
        ("v1", 2, 25.0, -25.0), ("v2", 2, 50.0, 0.0), ("v3", 2, 75.0, 25.0)]
    assert lovo.max_abs_change == 25.0 and lovo.min_accuracy == 25.0 and lovo.max_accuracy == 75.0
    assert lovo.max_change_video == "v1"  # the first of the ties, in video order
    assert answer_grids(board)["lovo"].rows == [["m / direct", "3", "50.0", "25.0 - 75.0", "25.0", "v1"]]


def test_a_question_whose_video_is_not_given_is_refused():
    with pytest.raises(ScoringInputError, match="v3"):
        build_answer_leaderboard([_system("m", set())], TASKS, videos={k: VIDEOS[k] for k in ("v1", "v2")})


def test_a_short_answer_board_dumps_as_before():
    from omnidr.benchmark import ShortAnswerTask

    task = ShortAnswerTask(id="t1", question="?", answer="42", video={"url": "https://e.org", "file": "v.mp4",
                                                                      "sha256": "0" * 64, "duration_s": 60.0},
                           domain="nature", modalities=["text"], formats=["html"], access_types=["observation"])
    system = AnswerSystem(system=SystemKey(model="m", harness="reference"),
                          outcomes=[AnswerOutcome(task_id="t1", correct=True, answered=True)])
    dumped = build_answer_leaderboard([system], [task]).model_dump(mode="json")
    assert not {"task_kind", "chance_accuracy"} & set(dumped)
    assert not {"unparseable", "lovo"} & set(dumped["rows"][0])


def test_per_subset_accuracy_beside_the_official_scorers_which_skips_what_it_cannot_read():
    """V is q1, q3, q5, q6; AV is q2, q4 (every answer key is A). Ours: right on q1 only, q3 unparseable. The
    authors' runner reads q1 A, q3 A (where our checker read nothing), q5 C, q6 nothing (Error), q2 B, q4 A."""
    official = {"q1": "A", "q3": "A", "q5": "C", "q6": "Error", "q2": "B", "q4": "A"}
    system = AnswerSystem(system=SystemKey(model="m", harness="direct"), outcomes=[
        AnswerOutcome(task_id=t.id, correct=t.id == "q1", answered=True, judge=CHECKER, unparseable=t.id == "q3",
                      official=official[t.id]) for t in TASKS])
    (row,) = build_answer_leaderboard([system], TASKS, videos=VIDEOS).rows
    v, av = row.subsets
    # V: ours 1/4 = 25%; official: q1, q3, q5 valid, q1 and q3 right -> 2/3 = 66.7%, one invalid (q6)
    assert (v.subset, v.questions, v.correct, v.accuracy, v.unparseable) == ("V", 4, 1, 25.0, 1)
    assert (v.official_valid, v.official_correct, v.official_invalid) == (3, 2, 1)
    assert v.official_accuracy == pytest.approx(200 / 3)
    # AV: ours 0/2; official: q2 B (wrong), q4 A (right) -> 1/2 = 50%, none invalid
    assert (av.subset, av.questions, av.correct, av.accuracy, av.official_valid, av.official_correct,
            av.official_invalid, av.official_accuracy) == ("AV", 2, 0, 0.0, 2, 1, 0, 50.0)
    assert 0.0 <= v.accuracy_ci_low <= 25.0 <= v.accuracy_ci_high <= 100.0
    # the scorer's breakdowns over the valid predictions (V: q1 A right, q3 A right, q5 C wrong; AV: q2 B wrong,
    # q4 A right); labels from our own where the snapshot was not imported from the release
    table = {name: {g.group: (g.correct, g.tasks) for g in groups} for name, groups in v.official_breakdowns.items()}
    assert table == {"video_category": {"sports": (1, 2), "travel": (1, 1)},
                     "question_type": {"counting": (1, 2), "ordering": (1, 1)},
                     "duration": {"[60, 90) min": (2, 3)},
                     "certificate_length": {"[0, 0.5) min": (1, 1), "[3, 15) min": (1, 1), "[60, inf) min": (0, 1)}}
    assert {g.group: (g.correct, g.tasks) for g in av.official_breakdowns["audio_type"]} == {
        "speech": (0, 1), "music": (1, 1)}
    grid = answer_grids(build_answer_leaderboard([system], TASKS, videos=VIDEOS))["subsets"]
    assert [r[:3] + r[5:] for r in grid.rows] == [["m / direct", "V", "4", "1", "66.7", "2/3", "1"],
                                                 ["m / direct", "AV", "2", "0", "50.0", "1/2", "0"]]


def test_an_evaluation_without_the_official_reading_leaves_the_official_columns_empty():
    (row,) = build_answer_leaderboard([_system("m", {"q1"})], TASKS, videos=VIDEOS).rows
    assert all(s.official_accuracy is None and s.official_invalid is None for s in row.subsets)


def test_the_duration_bin_of_an_imported_video_is_the_releases_stated_length():
    from omnidr.benchmark import ReleaseVideoRef

    released = VIDEOS | {"v3": VIDEOS["v3"].model_copy(update={"release": ReleaseVideoRef(
        video_id="V3", video_category="Sports", duration_minutes=190.15)})}
    (row,) = build_answer_leaderboard([_system("m", {"q5"})], TASKS, videos=released).rows
    groups = _groups(row, "duration")
    assert groups["[180, 270)"] == (2, 1, 50.0) and groups["[60, 90)"] == (4, 0, 0.0)
