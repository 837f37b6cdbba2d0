"""Which endings make a score not final: the evaluator's copy of the attempts stage's rule."""

from omnidr.attempts import NOT_COUNTED
from omnidr.evaluation._run import NOT_THE_AGENTS_FAILURE


def test_the_evaluator_and_the_attempts_stage_agree_on_what_is_not_the_agents_failure():
    assert NOT_THE_AGENTS_FAILURE == {r.value for r in NOT_COUNTED}
