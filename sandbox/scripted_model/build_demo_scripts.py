"""Developer tool: regenerate `scripts/<task>.json` for the demo snapshot.

    python -m sandbox.scripted_model.build_demo_scripts snapshots/demo

The script of a task plays a careful model: probe the video, read its window (frames and transcript),
search, open every source it cites, record evidence with the verbatim quotes, write window.DATA built
from the tool results (frame paths, duration and narration are `$ref`s to what the tools returned),
check the report and stop. The research content comes from the task's fact library, which only this
offline generator reads; the agent in the sandbox never sees it.
"""

import json
import shlex
import sys
from pathlib import Path
from urllib.parse import urlsplit

from sandbox.skills import WINDOW_S, classify, probe_video, sample_times, transcript

HERE = Path(__file__).parent
GOAL = {"support": "verify", "contradiction": "verify", "update": "update", "explanation": "explain",
        "comparison": "compare", "application": "apply"}
KIND = {"webpage": "web", "document": "document", "video": "video", "image": "image"}
TEXT = {
    "en": {"narration": " Narration: ", "final": "The report is written and passes its checks.",
           "video_says": "What the video shows and says: ", "outside": "What outside evidence adds: ",
           "plan": "Plan: probe the video, read its window, research each anchor, write and check the report.",
           "open": "Opening every source before citing it.", "frame": "Frame at {}",
           "open_questions": "Open questions (no source answers them): "},
    "zh": {"narration": " 旁白：", "final": "报告已写好并通过检查。", "video_says": "视频展示与讲述的内容：",
           "outside": "外部证据补充的内容：", "plan": "计划：探测视频、读取时间窗、逐个锚点检索、写报告并检查。",
           "open": "引用前先打开每个来源。", "frame": "{} 处的画面", "open_questions": "尚无来源能回答的问题："},
}
QUERIES = {
    "pendant-lamp-safety": ["ceiling box fixture support weight", "voltage tester test before touch",
                            "Orla 12 pendant data sheet hanging height", "Orla 12 canopy screw notice",
                            "pendant light height kitchen island 24 inches"],
    "nd-filter-waterfall": ["ND1000 neutral density filter 10 stop", "ND exposure math", "ClearLine ND1000 datasheet",
                            "image stabilization tripod", "long exposure viewfinder", "waterfall shutter speed test"],
    "sky-blue-rayleigh": ["瑞利散射", "蓝光 红光 散射 倍数", "天空 蓝色", "日落 颜色", "太阳光谱", "黄昏 臭氧", "牛奶 水箱 实验"],
}


def _fmt(t: float) -> str:
    return f"{int(t) // 60}:{int(t) % 60:02d}"


def _timeline(cues: list[dict], duration: float, vfacts: list[dict], frame_times: list[float], words: dict) -> list[dict]:
    """The timeline: one segment per transcript cue, from its start (floored) to the next one; the whole video."""
    bounds = [int(c["start_s"]) for c in cues] + [duration]
    timeline = []
    for k, cue in enumerate(cues):
        start, end = float(bounds[k]), float(bounds[k + 1])
        seen = [f["claim"] for f in vfacts if start <= f["video_ref"]["start_s"] < end]
        frame = next((i for i, t in enumerate(frame_times) if start <= t < end), None)
        seg = {"id": f"T{k + 1}", "start_s": start, "end_s": end,
               "title": (seen[0] if seen else cue["text"])[:70],
               "note": {"$join": [words["video_says"] + " ".join(seen) + words["narration"] + "\u201c",
                                  {"$ref": f"rw0.transcript.{k}.text"}, "\u201d"]}}
        if frame is not None:
            seg["media"] = [{"type": "image", "src": {"$ref": f"rw0.frames.{frame}.src"},
                             "caption": words["frame"].format(_fmt(frame_times[frame]))}]
        timeline.append(seg)
    return timeline


