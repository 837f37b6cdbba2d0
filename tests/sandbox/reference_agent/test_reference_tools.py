"""The reference agent's tools and the scripted model, on the host (no Docker)."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from omnidr.harness import AgentContext, ReferenceHarness
from sandbox.skills import _media, _report, _web
from sandbox.reference_agent._capability import LEVELS, capability
from sandbox.reference_agent._tools import ToolBox, ToolError
from sandbox.scripted_model import answer, load_scripts
from testkit import DEMO, make_mp4

PENDANT = DEMO / "tasks" / "pendant-lamp-safety" / "video.mp4"
CONTRACT = DEMO / "contract"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _page_text(url: str) -> str:
    corpus = {p["url"]: p for p in json.loads((DEMO / "web" / "corpus.json").read_text())["pages"]}
    raw = (DEMO / "web" / corpus[url]["path"]).read_bytes()
    return _web.pdf_to_text(raw) if raw[:5] == b"%PDF-" else _web.html_to_text(raw.decode())[1]


# ---- video tools -----------------------------------------------------------------------------------

def test_windows_are_300_s_and_cover_the_video():
    assert _media.windows(750) == [_media.Window(0, 0, 300), _media.Window(1, 300, 600), _media.Window(2, 600, 750)]
    assert _media.windows(36) == [_media.Window(0, 0, 36)]
    assert _media.windows(0) == []
    assert _media.sample_times(0, 36, 6) == [3, 9, 15, 21, 27, 33]


@pytest.mark.media
def test_probe_reads_duration_fps_resolution_audio_and_subtitles():
    p = _media.probe_video(str(PENDANT))
    assert (p["duration_s"], p["fps"], p["width"], p["height"]) == (36.0, 15.0, 426, 240)
    assert len(p["audio"]) == 1 and p["subtitles"][0]["codec"] == "mov_text"


@pytest.mark.media
def test_frames_are_deterministic(tmp_path):
    a = _media.extract_frame(str(PENDANT), 13.0, tmp_path / "a.jpg")
    b = _media.extract_frame(str(PENDANT), 13.0, tmp_path / "b.jpg")
    c = _media.extract_frame(str(PENDANT), 25.0, tmp_path / "c.jpg")
    assert a.read_bytes()[:2] == b"\xff\xd8" and _sha(a) == _sha(b) != _sha(c)
    one = _media.window_frames(str(PENDANT), _media.probe_video(str(PENDANT)), 0, tmp_path / "r1", 6)
    two = _media.window_frames(str(PENDANT), _media.probe_video(str(PENDANT)), 0, tmp_path / "r2", 6)
    assert [f["time_s"] for f in one["frames"]] == [3, 9, 15, 21, 27, 33]
    assert [_sha(tmp_path / "r1" / Path(f["src"]).name) for f in one["frames"]] == \
           [_sha(tmp_path / "r2" / Path(f["src"]).name) for f in two["frames"]]


@pytest.mark.media
def test_transcript_comes_from_the_subtitle_track():
    p = _media.probe_video(str(PENDANT))
    source, cues = _media.transcript(str(PENDANT), p["subtitles"])
    assert source == "subtitle_track" and len(cues) == 6
    assert cues[1]["start_s"] == 6.2 and "switch off the breaker" in cues[1]["text"]
    zh = DEMO / "tasks" / "sky-blue-rayleigh" / "video.mp4"
    _src, zh_cues = _media.transcript(str(zh), _media.probe_video(str(zh))["subtitles"])
    assert "瑞利" in "".join(c["text"] for c in zh_cues) or "散射" in zh_cues[1]["text"]


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


# ---- web tools -------------------------------------------------------------------------------------

def test_pdf_and_html_text_hold_the_verbatim_quotes():
    facts = json.loads((DEMO / "tasks" / "pendant-lamp-safety" / "facts.json").read_text())["facts"]
    quoted = [(s["url"], s["quote"]) for f in facts for s in f.get("sources", [])]
    assert any(u.endswith(".pdf") for u, _q in quoted)
    for url, quote in quoted:
        assert _report.normalize(quote) in _report.normalize(_page_text(url)), url


def test_search_index_returns_urls_and_titles_only_ranked_by_rare_terms():
    idx = _web.SearchIndex.from_env((DEMO / "web" / "corpus.json").as_posix())
    hits = idx.search("ND exposure math")
    assert hits[0]["url"] == "https://www.example-photoblog.net/guides/nd-exposure-math"
    assert set(hits[0]) == {"url", "title", "kind"}
    assert idx.search("瑞利散射")[0]["url"].startswith("https://")
    assert all(h["kind"] == "document" for h in idx.search("datasheet data sheet", kind="document"))
    assert idx.search("zzzz qqqq") == []


# ---- capability levels and the report checks ---------------------------------------------------------

def test_capability_levels_are_cumulative():
    tools = [set(capability(name).tools) for name in LEVELS]
    assert tools[0] == {"write_report", "check_report"}
    assert all(a <= b for a, b in zip(tools, tools[1:]))
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
    assert warned["ok"] and "budget: 1 web source(s), the reference budget asks for at least 2" in warned["warnings"]
    assert "budget: 0 document source(s), the reference budget asks for at least 1" in warned["warnings"]
    box.budgets = {"web": 1, "video": 0, "document": 0, "anchor": 2}
    assert [w for w in box.call("write_report", {"data": data})["check"]["warnings"] if w.startswith("budget")] == [
        "budget: anchor(s) A1 have fewer than 2 source records each"]
    box.budgets = {"web": 1, "anchor": 0}
    assert not [w for w in box.call("write_report", {"data": data})["check"]["warnings"] if w.startswith("budget")]


def test_tools_refuse_what_the_level_does_not_offer_and_evidence_needs_an_opened_source(tmp_path):
    box = _box(tmp_path, "video")
    with pytest.raises(ToolError, match="no tool 'fetch_url'"):
        box.call("fetch_url", {"url": "https://example.org/"})
    web = _box(tmp_path, "text_web")
    with pytest.raises(ToolError, match="fetch it first"):
        web.call("record_evidence", {"claim": "c", "modality": "web", "excerpt": "e", "source_url": "https://a.example/"})


# ---- the scripted model ----------------------------------------------------------------------------

def _tools(*names):
    return [{"type": "function", "function": {"name": n, "parameters": {}}} for n in names]


def test_scripted_model_plays_its_script_and_resolves_tool_results():
    scripts = load_scripts()
    assert {s.task for s in scripts} == {"pendant-lamp-safety", "nd-filter-waterfall", "sky-blue-rayleigh"}
    script = next(s for s in scripts if s.task == "pendant-lamp-safety")
    user = {"role": "user", "content": f"Use the video-research capability ... The public source is {script.match}."}
    all_tools = _tools("probe_video", "read_window", "search_web", "fetch_url", "record_evidence", "write_report",
                       "check_report")
    first = answer({"messages": [user], "tools": all_tools}, scripts)
    call = first["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["name"] == "probe_video" and first["usage"]["total_tokens"] > 0
    # step N = number of assistant messages; tool results are substituted where the script refers to them
    history = [user]
    for step in script.steps[:-3]:
        history.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": "{}"}}
            for c in step.get("tool_calls", [])]})
    history.append({"role": "tool", "tool_call_id": "probe", "content": json.dumps({"duration_s": 36.0})})
    history.append({"role": "tool", "tool_call_id": "rw0", "content": json.dumps(
        {"frames": [{"src": f"assets/f{i}.jpg"} for i in range(6)], "transcript": [{"text": "hello"}]})})
    write = answer({"messages": history, "tools": all_tools}, scripts)["choices"][0]["message"]["tool_calls"][0]
    data = json.loads(write["function"]["arguments"])["data"]
    assert write["function"]["name"] == "write_report" and data["video"]["duration_s"] == 36.0
    assert data["timeline"][0]["media"][0]["src"] == "assets/f0.jpg" and data["timeline"][0]["note"].endswith("hello\u201d")


def test_scripted_model_skips_tools_that_are_not_offered_and_drops_missing_values():
    scripts = load_scripts()
    script = scripts[0]
    user = {"role": "user", "content": script.match}
    first = answer({"messages": [user], "tools": _tools("write_report", "check_report")}, scripts)
    call = first["choices"][0]["message"]["tool_calls"][0]
    data = json.loads(call["function"]["arguments"])["data"]
    assert call["function"]["name"] == "write_report"
    assert data["video"]["duration_s"] is None and all("media" not in s or s["media"] == [] for s in data["timeline"])
    unknown = answer({"messages": [{"role": "user", "content": "something else"}]}, scripts)
    assert "no script" in unknown["choices"][0]["message"]["content"]


def _written(script, content: str, results: dict[str, dict]) -> dict:
    """The report data the scripted model writes, given the instruction and the tool results so far."""
    all_tools = _tools("probe_video", "read_window", "search_web", "fetch_url", "record_evidence", "write_report",
                       "check_report")
    history = [{"role": "user", "content": content}]
    steps = [st for st in script.steps if st.get("tool_calls")]
    for step in steps[:next(i for i, st in enumerate(steps) if st["tool_calls"][0]["name"] == "write_report")]:
        history.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": "{}"}}
            for c in step["tool_calls"]]})
        history += [{"role": "tool", "tool_call_id": c["id"], "content": json.dumps(results[c["id"]])}
                    for c in step["tool_calls"] if c["id"] in results]
    call = answer({"messages": history, "tools": all_tools}, load_scripts())["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["name"] == "write_report"
    return json.loads(call["function"]["arguments"])["data"]


def test_the_scripted_model_writes_only_what_its_tools_gave_and_names_the_briefs_open_questions():
    """Calibration's three levels from one script (App. E.4): without fetch and record_evidence results
    (R1) no finding and no source; with them (R2) every source and finding; with an evidence brief in
    the instruction (R3) also the brief's open questions."""
    from omnidr.benchmark import Language, evidence_brief, open_snapshot

    snap = open_snapshot(DEMO)
    task = "nd-filter-waterfall"
    script = next(s for s in load_scripts() if s.task == task)
    calls = [c for st in script.steps for c in st.get("tool_calls", [])]
    video = {"probe": {"duration_s": 34.0}, "rw0": {"frames": [{"src": f"f{i}.jpg"} for i in range(6)],
                                                    "transcript": [{"text": "cue"}] * 6}}
    research = {c["id"]: {"url": c["arguments"]["url"]} if c["name"] == "fetch_url" else {"id": "E1"}
                for c in calls if c["name"] in ("fetch_url", "record_evidence")}
    r1 = _written(script, script.match, video)
    assert r1["sources"] == [] and r1["findings"] == [] and len(r1["timeline"]) == 6
    r2 = _written(script, script.match, {**video, **research})
    assert len(r2["sources"]) == 7 and len(r2["findings"]) == 6
    assert "Open questions" not in r2["overview"]
    facts = snap.tasks[task].facts
    brief = evidence_brief(facts, Language.en)
    assert "- [W10 open question] No published transmission measurement" in brief
    assert "https://www.example-optics.com/pdf/clearline-nd1000-datasheet.pdf (document, primary)" in brief
    r3 = _written(script, script.match + "\n" + brief, {**video, **research})
    unavailable = next(f.claim for f in facts.facts if f.id == "W10")
    assert r3["overview"].startswith(r2["overview"]) and r3["overview"].endswith(unavailable)
    assert {k: v for k, v in r3.items() if k != "overview"} == {k: v for k, v in r2.items() if k != "overview"}


def test_the_harness_adapter_describes_the_agent():
    ctx = AgentContext("/input/instruction.txt", "/input/video.mp4", "/input/contract", "/output", "/output/report",
                       "http://gateway:8080", "http://proxy:3128", "tok", "m1", "/output/harness-logs")
    h = ReferenceHarness("video", image="omnidr/reference:x", search=[{"url": "https://a.example/", "title": "A"}])
    assert h.name == "reference" and h.image() == "omnidr/reference:x"
    assert h.command(ctx) == ["python", "-m", "sandbox.reference_agent", "--capability", "video", "--model", "m1"]
    env = h.environment(ctx)
    assert env["OMNIDR_CAPABILITY"] == "video" and json.loads(env["OMNIDR_SEARCH_INDEX"])["pages"][0]["title"] == "A"
    assert h.native_logs(ctx)[0] == "/output/harness-logs/reference.jsonl"
    with pytest.raises(ValueError):
        ReferenceHarness("everything")


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
