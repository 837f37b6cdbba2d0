"""The answer judge (paper 002, App. C.4) against a fake OpenAI-compatible server on loopback (the real `openai`
client; only the server is fake): a wrong number and a right answer are judged by the model, a refusal and an
empty answer by the hard rules without a call; a cached verdict is not asked again; an outage gives no verdict."""

import asyncio
import json

import pytest
from fake_answer_judge import FakeAnswerJudge

pytestmark = pytest.mark.network

KEY_ENV = "OMNIDR_TEST_JUDGE_KEY"
Q = "How long is the main span of the bridge in the video?"
REF = "1,280 m"


@pytest.fixture
def server():
    fake = FakeAnswerJudge().start()
    yield fake
    fake.stop()


@pytest.fixture
def settings(server, monkeypatch):
    from omnidr.evaluation import JudgeSettings

    monkeypatch.setenv(KEY_ENV, "sk-test-judge")
    return JudgeSettings(base_url=server.url, model="fake-answer-judge", api_key_env=KEY_ENV, timeout_s=2.0,
                         backoff_s=0.0, max_attempts=3, concurrency=2)


def _judge(settings, candidates, cache=None, error=None):
    from omnidr.evaluation import AnswerRequest, OpenAIAnswerJudge

    async def go():
        judge = OpenAIAnswerJudge(settings, cache)
        try:
            return await asyncio.gather(*(judge.judge(AnswerRequest(Q, REF, c, error)) for c in candidates))
        finally:
            await judge.aclose()

    return asyncio.run(go())


def test_the_judge_decides_every_answer_but_an_empty_one(settings, server):
    """App. C.4: the judge receives the question, the reference, the candidate and the execution status, and
    decides; refusals and insufficient evidence are incorrect by its rules. Only an empty answer costs no call."""
    wrong, right, refusal, hedged, empty = _judge(settings, [
        "The main span is 1,300 m long.", "Its main span measures 1,280 m.",
        "There is insufficient evidence to determine the span.",
        "Its main span measures 1,280 m; the date of the last survey could not be verified.", "   "])
    assert wrong.verdict is not None and wrong.verdict.correct is False and not wrong.hard_rule and wrong.calls == 1
    assert right.verdict is not None and right.verdict.correct is True and right.verdict.confidence == 0.9
    # the refusal is incorrect by the judge's decision, not by a pattern before it
    assert refusal.verdict is not None and not refusal.verdict.correct and not refusal.hard_rule and refusal.calls == 1
    # a right answer with a hedge about something else: a pattern would have failed it; the judge reads it right
    assert hedged.verdict is not None and hedged.verdict.correct is True and not hedged.hard_rule
    assert empty.verdict is not None and not empty.verdict.correct and empty.hard_rule and "empty" in empty.verdict.reason
    assert empty.calls == 0 and server.calls == 4  # every answer but the empty one reached the judge
    body = server.requests[0]["body"]
    assert server.requests[0]["auth"] == "Bearer sk-test-judge"
    assert body["temperature"] == 0 and body["model"] == "fake-answer-judge"
    assert body["response_format"]["type"] == "json_schema"
    assert set(body["response_format"]["json_schema"]["schema"]["required"]) == {"correct", "confidence", "reason"}
    given = json.loads(body["messages"][1]["content"])
    assert given["question"] == Q and given["reference_answer"] == REF
    assert given["execution_status"] == {"execution_error": None}
    system = body["messages"][0]["content"]
    assert "Do not answer the question yourself" in system and "list" in system and "(empty)" in system


def test_a_failed_execution_goes_to_the_judge_with_its_status_and_is_judged_incorrect(settings, server):
    [judged] = _judge(settings, ["Its main span measures 1,280 m."], error="the agent exited 137")
    assert judged.verdict is not None and not judged.verdict.correct and not judged.hard_rule and server.calls == 1
    given = json.loads(server.requests[0]["body"]["messages"][1]["content"])
    assert given["execution_status"] == {"execution_error": "the agent exited 137"}
    [nothing] = _judge(settings, [""], error="the agent exited 137")  # nothing to judge: no call
    assert nothing.hard_rule and "137" in nothing.verdict.reason and server.calls == 1


def test_the_offline_baseline_reads_refusals_by_pattern():
    from omnidr.evaluation import baseline_answer_verdict

    assert not baseline_answer_verdict(Q, REF, "There is insufficient evidence to determine the span.").correct
    assert not baseline_answer_verdict(Q, REF, "Its main span measures 1,280 m.", "the agent exited 137").correct
    assert baseline_answer_verdict(Q, REF, "Its main span measures 1,280 m.").correct


def test_an_absent_answer_is_shown_to_the_judge_as_empty():
    from omnidr.evaluation._answer_prompt import answer_input

    assert json.loads(answer_input(Q, REF, "", None))["candidate_answer"] == "(empty)"


def test_a_json_object_inside_plain_text_is_read(settings, server):
    server.mode = "plain"
    [judged] = _judge(settings, ["Its main span measures 1,280 m."])
    assert judged.verdict is not None and judged.verdict.correct and judged.calls == 1


def test_a_cached_verdict_is_not_asked_again_but_a_changed_answer_is(settings, server, tmp_path):
    from omnidr.evaluation import JudgeCache

    cache = JudgeCache(tmp_path / "cache")
    first = _judge(settings, ["The main span is 1,300 m long.", "Its main span measures 1,280 m."], cache)
    assert server.calls == 2 and not any(j.cached for j in first)
    server.reset()
    again = _judge(settings, ["The main span is 1,300 m long.", "Its main span measures 1,280 m."], cache)
    assert server.calls == 0 and all(j.cached and j.calls == 0 for j in again)
    assert [j.verdict for j in again] == [j.verdict for j in first]
    _judge(settings, ["The main span is 1,280 metres."], cache)
    assert server.calls == 1


def test_an_outage_gives_no_verdict_and_says_why(settings, server, tmp_path):
    from omnidr.evaluation import JudgeCache

    server.mode = "503"
    [judged] = _judge(settings, ["Its main span measures 1,280 m."], JudgeCache(tmp_path / "cache"))
    assert judged.verdict is None and "503" in (judged.error or "") and judged.calls == 3  # retried, then given up
    assert judged.usage().failed_votes == 1
    assert not any((tmp_path / "cache").rglob("*.json"))  # nothing cached: it will be asked again


@pytest.mark.parametrize("content, problem", [
    ('{"correct": "maybe", "confidence": 0.5, "reason": "x"}', "true or false"),
    ('{"correct": true, "confidence": 7, "reason": "x"}', "from 0 to 1"),
    ("I would say it is correct.", "no JSON object"),
])
def test_unusable_replies_are_refused(content, problem):
    from omnidr.evaluation._answer_prompt import parse_answer_verdict
    from omnidr.evaluation._judge import AnswerError

    with pytest.raises(AnswerError, match=problem):
        parse_answer_verdict(content)


def test_the_offline_baseline_says_what_it_is():
    from omnidr.evaluation import AnswerRequest, BaselineAnswerJudge

    judge = BaselineAnswerJudge()
    assert judge.identity.label == "offline-baseline: normalised exact and numeric match"
    judged = asyncio.run(judge.judge(AnswerRequest(Q, REF, "The main span is 1280 m.")))
    assert judged.verdict is not None and judged.verdict.correct and judged.verdict.reason.startswith("[offline baseline]")