def _cited_sources(wfacts: list[dict], corpus: dict[str, dict]) -> tuple[list[dict], dict[str, str]]:
    """The sources: every URL cited by a fact, opened before it is cited; and each URL's source id."""
    sources: list[dict] = []
    url_id: dict[str, str] = {}
    for f in wfacts:
        for s in f["sources"]:
            if s["url"] not in url_id:
                url_id[s["url"]] = f"S{len(url_id) + 1}"
                # the URL as fetch_url returned it: a source the agent could not open is not in the report
                sources.append({"id": url_id[s["url"]], "type": KIND.get(s["kind"], "web"),
                                "title": corpus[s["url"]]["title"], "url": {"$ref": f"open{len(url_id)}.url"},
                                "publisher": urlsplit(s["url"]).hostname, "date": s.get("published", ""),
                                "quote": s["quote"], "anchor_ids": []})
    return sources, url_id


def _anchor_targets(wfacts: list[dict]) -> list[str]:
    """The video facts that outside evidence relates to, in the order they are first related to."""
    targets = []
    for f in wfacts:
        for r in f.get("relations", []):
            if r["target"].startswith("V") and r["target"] not in targets:
                targets.append(r["target"])
    return targets


def build(snapshot: Path, task_id: str) -> dict:
    task = json.loads((snapshot / "tasks" / task_id / "task.json").read_text("utf-8"))
    facts = json.loads((snapshot / "tasks" / task_id / "facts.json").read_text("utf-8"))["facts"]
    corpus = {p["url"]: p for p in json.loads((snapshot / "web" / "corpus.json").read_text("utf-8"))["pages"]}
    lang = task["language"]
    words = TEXT[lang]
    video = str(snapshot / "tasks" / task_id / task["video"]["file"])
    probe = probe_video(video)
    duration = probe["duration_s"]
    _src, cues = transcript(video, probe["subtitles"])
    frames = 6
    frame_times = sample_times(0.0, min(duration, WINDOW_S), frames)
    vfacts = [f for f in facts if f["origin"] == "video"]
    wfacts = [f for f in facts if f["origin"] == "web" and f.get("sources")]

    timeline = _timeline(cues, duration, vfacts, frame_times, words)

    sources, url_id = _cited_sources(wfacts, corpus)

    # anchors: the video facts that outside evidence relates to
    targets = _anchor_targets(wfacts)
    vby = {f["id"]: f for f in vfacts}
    # what outside evidence says is written only once the agent has recorded it (record_evidence ev<k>)
    learned = {f["id"]: f"ev{i + 1}.id" for i, f in enumerate(wfacts)}

    def given(fact: dict, value):
        return {"$given": learned[fact["id"]], "value": value}

    def joined(parts: list[tuple[dict, str]]) -> dict:
        """The texts joined by spaces, each one only once its fact is recorded."""
        return {"$join": [given(f, text + (" " if k < len(parts) - 1 else "")) for k, (f, text) in enumerate(parts)]}

    anchors, findings = [], []
    for n, vid in enumerate(sorted(targets, key=lambda v: (vby[v]["video_ref"]["start_s"], v)), 1):
        v = vby[vid]
        rels = [(f, r["type"]) for f in wfacts for r in f.get("relations", []) if r["target"] == vid]
        aid = f"A{n}"
        anchors.append({"id": aid, "time_s": float(v["video_ref"]["start_s"]), "label": v["claim"],
                        "goal": GOAL[rels[0][1]]})
        claims, said = [], []
        for f, rel in rels:
            cites = [url_id[s["url"]] for s in f["sources"]]
            for sid in cites:
                src = next(s for s in sources if s["id"] == sid)
                if aid not in src["anchor_ids"]:
                    src["anchor_ids"].append(aid)
            claims.append(given(f, {"text": f["claim"], "citations": cites,
                                    "video_times_s": [float(v["video_ref"]["start_s"])], "relation": rel}))
            said.append((f, f["claim"]))
        findings.append(given(rels[0][0], {"id": f"F{n}", "title": v["claim"][:90], "anchor_ids": [aid],
                                           "summary": joined(said), "claims": claims}))

    # the overview sums up what the tools gave; with an evidence brief in the instruction (calibration's
    # R3) it also names the brief's open questions, which no search can show to be open
    lead = [(f, f"{f['claim']} ({_fmt(vby[vid]['video_ref']['start_s'])}, {rel})")
            for vid in sorted(targets, key=lambda v: (vby[v]["video_ref"]["start_s"], v))
            for f in wfacts for r in f.get("relations", []) if r["target"] == vid for rel in [r["type"]]]
    overview = {"$join": [words["video_says"] + " ".join(f["claim"] for f in vfacts) + "\n\n" + words["outside"],
                          *joined(lead)["$join"],
                          {"$brief": "open_questions", "prefix": "\n\n" + words["open_questions"]}]}

    data = {"title": task["title"], "language": lang, "query": task["query"],
            "video": {"src": "video.mp4", "duration_s": {"$ref": "probe.duration_s"}, "source_url": task["video"]["url"]},
            "overview": overview, "timeline": timeline, "anchors": anchors, "findings": findings, "sources": sources}

    steps: list[dict] = [
        {"content": words["plan"], "tool_calls": [{"id": "probe", "name": "probe_video", "arguments": {}}]},
        {"tool_calls": [{"id": "rw0", "name": "read_window", "arguments": {"index": 0, "frames": frames}}]},
        {"tool_calls": [{"id": f"q{i + 1}", "name": "search_web", "arguments": {"query": q}}
                        for i, q in enumerate(QUERIES.get(task_id, [task["title"]]))]},
        {"content": words["open"], "tool_calls": [{"id": f"open{i + 1}", "name": "fetch_url", "arguments": {"url": url}}
                                                  for i, url in enumerate(url_id)]},
        {"tool_calls": [{"id": f"ev{i + 1}", "name": "record_evidence", "arguments": {
            "claim": f["claim"], "modality": KIND.get(f["sources"][0]["kind"], "web"),
            "source_url": f["sources"][0]["url"], "excerpt": f["sources"][0]["quote"],
            "relation": f["relations"][0]["type"] if f.get("relations") else None,
            "date": f["sources"][0].get("published"),
            **({"video_time_s": float(vby[f["relations"][0]["target"]]["video_ref"]["start_s"])}
               if f.get("relations") and f["relations"][0]["target"] in vby else {})}}
            for i, f in enumerate(wfacts)]},
        {"tool_calls": [{"id": "write", "name": "write_report", "arguments": {"data": data}}]},
        {"tool_calls": [{"id": "check", "name": "check_report", "arguments": {}}]},
        {"content": words["final"], "final": True},
    ]
    for step in steps:  # drop null arguments (e.g. evidence without relation)
        for c in step.get("tool_calls", []):
            c["arguments"] = {k: v for k, v in c["arguments"].items() if v is not None}
    return {"task": task_id, "match": task["video"]["url"], "model": "scripted-demo", "steps": steps}


