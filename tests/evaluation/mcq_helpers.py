"""A tiny multiple-choice snapshot (task kind `mcq`) made in a test with the real models: snapshot.json,
hyperparameters.json, videos.json (fake checksums: nothing here reads the videos) and tasks/<id>/task.json."""

from pathlib import Path

OPTIONS = ["A red square", "Two blue circles", "The narrator leaves", "Nothing changes"]

VIDEOS = {"harbour": "travel", "kitchen": "cooking"}

QUESTIONS = {
    # id: (video, subset, answer, dimension, audio type, CCL window start and end in seconds)
    "q-count": ("harbour", "V", "B", "perception", None, (10.0, 20.0)),
    "q-order": ("harbour", "AV", "C", "cognition", "speech", (60.0, 300.0)),
    "q-sum": ("kitchen", "V", "D", "summarization", None, (0.0, 1200.0)),
    "q-when": ("kitchen", "AV", "A", "temporal_grounding", "music", (100.0, 4000.0)),
}


def mcq_task(task_id: str, video: str, subset: str, answer: str, dimension: str, audio: str | None,
             window: tuple[float, float], task_type: str = "counting"):
    from omnidr.benchmark import McqTask

    return McqTask(id=task_id, video=video, subset=subset, question=f"Question {task_id}?", options=OPTIONS,
                   answer=answer, task_type=task_type, dimension=dimension, audio_type=audio,
                   ccl={"start_s": window[0], "end_s": window[1]})


def write_mcq_snapshot(folder: Path) -> Path:
    from omnidr.benchmark import McqProtocol, McqVideos, SnapshotInfo

    info = SnapshotInfo(name="mcq-test", version="1", description="multiple-choice questions made by a test",
                        task_kind="mcq", tasks=list(QUESTIONS))
    folder.mkdir(parents=True)
    (folder / "snapshot.json").write_text(info.model_dump_json(indent=2), "utf-8")
    (folder / "hyperparameters.json").write_text(McqProtocol().model_dump_json(indent=2), "utf-8")
    videos = McqVideos(videos=[{"id": v, "url": f"https://example.org/{v}", "file": f"videos/{v}.mp4",
                                "sha256": "0" * 64, "duration_s": 4000.0, "domain": domain, "subcategory": "misc"}
                               for v, domain in VIDEOS.items()])
    (folder / "videos.json").write_text(videos.model_dump_json(indent=2), "utf-8")
    for task_id, spec in QUESTIONS.items():
        (folder / "tasks" / task_id).mkdir(parents=True)
        (folder / "tasks" / task_id / "task.json").write_text(mcq_task(task_id, *spec).model_dump_json(indent=2),
                                                              "utf-8")
    return folder
