"""The scripted model (`sandbox.scripted_model`): it plays the demo tasks' scripts, resolves tool results and
writes only what its tools gave (no Docker, no network)."""

import json
import threading
import urllib.request
from http.server import ThreadingHTTPServer

import pytest
from testkit import DEMO

from sandbox.models import FINAL_ANSWER_PROMPT, FINALIZATION_RETRY_NOTE
from sandbox.scripted_model import Script, answer, finalization_answer, is_finalization, load_scripts, make_handler


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


# ---- the finalization stage (paper 002, App. C.2.3) ------------------------------------------------------------

FINAL = Script("bridge", "bridge-video.mp4", "scripted-demo",
               [{"content": "", "tool_calls": [{"id": "s1", "name": "search_web", "arguments": {"query": "bridge"}}]}],
               finalization="The bridge crosses the Vltava.",
               finalization_first={"tool_calls": [{"name": "search_web", "arguments": {"query": "more"}}]})


def _serve(scripts: list[Script]):
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(scripts))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=30) as response:
        return json.loads(response.read())


def _conversation(api: str, last: str) -> dict:
    question = "Which river does the bridge in bridge-video.mp4 cross?"
    if api == "responses":
        return {"model": "m", "input": [{"type": "message", "role": "user", "content": question},
                                        {"type": "message", "role": "user",
                                         "content": [{"type": "input_text", "text": last}]}]}
    if api == "messages":
        return {"model": "m", "max_tokens": 4000, "messages": [
            {"role": "user", "content": [{"type": "text", "text": question}, {"type": "text", "text": last}]}]}
    return {"model": "m", "messages": [{"role": "user", "content": question}, {"role": "user", "content": last}]}


def _said(api: str, answer: dict) -> tuple[str, list[str], str]:
    """(text, tool names, how it ended) of an answer in any of the three APIs."""
    if api == "responses":
        text = "".join(p["text"] for i in answer["output"] if i["type"] == "message" for p in i["content"])
        return text, [i["name"] for i in answer["output"] if i["type"] == "function_call"], answer["status"]
    if api == "messages":
        text = "".join(b["text"] for b in answer["content"] if b["type"] == "text")
        return text, [b["name"] for b in answer["content"] if b["type"] == "tool_use"], answer["stop_reason"]
    message = answer["choices"][0]["message"]
    return (message["content"] or "", [c["function"]["name"] for c in message.get("tool_calls") or []],
            answer["choices"][0]["finish_reason"])


@pytest.mark.network
@pytest.mark.parametrize("api, path", [("chat_completions", "/chat/completions"), ("messages", "/messages"),
                                       ("responses", "/responses")])
def test_a_finalization_request_gets_the_first_answer_then_the_scripts_finalization(api, path):
    server, url = _serve([FINAL])
    try:
        first = _said(api, _post(url + path, _conversation(api, FINAL_ANSWER_PROMPT)))
        retry = FINAL_ANSWER_PROMPT + "\n\n" + FINALIZATION_RETRY_NOTE.format(reason="the answer called a tool")
        second = _said(api, _post(url + path, _conversation(api, retry)))
    finally:
        server.shutdown()
    assert first[:2] == ("", ["search_web"]) and first[2] in ("tool_calls", "tool_use", "completed")
    assert second[:2] == ("The bridge crosses the Vltava.", []) and second[2] in ("stop", "end_turn", "completed")


def test_an_empty_or_cut_first_answer_and_the_fallbacks():
    empty = Script("e", "bridge-video.mp4", "m", [{"content": "Its last step says: Vltava."}], finalization_first="")
    cut = Script("c", "bridge-video.mp4", "m", [], finalization="Vltava.",
                 finalization_first={"content": "The bridge cross", "truncated": True})
    body = _conversation("chat_completions", FINAL_ANSWER_PROMPT)
    assert is_finalization("chat_completions", body)
    assert not is_finalization("chat_completions", _conversation("chat_completions", "Please go on."))
    assert _said("chat_completions", finalization_answer("chat_completions", body, [empty]))[0] == ""
    assert _said("messages", finalization_answer("messages", _conversation("messages", FINAL_ANSWER_PROMPT), [cut])) == (
        "The bridge cross", [], "max_tokens")
    retry = _conversation("chat_completions", FINAL_ANSWER_PROMPT + "\n\n" + FINALIZATION_RETRY_NOTE.format(reason="x"))
    assert _said("chat_completions", finalization_answer("chat_completions", retry, [empty]))[0] == (
        "Its last step says: Vltava.")  # no finalization text: the script's last words
    assert "no script" in _said("chat_completions", finalization_answer("chat_completions", body, []))[0]