# ---- shell episodes for real agent CLIs (Claude Code, Codex) ------------------------------------------
# A shell episode does the reference script's research with the research skills (`omnidr-skill`, see
# sandbox/skills), and the same full script plays at every capability level: a skill that is not
# installed fails in the shell (exit 127) as it would for a real model, and the "model's" fill program
# then writes only what the earlier commands really produced (frames, transcript, opened sources,
# recorded evidence) before `omnidr-skill report render`. Paths come from the sandbox's environment.
WORK = "/tmp/work"
FILL_PROGRAM = r"""
import json
from pathlib import Path
work = Path("WORK")
def load(name, default):
    try:
        return json.loads((work / name).read_text("utf-8"))
    except (OSError, ValueError):
        return default
frames = load("frames.json", {}).get("frames", [])
cues = load("transcript.json", {}).get("transcript", [])
recorded = {r["source_url"] for r in load("evidence.json", {}).get("evidence", []) if r.get("source_url")}
opened = {p.get("url") for p in (load(f.name, {}) for f in work.glob("open-*.json")) if p.get("status") == 200}
DROP = object()
def fill(v):
    if isinstance(v, dict):
        if "$frame" in v:
            return frames[v["$frame"]]["src"] if v["$frame"] < len(frames) else DROP
        if "$cue" in v:
            return cues[v["$cue"]]["text"] if v["$cue"] < len(cues) else ""
        if "$opened" in v:
            return v["$opened"] if v["$opened"] in opened else DROP
        if "$given" in v:  # what outside evidence says, written only once it is recorded
            return fill(v["value"]) if v["$given"] in recorded else DROP
        if "$join" in v:
            return "".join(str(x) for x in map(fill, v["$join"]) if x is not DROP)
        out = {k: fill(x) for k, x in v.items()}
        return DROP if any(out.get(k) is DROP for k in ("src", "url")) else {k: x for k, x in out.items() if x is not DROP}
    if isinstance(v, list):
        return [x for x in map(fill, v) if x is not DROP]
    return v
data = fill(json.loads((work / "draft.json").read_text("utf-8")))
kept = {s["id"] for s in data.get("sources", [])}
for finding in data.get("findings", []):
    for claim in finding.get("claims", []):
        claim["citations"] = [c for c in claim.get("citations", []) if c in kept]
(work / "data.json").write_text(json.dumps(data, ensure_ascii=False, indent=1), "utf-8")
print(json.dumps({"frames": len(frames), "cues": len(cues), "sources": len(kept), "findings": len(data.get("findings", []))}))
""".replace("WORK", WORK)


