"""Multiple-choice answers (task kind `mcq`, paper 004 Sec. 4.1: exact match of the chosen option): the option letter
read from a reply in each common spelling, the refusals (garbage, two letters, the article "A"), and `omnidr score`
on a hand-made run folder whose answers are checked without any judge and recorded right, wrong or unparseable."""

import json

import pytest
from answer_helpers import write_answer_attempt, write_answer_run
from click.testing import CliRunner
from mcq_helpers import OPTIONS, QUESTIONS, write_mcq_snapshot

from omnidr.evaluation import parse_option

QUOTED = ["Three times", "Twice", "Once", "Never"]  # options the article sentence below does not quote


@pytest.mark.parametrize("reply, letter", [
    ("B", "B"), ("(B)", "B"), ("B.", "B"), ("b)", "B"), ("Answer: B", "B"), ("**B**", "B"), ("Option C", "C"),
    ("The answer is B because the second clip shows two circles.", "B"), ("final answer: (c)", "C"),
    ("D. Nothing changes between the two shots.", "D"), ("C The narrator walks off at 12:30.", "C"),
    ("A\nbecause the square is red", "A"), ("A because the square is red", "A"), ("[A]", "A"),
    ("I choose A", "A"), ("The answer is B, not C.", "B"),
    ("two blue circles", "B"), ("I think the narrator leaves.", "C"),
])
def test_each_spelling_of_one_option_is_read(reply, letter):
    assert parse_option(reply, OPTIONS) == letter


@pytest.mark.parametrize("reply", [
    "", "   ", "asdf qwerty", "I don't know", "E", "The answer is E", "A or C", "B/C", "(A) or (C)",
    "Answer: B ... so the answer is C", "It is either two blue circles or nothing changes",
])
def test_garbage_and_two_answers_are_refused(reply):
    assert parse_option(reply, OPTIONS) is None


def test_the_article_a_is_not_option_a():
    assert parse_option("A red square appears three times", QUOTED) == "A"  # it quotes option A's text
    assert parse_option("A red square appears in every shot", QUOTED) is None
    assert parse_option("Answer: A red square appears in every shot", QUOTED) is None
    assert parse_option("The answer is a red square", QUOTED) is None
    assert parse_option("The answer is A", QUOTED) == "A"  # after "answer is", A is the letter


def test_score_checks_each_answer_against_the_key_without_a_judge(tmp_path):
    from omnidr.evaluation import score
    from omnidr.paths import RunPaths

    snapshot = write_mcq_snapshot(tmp_path / "snapshot")
    run = write_answer_run(tmp_path / "run", snapshot, list(QUESTIONS))
    write_answer_attempt(run, "q-count", 1, "success", answer=dict(answer="B", termination="complete_answer",
                                                                    source="research"))
    write_answer_attempt(run, "q-order", 1, "success", answer=dict(answer="The answer is A because the man leaves.",
                                                                    termination="complete_answer", source="research"))
    write_answer_attempt(run, "q-sum", 1, "success", answer=dict(answer="Hmm, hard to say from these frames",
                                                                  termination="complete_answer", source="research"))
    write_answer_attempt(run, "q-when", 1, "agent_error", detail="exit code 3")
    result = CliRunner().invoke(score, [str(run)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "accuracy 25.00% (1/4 correct)" in result.output and "1 unparseable answer(s)" in result.output

    paths = RunPaths(run)
    summary = json.loads(paths.evaluation_summary.read_text("utf-8"))
    assert summary["task_kind"] == "mcq" and summary["judge"]["kind"] == "mcq-exact-match"
    assert summary["judge_usage"]["calls"] == 0
    ev = {t: json.loads(paths.task_evaluation(t).read_text("utf-8")) for t in QUESTIONS}
    assert ev["q-count"]["verdict"] == {"correct": True, "confidence": 1.0, "reason": "chose B; the key is B"}
    assert ev["q-count"]["chosen_option"] == "B" and "unparseable" not in ev["q-count"]
    assert ev["q-order"]["verdict"]["reason"] == "chose A; the key is C" and not ev["q-order"]["verdict"]["correct"]
    assert ev["q-sum"]["unparseable"] is True and not ev["q-sum"]["verdict"]["correct"]
    assert ev["q-sum"]["verdict"]["reason"] == "unparseable: no option letter found"
    assert ev["q-when"]["verdict"]["reason"].startswith("execution failed: no answer file")
    assert "unparseable" not in ev["q-when"]

    from omnidr.evaluation import answer_systems

    _, (system,) = answer_systems([paths.evaluation])
    assert [o.unparseable for o in system.outcomes] == [False, False, True, False]
