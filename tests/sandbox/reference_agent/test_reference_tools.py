"""The reference agent's tools (`ToolBox`), its capability levels and its loop, on the host (no Docker).
The skills the tools call are tested in tests/sandbox/skills, the scripted model in tests/sandbox/scripted_model."""

import json
import shutil
from pathlib import Path

import pytest
from testkit import DEMO, make_mp4

from sandbox.reference_agent._capability import LEVELS, capability
from sandbox.reference_agent._tools import ToolBox, ToolError
from sandbox.scripted_model import answer, load_scripts
from sandbox.skills import _media, _report, _web

PENDANT = DEMO / "tasks" / "pendant-lamp-safety" / "video.mp4"
CONTRACT = DEMO / "contract"


def _page_text(url: str) -> str:
    corpus = {p["url"]: p for p in json.loads((DEMO / "web" / "corpus.json").read_text())["pages"]}
    raw = (DEMO / "web" / corpus[url]["path"]).read_bytes()
    return _web.pdf_to_text(raw) if raw[:5] == b"%PDF-" else _web.html_to_text(raw.decode())[1]


# ---- video tools -----------------------------------------------------------------------------------

@pytest.mark.media
def test_a_long_video_is_read_window_by_window_and_without_subtitles_has_no_transcript(tmp_path):
    video = make_mp4(tmp_path / "long.mp4", seconds=310)
    p = _media.probe_video(str(video))
    assert p["subtitles"] == [] and abs(p["duration_s"] - 310) < 0.5
    box = ToolBox(capability("video"), str(video), tmp_path / "report", CONTRACT)  # no speech endpoint either
    second = box.call("read_window", {"index": 1, "frames": 4})
    assert second["windows"] == 2 and second["start_s"] == 300
    assert all(300 <= f["time_s"] < 310 and (tmp_path / "report" / f["src"]).is_file() for f in second["frames"])
    assert second["transcript_source"] == "none" and second["transcript"] == []
    with pytest.raises(ToolError, match="does not exist"):
        box.call("read_window", {"index": 2, "frames": 4})


# ---- capability levels and the report checks ---------------------------------------------------------

def test_capability_levels_are_cumulative():
    tools = [set(capability(name).tools) for name in LEVELS]
    assert tools[0] == {"write_report", "check_report"}
    assert all(a <= b for a, b in zip(tools, tools[1:], strict=False))
    assert "read_window" in tools[1] and "fetch_url" in tools[2] and "download_media" in tools[3]
    assert capability("full").workflow and not capability("multimodal").workflow
    with pytest.raises(ValueError):
        capability("everything")


def _box(tmp_path: Path, level: str = "full") -> ToolBox:
    video = tmp_path / "video.mp4"
    shutil.copyfile(PENDANT, video)
    return ToolBox(capability(level), str(video), tmp_path / "report", CONTRACT)


@pytest.mark.media
def test_check_report_finds_bad_times_unknown_citations_and_unopened_sources(tmp_path):
    box = _box(tmp_path)
    frames = box.call("read_window", {"index": 0, "frames": 2})["frames"]
    url = "https://www.example-standards.org/safety/test-before-touch"
    box.fetched[url] = {"status": 200, "text": _page_text(url)}
    quote = "Prove the tester on a known live source"
    data = {"title": "t", "language": "en", "query": "q", "overview": "o", "video": {},
            "timeline": [{"id": "T1", "start_s": 0, "end_s": 36, "title": "all", "note": "n",
                          "media": [{"type": "image", "src": frames[0]["src"]}]}],
            "anchors": [{"id": "A1", "time_s": 6, "label": "test", "goal": "verify"}],
            "findings": [{"id": "F1", "title": "f", "anchor_ids": ["A1"], "claims": [
                {"text": "c", "citations": ["S1"], "video_times_s": [6], "relation": "support"}]}],
            "sources": [{"id": "S1", "type": "web", "title": "s", "url": url, "quote": quote}]}
    written = box.call("write_report", {"data": data})
    assert written["check"]["ok"], written["check"]
    assert (tmp_path / "report" / "index.html").read_bytes() == (CONTRACT / "template.html").read_bytes()
    assert _report.read_data(tmp_path / "report")["video"]["duration_s"] == 36.0

    bad = json.loads(json.dumps(data))
    bad["timeline"][0]["end_s"] = 99
    bad["findings"][0]["claims"][0]["citations"] = ["S9"]
    bad["sources"].append({"id": "S2", "type": "web", "title": "x", "url": "https://never.example/x", "quote": "q"})
    bad["sources"][0]["quote"] = "words the page does not hold"
    problems = " | ".join(box.call("write_report", {"data": bad})["check"]["problems"])
    assert "outside the video" in problems and "'S9' is not a source id" in problems
    assert "was not opened" in problems and "not found verbatim" in problems

    # the App. D.3 budgets: a report below them is warned, one at them is not
    box.budgets = {"web": 2, "video": 0, "document": 1, "anchor": 1}
    warned = box.call("write_report", {"data": data})["check"]
    assert warned["ok"] and ("budget: 1 external source(s) of any type, the reference budget B_web asks for at least 2"
                             in warned["warnings"])
    assert "budget: 0 document source(s), the reference budget asks for at least 1" in warned["warnings"]
    box.budgets = {"web": 1, "video": 0, "document": 0, "anchor": 2}
    assert [w for w in box.call("write_report", {"data": data})["check"]["warnings"] if w.startswith("budget")] == [
        "budget: anchor(s) A1 have fewer than 2 source records each"]
    box.budgets = {"web": 1, "anchor": 0}
    assert not [w for w in box.call("write_report", {"data": data})["check"]["warnings"] if w.startswith("budget")]
    # App. D.3: B_web is the minimum number of external sources of every type. One web page and one document make
    # two external sources: B_web = 2 is met, though only one record is of type web
    two = json.loads(json.dumps(data))
    two["sources"].append({"id": "S2", "type": "document", "title": "d", "url": url + "#spec.pdf", "quote": quote})
    box.budgets = {"web": 2, "anchor": 0}
    assert not [w for w in box.call("write_report", {"data": two})["check"]["warnings"] if w.startswith("budget")]