def _shell_refs(value, urls: dict[str, str]):
    """The reference script's `$ref`s to tool results as placeholders the fill program resolves from what
    the skills returned: an opened URL (`urls`: fetch_url and record_evidence call id -> URL) is kept
    when it was opened, and `$given` waits for evidence recorded from its source URL. The brief's open
    questions are left out (the shell episodes play R2 only)."""
    if isinstance(value, dict):
        if "$join" in value:
            return {"$join": [_shell_refs(v, urls) for v in value["$join"]
                              if not (isinstance(v, dict) and "$brief" in v)]}
        if set(value) == {"$given", "value"}:
            return {"$given": urls[value["$given"].split(".")[0]], "value": _shell_refs(value["value"], urls)}
        ref = value.get("$ref") if set(value) == {"$ref"} else None
        if ref and ref.split(".")[0] in urls:
            return {"$opened": urls[ref.split(".")[0]]}
        if ref == "probe.duration_s":
            return None  # render fills the duration from the video
        if ref and ref.startswith("rw0.transcript."):
            return {"$cue": int(ref.split(".")[2])}
        if ref and ref.startswith("rw0.frames."):
            return {"$frame": int(ref.split(".")[2])}
        return {k: _shell_refs(v, urls) for k, v in value.items()}
    if isinstance(value, list):
        return [_shell_refs(v, urls) for v in value]
    return value


def _heredoc(path: str, text: str, tag: str) -> str:
    return f"cat > {path} <<'{tag}'\n{text.strip()}\n{tag}"


def _flags(arguments: dict) -> str:
    return " ".join(f"--{k.replace('_', '-')} {shlex.quote(str(v))}" for k, v in arguments.items() if v is not None)


