"""The scripted model (`sandbox.scripted_model`): it plays the demo tasks' scripts, resolves tool results and
writes only what its tools gave (no Docker, no network)."""

import json

from testkit import DEMO

from sandbox.scripted_model import answer, load_scripts


def _tools(*names):
    return [{"type": "function", "function": {"name": n, "parameters": {}}} for n in names]


def test_scripted_model_plays_its_script_and_resolves_tool_results():
    scripts = load_scripts()
    assert {s.task for s in scripts} == {"pendant-lamp-safety", "nd-filter-waterfall", "sky-blue-rayleigh",  # report demo
                                         "river-gauge-flood", "astrolabe-donor", "coffee-lot-buyer",  # OpenDS demo
                                         "calculator-capacitor"}
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
    script = next(s for s in scripts if s.task == "nd-filter-waterfall")
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
