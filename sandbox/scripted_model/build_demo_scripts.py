"""Developer tool: regenerate `scripts/<task>.json` for the demo snapshot.

    python -m sandbox.scripted_model.build_demo_scripts snapshots/demo

The script of a task plays a careful model: probe the video, read its window (frames and transcript),
search, open every source it cites, record evidence with the verbatim quotes, write window.DATA built
from the tool results (frame paths, duration and narration are `$ref`s to what the tools returned),
check the report and stop. The research content comes from the task's fact library, which only this
offline generator reads; the agent in the sandbox never sees it.
"""

import json
import sys
from pathlib import Path
from urllib.parse import urlsplit

from sandbox.reference_agent import _media

HERE = Path(__file__).parent
GOAL = {"support": "verify", "contradiction": "verify", "update": "update", "explanation": "explain",
        "comparison": "compare", "application": "apply"}
KIND = {"webpage": "web", "document": "document", "video": "video", "image": "image"}
TEXT = {
    "en": {"narration": " Narration: ", "final": "The report is written and passes its checks.",
           "video_says": "What the video shows and says: ", "outside": "What outside evidence adds: ",
           "plan": "Plan: probe the video, read its window, research each anchor, write and check the report.",
           "open": "Opening every source before citing it.", "frame": "Frame at {}"},
    "zh": {"narration": " 旁白：", "final": "报告已写好并通过检查。", "video_says": "视频展示与讲述的内容：",
           "outside": "外部证据补充的内容：", "plan": "计划：探测视频、读取时间窗、逐个锚点检索、写报告并检查。",
           "open": "引用前先打开每个来源。", "frame": "{} 处的画面"},
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


def build(snapshot: Path, task_id: str) -> dict:
    task = json.loads((snapshot / "tasks" / task_id / "task.json").read_text("utf-8"))
    facts = json.loads((snapshot / "tasks" / task_id / "facts.json").read_text("utf-8"))["facts"]
    corpus = {p["url"]: p for p in json.loads((snapshot / "web" / "corpus.json").read_text("utf-8"))["pages"]}
    lang = task["language"]
    words = TEXT[lang]
    video = str(snapshot / "tasks" / task_id / task["video"]["file"])
    probe = _media.probe_video(video)
    duration = probe["duration_s"]
    _src, cues = _media.transcript(video, probe["subtitles"])
    frames = 6
    frame_times = _media.sample_times(0.0, min(duration, _media.WINDOW_S), frames)
    vfacts = [f for f in facts if f["origin"] == "video"]
    wfacts = [f for f in facts if f["origin"] == "web" and f.get("sources")]

    # timeline: one segment per transcript cue, from its start (floored) to the next one; the whole video
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

    # sources: every URL cited by a fact, opened before it is cited
    sources, url_id = [], {}
    for f in wfacts:
        for s in f["sources"]:
            if s["url"] not in url_id:
                url_id[s["url"]] = f"S{len(url_id) + 1}"
                sources.append({"id": url_id[s["url"]], "type": KIND.get(s["kind"], "web"),
                                "title": corpus[s["url"]]["title"], "url": s["url"],
                                "publisher": urlsplit(s["url"]).hostname, "date": s.get("published", ""),
                                "quote": s["quote"], "anchor_ids": []})

    # anchors: the video facts that outside evidence relates to
    targets = []
    for f in wfacts:
        for r in f.get("relations", []):
            if r["target"].startswith("V") and r["target"] not in targets:
                targets.append(r["target"])
    vby = {f["id"]: f for f in vfacts}
    anchors, findings = [], []
    for n, vid in enumerate(sorted(targets, key=lambda v: (vby[v]["video_ref"]["start_s"], v)), 1):
        v = vby[vid]
        rels = [(f, r["type"]) for f in wfacts for r in f.get("relations", []) if r["target"] == vid]
        aid = f"A{n}"
        anchors.append({"id": aid, "time_s": float(v["video_ref"]["start_s"]), "label": v["claim"],
                        "goal": GOAL[rels[0][1]]})
        claims = []
        for f, rel in rels:
            cites = [url_id[s["url"]] for s in f["sources"]]
            for sid in cites:
                src = next(s for s in sources if s["id"] == sid)
                if aid not in src["anchor_ids"]:
                    src["anchor_ids"].append(aid)
            claims.append({"text": f["claim"], "citations": cites, "video_times_s": [float(v["video_ref"]["start_s"])],
                           "relation": rel})
        findings.append({"id": f"F{n}", "title": v["claim"][:90], "anchor_ids": [aid],
                         "summary": " ".join(c["text"] for c in claims), "claims": claims})

    good = snapshot / "reports" / task_id / "good" / "data.js"
    if good.is_file():
        overview = json.loads(good.read_text("utf-8").split("=", 1)[1].strip().rstrip(";"))["overview"]
    else:
        lead = [f"{c['text']} ({_fmt(c['video_times_s'][0])}, {c['relation']})" for fd in findings for c in fd["claims"]]
        overview = (words["video_says"] + " ".join(f["claim"] for f in vfacts) + "\n\n" + words["outside"]
                    + " ".join(lead))

    data = {"title": task["title"], "language": lang, "query": task["query"],
            "video": {"src": "video.mp4", "duration_s": {"$ref": "probe.duration_s"}, "source_url": task["video"]["url"]},
            "overview": overview, "timeline": timeline, "anchors": anchors, "findings": findings, "sources": sources}

    steps = [
        {"content": words["plan"], "tool_calls": [{"id": "probe", "name": "probe_video", "arguments": {}}]},
        {"tool_calls": [{"id": "rw0", "name": "read_window", "arguments": {"index": 0, "frames": frames}}]},
        {"tool_calls": [{"id": f"q{i + 1}", "name": "search_web", "arguments": {"query": q}}
                        for i, q in enumerate(QUERIES.get(task_id, [task["title"]]))]},
        {"content": words["open"], "tool_calls": [{"id": f"open{i + 1}", "name": "fetch_url", "arguments": {"url": s["url"]}}
                                                  for i, s in enumerate(sources)]},
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


def main(snapshot: Path) -> None:
    (HERE / "scripts").mkdir(exist_ok=True)
    for task_id in json.loads((snapshot / "snapshot.json").read_text("utf-8"))["tasks"]:
        script = build(snapshot, task_id)
        (HERE / "scripts" / f"{task_id}.json").write_text(json.dumps(script, ensure_ascii=False, indent=1) + "\n",
                                                           "utf-8")
        print(f"scripts/{task_id}.json: {len(script['steps'])} steps")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "snapshots/demo"))
