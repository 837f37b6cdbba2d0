"""The official VideoOdyssey accuracy (the authors' `scripts/test_acc.py` rules) on a small hand-made result file:
a prediction that is not exactly one of A-D is skipped, not counted wrong; a question counts in each of its types;
the duration and certificate-length bins have the scorer's edges."""

from omnidr.benchmark import certificate_bin, duration_bin
from omnidr.pipeline._videoodyssey import official_accuracy


def _q(qid, answer, predicted, types, ref, audio=None):
    q = {"question_id": qid, "answer": answer, "predicted_answer": predicted, "question_type": types,
         "time_reference": ref}
    if audio is not None:
        q["audio_type"] = audio
    return q


def test_bins_have_the_scorers_edges():
    assert [duration_bin(m) for m in (59.99, 60, 89.99, 90, 179.9, 180, 269.99, 270)] == [
        "Other/Short", "[60, 90)", "[60, 90)", "[90, 120)", "[120, 180)", "[180, 270)", "[180, 270)", "Other/Short"]
    # whole seconds of the span, in minutes: 29 s < 0.5 min, 30 s is 0.5 min; an unreadable reference is 0 min
    assert certificate_bin("00:01:00-00:01:29") == "[0, 0.5)"
    assert certificate_bin("00:01:00-00:01:30") == "[0.5, 3)"
    assert certificate_bin("00:00:00-01:00:00") == "[60, inf)"
    assert certificate_bin("soon") == "[0, 0.5)"


def test_invalid_predictions_leave_the_denominator_and_multi_label_questions_count_twice():
    result = [
        {"video_id": "v1", "video_category": "TV", "duration_minutes": 61.3, "questions": [
            _q("v1_1", "A", "A", ["Counting"], "00:05:43-00:05:47", ["Sound"]),  # right
            _q("v1_2", "B", "C", ["Counting", "Temporal"], "00:00:00-00:20:00", ["Speech"]),  # wrong, two types
            _q("v1_3", "C", "API_Error", ["Counting"], "00:01:00-00:02:00", ["Speech"]),  # invalid: skipped
        ]},
        {"video_id": "v2", "video_category": "Sports", "duration_minutes": 190.15, "questions": [
            _q("v2_1", "D", "D", ["Temporal"], "00:10:00-00:13:00", ["Music"]),  # right
            _q("v2_2", "A", "A.", ["Temporal"], "00:10:00-00:13:00", ["Music"]),  # invalid: not exactly a letter
            _q("v2_3", "B", "b", ["Temporal"], "00:10:00-00:13:00"),  # lower case is read as B: right; no audio type
        ]},
    ]
    acc = official_accuracy(result)
    # 6 questions, 2 invalid; of the 4 valid, 3 right -> 75%
    assert (acc.overall.correct, acc.overall.total, acc.invalid) == (3, 4, 2)
    assert acc.overall.accuracy == 75.0
    table = {name: {label: (t.correct, t.total) for label, t in groups.items()} for name, groups in acc.breakdowns.items()}
    assert table["video_category"] == {"TV": (1, 2), "Sports": (2, 2)}
    assert table["question_type"] == {"Counting": (1, 2), "Temporal": (2, 3)}  # v1_2 counts in both
    assert table["audio_type"] == {"Sound": (1, 1), "Speech": (0, 1), "Music": (1, 1), "Unknown": (1, 1)}
    assert table["duration"] == {"[60, 90) min": (1, 2), "[180, 270) min": (2, 2)}
    assert table["certificate_length"] == {"[0, 0.5) min": (1, 1), "[15, 60) min": (0, 1), "[3, 15) min": (2, 2)}


def test_without_any_audio_type_there_is_no_audio_breakdown():
    result = [{"video_id": "v", "video_category": "TV", "duration_minutes": 70, "questions": [
        _q("v_1", "A", "A", ["Counting"], "00:00:01-00:00:02")]}]
    assert "audio_type" not in official_accuracy(result).breakdowns
