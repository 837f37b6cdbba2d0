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
                # the URL as fetch_url returned it: a source the agent could not open is not in the report
                sources.append({"id": url_id[s["url"]], "type": KIND.get(s["kind"], "web"),
                                "title": corpus[s["url"]]["title"], "url": {"$ref": f"open{len(url_id)}.url"},
                                "publisher": urlsplit(s["url"]).hostname, "date": s.get("published", ""),
                                "quote": s["quote"], "anchor_ids": []})

    # anchors: the video facts that outside evidence relates to
    targets = []
    for f in wfacts:
        for r in f.get("relations", []):
            if r["target"].startswith("V") and r["target"] not in targets:
                targets.append(r["target"])
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

    steps = [
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
# The "model's" programs of a shell episode: they fill the report draft from what the earlier commands
# read off the video (probe, subtitle track) and check the delivered folder. Paths come from the
# sandbox's environment (OMNIDR_VIDEO, OMNIDR_REPORT_DIR, OMNIDR_CONTRACT).
WORK = "/tmp/work"
WRITE_PROGRAM = r"""
import json, os, shutil
from pathlib import Path
report, contract = Path(os.environ["OMNIDR_REPORT_DIR"]), Path(os.environ["OMNIDR_CONTRACT"])
terms = json.loads((contract / "contract.json").read_text("utf-8"))
duration = float(json.load(open("WORK/probe.json"))["format"]["duration"])
cues = []
for block in open("WORK/transcript.vtt", encoding="utf-8").read().replace("\r", "").split("\n\n"):
    lines = [l.strip() for l in block.splitlines() if l.strip()]
    for i, line in enumerate(lines):
        if "-->" in line:
            cues.append(" ".join(lines[i + 1:]))
            break
def fill(v):
    if isinstance(v, dict):
        if "$cue" in v:
            return cues[v["$cue"]] if v["$cue"] < len(cues) else ""
        if "$duration" in v:
            return duration
        if "$join" in v:
            return "".join(str(fill(p)) for p in v["$join"])
        return {k: fill(x) for k, x in v.items()}
    return [fill(x) for x in v] if isinstance(v, list) else v
data = fill(json.load(open("WORK/draft.json", encoding="utf-8")))
data["contract"] = terms["version"]
report.mkdir(parents=True, exist_ok=True)
shutil.copyfile(os.environ["OMNIDR_VIDEO"], report / data["video"]["src"])
shutil.copyfile(contract / terms["template"], report / terms["entry"])
(report / terms["data_file"]).write_text("window.DATA = " + json.dumps(data, ensure_ascii=False, indent=1) + ";\n", "utf-8")
print(json.dumps({"written": sorted(p.name for p in report.iterdir()), "duration_s": duration, "cues": len(cues)}))
""".replace("WORK", WORK)
CHECK_PROGRAM = r"""
import html, json, os, re
from pathlib import Path
report, contract = Path(os.environ["OMNIDR_REPORT_DIR"]), Path(os.environ["OMNIDR_CONTRACT"])
terms = json.loads((contract / "contract.json").read_text("utf-8"))
problems = []
if (report / terms["entry"]).read_bytes() != (contract / terms["template"]).read_bytes():
    problems.append("index.html is not the template")
text = (report / terms["data_file"]).read_text("utf-8")
data = json.loads(text[text.index("=") + 1:].strip().rstrip(";"))
media = [m["src"] for seg in data["timeline"] for m in seg.get("media", [])] + [data["video"]["src"]]
problems += [f"missing {src}" for src in media if not (report / src).is_file()]
fetched = {}
for line in open("WORK/fetched.tsv", encoding="utf-8"):
    name, _, url = line.rstrip("\n").partition("\t")
    fetched[url] = name
def words(s):
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", s))).strip().lower()
for s in data["sources"]:
    name = fetched.get(s["url"])
    page = Path("WORK", name).read_text("utf-8", "replace") if name else ""
    if not name:
        problems.append(f"{s['id']}: {s['url']} was not fetched")
    elif words(s["quote"])[:60] not in words(page):
        problems.append(f"{s['id']}: quote not found in the fetched page")
print(json.dumps({"ok": not problems, "problems": problems, "sources": len(data["sources"])}))
""".replace("WORK", WORK)


def _shell_refs(value, urls: dict[str, str]):
    """The reference script's `$ref`s to tool results, as placeholders the write program fills; a fetched
    URL is the literal one (`urls`: fetch call id -> URL), and the brief's open questions are left out
    (the shell episodes play R2 only)."""
    if isinstance(value, dict):
        if "$join" in value:
            return {"$join": [_shell_refs(v, urls) for v in value["$join"] if not (isinstance(v, dict) and "$brief" in v)]}
        if set(value) == {"$given", "value"}:
            return _shell_refs(value["value"], urls)
        ref = value.get("$ref") if set(value) == {"$ref"} else None
        if ref and ref.split(".")[0] in urls:
            return urls[ref.split(".")[0]]
        if ref == "probe.duration_s":
            return {"$duration": True}
        if ref and ref.startswith("rw0.transcript."):
            return {"$cue": int(ref.split(".")[2])}
        if ref and ref.startswith("rw0.frames."):
            return f"frames/frame-{int(ref.split('.')[2]):02d}.jpg"
        return {k: _shell_refs(v, urls) for k, v in value.items()}
    if isinstance(value, list):
        return [_shell_refs(v, urls) for v in value]
    return value


def _heredoc(path: str, text: str, tag: str) -> str:
    return f"cat > {path} <<'{tag}'\n{text.strip()}\n{tag}"


def build_shell(snapshot: Path, task_id: str, script: dict) -> dict:
    """The shell episode of a task for a CLI harness: the same research as `script` (the reference
    agent's), done with ffprobe, ffmpeg, curl through the egress proxy and two small programs."""
    task = json.loads((snapshot / "tasks" / task_id / "task.json").read_text("utf-8"))
    words = TEXT[task["language"]]
    steps = {c["name"]: c for st in script["steps"] for c in st.get("tool_calls", [])}
    # (the shell episodes play R2, where every $given holds)
    urls = {c["id"]: c["arguments"]["url"] for st in script["steps"] for c in st.get("tool_calls", [])
            if c["name"] == "fetch_url"}
    data = _shell_refs(steps["write_report"]["arguments"]["data"], urls)
    data["video"]["src"] = "video.mp4"
    video = str(snapshot / "tasks" / task_id / task["video"]["file"])
    probe = _media.probe_video(video)
    times = _media.sample_times(0.0, min(probe["duration_s"], _media.WINDOW_S), steps["read_window"]["arguments"]["frames"])
    frames = " && ".join(f'ffmpeg -v error -y -ss {t:.3f} -i "$OMNIDR_VIDEO" -frames:v 1 -vf scale=640:-2 '
                         f'"$OMNIDR_REPORT_DIR/frames/frame-{k:02d}.jpg"' for k, t in enumerate(times))
    fetches = [f'curl -fsS -L --max-time 60 -o {WORK}/page-{i + 1}.txt -w "%{{http_code}} %{{url_effective}}\\n" '
               f"'{c['arguments']['url']}'"
               f" && printf 'page-{i + 1}.txt\\t{c['arguments']['url']}\\n' >> {WORK}/fetched.tsv"
               f" && head -c 600 {WORK}/page-{i + 1}.txt; echo"
               for i, c in enumerate(c for st in script["steps"] for c in st.get("tool_calls", []) if c["name"] == "fetch_url")]
    shell = [
        {"content": words["plan"], "commands": [{
            "command": f'mkdir -p {WORK} && ffprobe -v error -print_format json -show_format -show_streams "$OMNIDR_VIDEO"'
                       f" | tee {WORK}/probe.json",
            "description": "Probe the source video"}]},
        {"commands": [
            {"command": f'mkdir -p "$OMNIDR_REPORT_DIR/frames" && {frames} && ls -l "$OMNIDR_REPORT_DIR/frames"',
             "description": "Extract frames of the first window"},
            {"command": f'ffmpeg -v error -y -i "$OMNIDR_VIDEO" -map 0:s:0 -f webvtt {WORK}/transcript.vtt'
                        f" && cat {WORK}/transcript.vtt", "description": "Read the subtitle track"}],
         "load_tools": ["WebFetch"]},
        {"content": words["open"], "commands": [{"command": cmd, "description": f"Fetch source {i + 1}"}
                                               for i, cmd in enumerate(fetches)],
         "webfetch": [{"url": data["sources"][0]["url"],
                       "prompt": "Quote the passage that supports: " + data["sources"][0]["quote"]}]},
        {"commands": [{"command": _heredoc(f"{WORK}/draft.json", json.dumps(data, ensure_ascii=False, indent=1),
                                           "OMNIDR_DRAFT") + "\n" + _heredoc(f"{WORK}/write.py", WRITE_PROGRAM, "OMNIDR_PY")
                                  + f"\npython3 {WORK}/write.py", "description": "Write the report"}]},
        {"commands": [{"command": _heredoc(f"{WORK}/check.py", CHECK_PROGRAM, "OMNIDR_PY") + f"\npython3 {WORK}/check.py",
                       "description": "Check the report"}]},
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