def test_tools_refuse_what_the_level_does_not_offer_and_evidence_needs_an_opened_source(tmp_path):
    box = _box(tmp_path, "video")
    with pytest.raises(ToolError, match="no tool 'fetch_url'"):
        box.call("fetch_url", {"url": "https://example.org/"})
    web = _box(tmp_path, "text_web")
    with pytest.raises(ToolError, match="fetch it first"):
        web.call("record_evidence", {"claim": "c", "modality": "web", "excerpt": "e", "source_url": "https://a.example/"})


# ---- the agent loop on the host, driven by the scripted model in-process ----------------------------

class _ScriptedClient:
    """An OpenAI-client look-alike whose answers come from the scripted model's `answer`."""

    def __init__(self):
        from openai.types.chat import ChatCompletion

        self.requests: list[dict] = []
        scripts = load_scripts()

        def create(model, messages, tools=None, **_kw):
            body = json.loads(json.dumps({"model": model, "messages": messages, "tools": tools or []}))
            self.requests.append(body)
            return ChatCompletion.model_validate(answer(body, scripts))

        self.chat = type("Chat", (), {"completions": type("C", (), {"create": staticmethod(create)})()})()


@pytest.mark.media
@pytest.mark.parametrize("attach", [False, True])
def test_the_loop_runs_the_video_level_and_logs_every_call(tmp_path, attach):
    from sandbox.reference_agent._loop import NativeLog, run_agent

    box = _box(tmp_path, "video")
    client = _ScriptedClient()
    user = "Research the video. The public source is https://www.youtube.com/watch?v=Pq7dLmpA3xK."
    summary = run_agent(client, "m", capability("video"), box, user, NativeLog(tmp_path / "logs" / "ref.jsonl"),
                        attach_frames=attach)
    assert summary["end"] == "final_answer" and summary["check"]["ok"] and summary["tool_errors"] == 0
    offered = {t["function"]["name"] for t in client.requests[0]["tools"]}
    assert offered == {"write_report", "check_report", "probe_video", "read_window"}
    log = [json.loads(line) for line in (tmp_path / "logs" / "ref.jsonl").read_text().splitlines()]
    assert [r["type"] for r in log].count("model_call") == summary["model_calls"] == len(client.requests)
    assert all(r["usage"]["total_tokens"] > 0 for r in log if r["type"] == "model_call")
    calls = [r["name"] for r in log if r["type"] == "tool_call"]
    assert calls == ["probe_video", "read_window", "write_report", "check_report"]
    data = _report.read_data(tmp_path / "report")
    assert [m["src"] for s in data["timeline"] for m in s.get("media", [])] == [f"assets/w000_0{i}.jpg" for i in range(6)]
    images = [p for m in client.requests[-1]["messages"] if isinstance(m.get("content"), list)
              for p in m["content"] if p.get("type") == "image_url"]
    assert len(images) == (6 if attach else 0)
