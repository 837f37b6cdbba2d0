"""The short-answer judge's hard rules (paper 002, App. C.4) and its offline baseline."""

import pytest

from omnidr.evaluation._answer_baseline import AnswerVerdict, baseline_answer_verdict, hard_rule

Q = "In which year did the bridge shown in the video open, and how long is its main span?"
REF = "It opened in 1937; the main span is 1,280 m."


@pytest.mark.parametrize("candidate, error, why", [
    ("", None, "empty"),
    ("   ", None, "empty"),
    ("There is insufficient evidence to determine the year.", None, "insufficient"),
    ("I cannot determine the answer from the sources.", None, "refusal"),
    ("It opened in 1937; the main span is 1,280 m.", "the agent exited 137", "execution failed"),
])
def test_refusals_empty_answers_and_failed_executions_are_incorrect(candidate, error, why):
    verdict = baseline_answer_verdict(Q, REF, candidate, error)
    assert verdict.correct is False and verdict.confidence == 1.0
    assert why in verdict.reason
    assert hard_rule(candidate, error) == verdict  # the same rule the model judge's answers are held to


def test_the_same_answer_with_other_spacing_and_case_is_correct():
    assert baseline_answer_verdict(Q, "Golden Gate Bridge", "  golden gate bridge. ").correct


def test_a_wrong_number_is_incorrect_and_named():
    verdict = baseline_answer_verdict(Q, REF, "The bridge opened in 1936 and its main span is 1,280 m.")
    assert not verdict.correct and "1937" in verdict.reason


def test_numbers_in_other_notations_still_match():
    verdict = baseline_answer_verdict(Q, REF, "Opened 1937. Main span: 1280 m.")
    assert verdict.correct, verdict.reason


def test_a_missing_entity_is_incorrect():
    verdict = baseline_answer_verdict("Who designed it?", "Joseph Strauss", "It was designed by Charles Ellis.")
    assert not verdict.correct and "strauss" in verdict.reason


def test_an_answer_hedging_between_numbers_is_not_accepted():
    verdict = baseline_answer_verdict("Which year?", "1937", "Either 1937 or 1938.")
    assert not verdict.correct


def test_the_verdict_is_the_papers_json_shape():
    verdict = baseline_answer_verdict(Q, REF, REF)
    assert set(AnswerVerdict.model_json_schema()["properties"]) == {"correct", "confidence", "reason"}
    assert AnswerVerdict.model_validate_json(verdict.model_dump_json()) == verdict


def test_a_word_that_merely_sounds_negative_is_no_refusal():
    assert baseline_answer_verdict("Whose tomb?", "The Tomb of the Unknown Soldier", "the tomb of the unknown soldier").correct
