"""The VideoOdyssey authors' answer extraction (`official_letter`), beside our stricter `read_option`: the same
replies, read by the runner's rules in their order."""

import pytest

from omnidr.evaluation import official_letter, parse_option

OPTIONS = ["3", "5", "4", "6"]


@pytest.mark.parametrize(("reply", "official", "ours"), [
    ("B", "B", "B"),
    ('```json\n{"predicted_answer": "C", "answer": "A"}\n```', "C", None),  # the fence is read; predicted_answer first
    ('{"answer": "d) six"}', "D", None),  # then `answer`
    ("Reasoning... predicted_answer = 'b'", "B", None),  # the `answer: X` / `= X` rule, any case
    ("I think it is C.", "C", None),  # the first standalone letter of the upper-cased text
    ("a red square appears", "A", None),  # the article reads as A, upper-cased: the runner is not strict
    ("I don't know", "D", None),  # no standalone letter: the first A-D character anywhere (the D of DON'T)
    ("", "Error", None),  # empty: Error
    ("xyz", "Error", None),  # no A-D at all: Error
    (None, "API_Error", None),  # no reply: the request failed
])
def test_the_runners_rules_read_each_reply_in_order(reply, official, ours):
    assert official_letter(reply) == official
    if reply is not None:
        assert parse_option(reply, OPTIONS) == ours
