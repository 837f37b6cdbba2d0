"""OpenDS-World's context compaction (paper 002, App. C.2.2, C.2.1) as the reference agent applies it before each
model request of a short-answer task: a pure function over the chat messages."""

import copy
import json

from sandbox.models import Compaction
from sandbox.reference_agent._compaction import compact_messages

PAPER = Compaction()  # 4 observations whole, 2,000 characters, 2 search results, 250 images


def _call(call_id: str, name: str) -> dict:
    return {"role": "assistant", "content": "", "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}]}


def _conversation(observations: list[tuple[str, object]]) -> list[dict]:
    """A system and user message, then one tool call and its observation for each (tool name, result)."""
    out: list[dict] = [{"role": "system", "content": "Research."}, {"role": "user", "content": "Which river?"}]
    for n, (name, result) in enumerate(observations):
        out.append(_call(f"c{n}", name))
        out.append({"role": "tool", "tool_call_id": f"c{n}",
                    "content": result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)})
    return out


def _observations(messages: list[dict]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "tool"]


def _search(n: int) -> dict:
    return {"query": "bridge", "backend": "offline index",
            "results": [{"url": f"https://r{i}.example/", "title": f"result {i}", "kind": "web"} for i in range(n)]}


def test_the_four_most_recent_observations_stay_whole_and_older_text_is_cut_to_2000_characters():
    page = "x" * 5000
    messages = _conversation([("fetch_url", {"url": "https://a.example/", "status": 200, "text": page})] * 6)
    compacted = compact_messages(messages, PAPER)

    seen = [json.loads(text) for text in _observations(compacted)]
    assert [len(o["text"]) for o in seen[2:]] == [5000] * 4  # the four most recent: whole
    for older in seen[:2]:
        assert older["text"].startswith("x" * 2000) and not older["text"].startswith("x" * 2001)
        assert "3000 more characters cut" in older["text"]
        assert (older["url"], older["status"]) == ("https://a.example/", 200)  # other fields unaffected
    assert compacted[:2] == messages[:2] and [m for m in compacted if m["role"] == "assistant"] == [
        m for m in messages if m["role"] == "assistant"]


def test_older_search_results_keep_their_first_two_entries():
    messages = _conversation([("search_web", _search(8))] * 5 + [("fetch_url", {"text": "short"})])
    seen = [json.loads(text) for text in _observations(compact_messages(messages, PAPER))]
    assert [len(o["results"]) for o in seen[:5]] == [2, 2, 8, 8, 8]
    assert seen[0]["results"] == _search(8)["results"][:2] and seen[0]["query"] == "bridge"


def test_a_result_list_of_another_tool_is_no_search_result():
    messages = _conversation([("read_artifact", {"results": list(range(10))})] + [("fetch_url", {"text": "t"})] * 4)
    assert json.loads(_observations(compact_messages(messages, PAPER))[0])["results"] == list(range(10))


def test_plain_text_observations_are_cut_too_and_nothing_changes_below_the_limits():
    messages = _conversation([("fetch_url", "y" * 2500)] + [("fetch_url", "z")] * 4)
    first = _observations(compact_messages(messages, PAPER))[0]
    assert first.startswith("y" * 2000) and "500 more characters cut" in first
    short = _conversation([("search_web", _search(2))] * 7)
    assert compact_messages(short, PAPER) == short


def test_images_over_the_limit_become_omission_markers_oldest_first():
    def frames(first: int) -> dict:
        return {"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{first + i}"}} for i in range(2)]}

    messages = [{"role": "user", "content": "Which river?"}, frames(0), frames(2), frames(4)]
    compacted = compact_messages(messages, Compaction(image_limit=3))
    parts = [p for m in compacted[1:] for p in m["content"]]
    kept = [p["image_url"]["url"][-1] for p in parts if p["type"] == "image_url"]
    assert kept == ["3", "4", "5"]  # the three most recent images
    markers = [p for p in parts if p["type"] == "text"]
    assert len(markers) == 3 and all("image omitted" in p["text"] for p in markers)
    assert compact_messages(messages, Compaction(image_limit=6)) == messages


def test_compaction_is_pure_and_deterministic():
    messages = _conversation([("search_web", _search(5))] * 3 + [("fetch_url", {"text": "w" * 3000})] * 4)
    before = copy.deepcopy(messages)
    settings = Compaction(keep_observations=2, truncate_chars=100, search_results_kept=1)
    once = compact_messages(messages, settings)
    assert messages == before  # the agent's own conversation is untouched
    assert compact_messages(messages, settings) == once
    seen = [json.loads(text) for text in _observations(once)]
    assert [len(o.get("results", [])) for o in seen[:3]] == [1, 1, 1]
    assert [len(o["text"]) == 3000 for o in seen[3:]] == [False, False, True, True]