def build_shell(snapshot: Path, task_id: str, script: dict) -> dict:
    """The shell episode of a task for a CLI harness: the same research as `script` (the reference
    agent's), done with the research skills in the shell."""
    task = json.loads((snapshot / "tasks" / task_id / "task.json").read_text("utf-8"))
    corpus = {p["url"]: p for p in json.loads((snapshot / "web" / "corpus.json").read_text("utf-8"))["pages"]}
    words = TEXT[task["language"]]
    calls = [c for st in script["steps"] for c in st.get("tool_calls", [])]
    by_name = {c["name"]: c for c in calls}
    opens = [c for c in calls if c["name"] == "fetch_url"]
    records = [c for c in calls if c["name"] == "record_evidence"]
    data = _shell_refs(by_name["write_report"]["arguments"]["data"],
                       {c["id"]: c["arguments"].get("url") or c["arguments"].get("source_url") for c in opens + records})
    data["video"] = {k: v for k, v in data["video"].items() if v is not None}
    data["video"]["src"] = "video.mp4"
    frames = by_name["read_window"]["arguments"]["frames"]

    def kind(url: str) -> str:
        return classify(corpus.get(url, {"url": url}))

    searches = [f"omnidr-skill search web {shlex.quote(c['arguments']['query'])}" for c in calls
                if c["name"] == "search_web"]
    searches += [f"omnidr-skill search {k}s {shlex.quote(corpus[c['arguments']['url']]['title'])}" for c in opens
                 for k in [kind(c["arguments"]["url"])] if k in ("video", "document")]
    opening = []
    for i, c in enumerate(opens):
        url = c["arguments"]["url"]
        skill = "doc read" if kind(url) == "document" else "fetch url"
        opening.append({"command": f"omnidr-skill {skill} {shlex.quote(url)} > {WORK}/open-{i + 1}.json"
                                   f" && head -c 800 {WORK}/open-{i + 1}.json",
                        "description": f"Open source {i + 1}"})
    shell = [
        {"content": words["plan"], "commands": [{
            "command": f"mkdir -p {WORK} && omnidr-skill video probe | tee {WORK}/probe.json",
            "description": "Probe the source video"}]},
        {"commands": [
            {"command": f"omnidr-skill video frames --window 0 --count {frames} > {WORK}/frames.json"
                        f" && cat {WORK}/frames.json", "description": "Sample frames of the first window"},
            {"command": f"omnidr-skill video transcript --window 0 > {WORK}/transcript.json"
                        f" && cat {WORK}/transcript.json", "description": "Read the first window's transcript"}],
         "load_tools": ["WebFetch"]},
        {"commands": [{"command": c, "description": "Search"} for c in searches]},
        {"content": words["open"], "commands": opening,
         "webfetch": [{"url": opens[0]["arguments"]["url"],
                       "prompt": "Quote the passage that supports: " + records[0]["arguments"]["excerpt"]}]},
        {"commands": [{"command": "omnidr-skill evidence add " + _flags(c["arguments"]),
                       "description": f"Record evidence {i + 1}"} for i, c in enumerate(records)]},
        {"commands": [{"command": f"omnidr-skill evidence list > {WORK}/evidence.json", "description": "The evidence"},
                      {"command": "omnidr-skill research status", "description": "Where the research stands"}]},
        {"commands": [{"command": _heredoc(f"{WORK}/draft.json", json.dumps(data, ensure_ascii=False, indent=1),
                                           "OMNIDR_DRAFT") + "\n" + _heredoc(f"{WORK}/fill.py", FILL_PROGRAM, "OMNIDR_PY")
                                  + f"\npython3 {WORK}/fill.py && omnidr-skill report render --data {WORK}/data.json",
                       "description": "Write the report"}]},
        {"commands": [{"command": "omnidr-skill report check", "description": "Check the report"}]},
        {"content": words["final"], "final": True},
    ]
    return {"task": task_id, "match": script["match"], "model": script["model"],
            "note": "A scripted demonstration of the sandbox machinery, not a model's work.", "steps": shell}


def main(snapshot: Path) -> None:
    (HERE / "scripts" / "shell").mkdir(parents=True, exist_ok=True)
    for task_id in json.loads((snapshot / "snapshot.json").read_text("utf-8"))["tasks"]:
        script = build(snapshot, task_id)
        (HERE / "scripts" / f"{task_id}.json").write_text(json.dumps(script, ensure_ascii=False, indent=1) + "\n",
                                                           "utf-8")
        print(f"scripts/{task_id}.json: {len(script['steps'])} steps")
        episode = build_shell(snapshot, task_id, script)
        (HERE / "scripts" / "shell" / f"{task_id}.json").write_text(
            json.dumps(episode, ensure_ascii=False, indent=1) + "\n", "utf-8")
        print(f"scripts/shell/{task_id}.json: {len(episode['steps'])} steps")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "snapshots/demo"))
