"""A release-shaped copy of the VideoOdyssey demo (the authors' format: `VideoOdyssey_V.json`, `VideoOdyssey_AV.json`,
a video folder and a subtitle folder named after each video file), made from `snapshots/demo-odyssey` so that its
questions and videos are the demo's."""

import json
import os
from pathlib import Path

from testkit import ROOT

ODYSSEY = ROOT / "snapshots/demo-odyssey"
# two labels on a few questions: the official scorer counts a question in each of its types
EXTRA_TYPE = {"harbour-number-trend": "Numerical Reasoning", "workshop-step-order": "Temporal Ordering"}


def clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def make_release(folder: Path) -> dict[str, Path]:
    """Write the release into `folder`; returns the two annotation files by subset."""
    videos = {v["id"]: v for v in json.loads((ODYSSEY / "videos.json").read_text("utf-8"))["videos"]}
    (folder / "videos").mkdir(parents=True)
    (folder / "subtitles").mkdir()
    for vid, v in videos.items():
        os.link(ODYSSEY / v["file"], folder / "videos" / f"{vid}.mp4")
        os.link(ODYSSEY / v["subtitles"]["file"], folder / "subtitles" / f"{vid}.srt")
    files = {}
    for subset in ("V", "AV"):
        entries: dict[str, dict] = {}
        for task_id in json.loads((ODYSSEY / "snapshot.json").read_text("utf-8"))["tasks"]:
            t = json.loads((ODYSSEY / "tasks" / task_id / "task.json").read_text("utf-8"))
            if t["subset"] != subset:
                continue
            v = videos[t["video"]]
            entry = entries.setdefault(v["id"], {"video_id": v["id"], "video_path": f"{v['id']}.mp4",
                                                 "questions": [], "video_category": v["domain"].upper(),
                                                 "duration_minutes": round(v["duration_s"] / 60, 2)})
            q = {"question_id": task_id, "question": t["question"],
                 "options": [f"{letter}. {text}" for letter, text in zip("ABCD", t["options"], strict=True)],
                 "answer": t["answer"], "question_type": [t["task_type"].replace("_", " ").title()],
                 "time_reference": f"{clock(t['ccl']['start_s'])}-{clock(t['ccl']['end_s'])}"}
            if task_id in EXTRA_TYPE:
                q["question_type"].append(EXTRA_TYPE[task_id])
            if subset == "AV":
                q["audio_type"] = [t["audio_type"].title()]
            entry["questions"].append(q)
        files[subset] = folder / f"VideoOdyssey_{subset}.json"
        files[subset].write_text(json.dumps(list(entries.values()), indent=2), "utf-8")
    return files
