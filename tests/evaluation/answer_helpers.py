"""Short-answer snapshots and run folders made in a test with the real models (snapshot.json, task.json,
attempt.json, output/answer.json, output/trajectory.jsonl), as `omnidr snapshot` and `omnidr run` leave them."""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from eval_helpers import write_run

VIDEO = {"url": "https://example.org/v", "file": "video.mp4", "sha256": "0" * 64}

TASKS = {
    "bridge-span": dict(question="How long is the main span of the bridge in the video?", answer="1,280 m",
                        domain="technology", modalities=["text"], formats=["html", "pdf"],
                        access_types=["hypermedia_transitions"], duration_s=95.0),
    "falls-height": dict(question="How tall is the waterfall shown at the start?", answer="979 m",
                         domain="nature", modalities=["text", "image"], formats=["html"],
                         access_types=["observation"], duration_s=400.0),
    "museum-year": dict(question="In which year did the museum in the video open?", answer="1937",
                        domain="history", modalities=["text"], formats=["csv"], access_types=["declarative_queries"],
                        duration_s=1500.0),
    "river-length": dict(question="How long is the river the narrator follows?", answer="6,650 km",
                         domain="nature", modalities=["text"], formats=["pdf"], access_types=["artifact_transfer"],
                         duration_s=60.0),
    "ship-name": dict(question="What was the name of the ship in the archive footage?", answer="Endurance",
                      domain="history", modalities=["video"], formats=["mp4"], access_types=["temporal_indexing"],
                      duration_s=700.0),
}


def write_answer_snapshot(folder: Path, tasks: dict[str, dict] = TASKS) -> Path:
    from omnidr.benchmark import ShortAnswerProtocol, ShortAnswerTask, SnapshotInfo

    info = SnapshotInfo(name="answers-test", version="1", description="short-answer tasks made by a test",
                        task_kind="short_answer", tasks=list(tasks))
    folder.mkdir(parents=True)
    (folder / "snapshot.json").write_text(info.model_dump_json(indent=2), "utf-8")
    (folder / "hyperparameters.json").write_text(ShortAnswerProtocol().model_dump_json(indent=2), "utf-8")
    for task_id, t in tasks.items():
        task = ShortAnswerTask(id=task_id, question=t["question"], answer=t["answer"],
                               video={**VIDEO, "duration_s": t["duration_s"]}, domain=t["domain"],
                               modalities=t["modalities"], formats=t["formats"], access_types=t["access_types"])
        (folder / "tasks" / task_id).mkdir(parents=True)
        (folder / "tasks" / task_id / "task.json").write_text(task.model_dump_json(indent=2), "utf-8")
    return folder


def write_answer_run(run_dir: Path, snapshot: Path, tasks: list[str]) -> Path:
    return write_run(run_dir, tasks, snapshot=snapshot)


T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def trajectory_lines(calls: list[tuple[str, float, bool]]) -> str:
    """output/trajectory.jsonl in the common format: one agent turn per call (tool name, seconds it took, failed),
    each turn logged when the previous result came back, each result timestamped."""
    from omnidr.trajectory import AgentStep, Observation, ToolCall

    lines, now = [], T0
    for i, (name, seconds, failed) in enumerate(calls, start=1):
        done = now + timedelta(seconds=seconds)
        step = AgentStep(index=i, timestamp=now, tool_calls=[ToolCall(id=f"c{i}", name=name, arguments={"q": i})],
                         observations=[Observation(tool_call_id=f"c{i}", content="error: 404" if failed else "ok",
                                                   is_error=failed, timestamp=done)])
        lines.append(step.model_dump_json())
        now = done
    lines.append(AgentStep(index=len(calls) + 1, timestamp=now, message="The answer.").model_dump_json())
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Spent:
    """What an attempt used: tokens (input, output), its wall time, and the budget limit it hit (None: none)."""

    tokens: tuple[int, int] = (0, 0)
    wall_time_s: float = 60.0
    exhausted: str | None = None


def write_answer_attempt(run_dir: Path, task_id: str, n: int, reason: str, answer: dict | None = None,
                         calls: list[tuple[str, float, bool]] | None = None, spent: Spent = Spent(),
                         detail: str = "") -> Path:
    """An attempt folder: output/answer.json (an AnswerFile of `answer`, none when None), the trajectory of
    `calls`, and attempt.json last."""
    tokens, wall_time_s, exhausted = spent.tokens, spent.wall_time_s, spent.exhausted
    from omnidr.attempts import AttemptReason, AttemptRecord, BudgetUse, SandboxLimits
    from sandbox.models import AnswerFile, Budget

    folder = run_dir / "attempts" / task_id / str(n)
    (folder / "output").mkdir(parents=True)
    if answer is not None:
        (folder / "output" / "answer.json").write_text(AnswerFile(**answer).model_dump_json(indent=2), "utf-8")
    if calls is not None:
        (folder / "output" / "trajectory.jsonl").write_text(trajectory_lines(calls), "utf-8")
    record = AttemptRecord(
        task_id=task_id, attempt=n, harness="command", command=["python3", "agent.py"], reason=AttemptReason(reason),
        detail=detail, exit_code=0, started_at=T0, ended_at=T0 + timedelta(seconds=wall_time_s),
        wall_time_s=wall_time_s, budget=Budget(), budget_use=BudgetUse(input_tokens=tokens[0], output_tokens=tokens[1],
                                                                   exhausted=exhausted),
        limits=SandboxLimits(), proxy_mode="replay",
    )
    (folder / "attempt.json").write_text(record.model_dump_json(indent=2), "utf-8")
    return folder
