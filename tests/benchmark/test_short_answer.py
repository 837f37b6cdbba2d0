"""The short-answer task model (OpenDS-World, paper 002): labels from its taxonomy, one reference answer."""

import pytest
from pydantic import ValidationError

from omnidr.benchmark._short_answer import FORMAT_CATEGORIES, AccessType, ShortAnswerTask, format_category
from sandbox.models import ANSWER_FILE, AnswerFile

VIDEO = {"url": "https://example.org/v", "file": "video.mp4", "sha256": "0" * 64, "duration_s": 95.0}
TASK = {"id": "bridge-span", "question": "How long is the main span?", "answer": "1,280 m", "video": VIDEO,
        "domain": "technology", "modalities": ["text", "image"], "formats": ["html", "pdf", "csv", "xlsx"],
        "access_types": ["hypermedia_transitions", "parameterized_updates", "artifact_transfer"]}


def test_a_task_reads_and_reports_its_formats_by_the_papers_categories():
    task = ShortAnswerTask.model_validate(TASK)
    assert task.format_categories == ["html", "pdf", "csv", "other"]
    assert AccessType.parameterized_updates in task.access_types
    assert len(AccessType) == 7 and len(FORMAT_CATEGORIES) == 8
    assert format_category("JPEG") == "jpg" and format_category("mp3") == "mp3"


@pytest.mark.parametrize("change, where", [
    ({"domain": "sports"}, "domain"),
    ({"access_types": ["observation", "telepathy"]}, "access_types"),
    ({"modalities": []}, "modalities"),
    ({"answer": "  "}, "answer"),
    ({"formats": ["pdf", "pdf"]}, "formats"),
    ({"formats": [".PDF"]}, "formats"),
    ({"answers": ["a", "b"]}, "answers"),
])
def test_labels_outside_the_taxonomy_and_blank_or_several_answers_are_refused(change, where):
    with pytest.raises(ValidationError) as caught:
        ShortAnswerTask.model_validate({**TASK, **change})
    assert where in str(caught.value)


def test_the_answer_file_says_how_research_ended_and_which_stage_answered():
    done = AnswerFile(answer="1,280 m", termination="budget_exhausted", source="finalization")
    assert done.has_answer and ANSWER_FILE == "answer.json"
    assert not AnswerFile(answer=" ", termination="context_overflow", source="none").has_answer
    with pytest.raises(ValidationError):
        AnswerFile(answer="x", termination="gave_up", source="research")
