"""`omnidr export videoodyssey`: a system's answers on an imported VideoOdyssey snapshot in the release's result
format, which the authors' scorer (`scripts/test_acc.py` of `maifoundations/VideoOdyssey`) reads unchanged; and the
official accuracy as that scorer computes it.

The result format is the release annotation itself with `predicted_answer` added to each question: what the
authors' runner would have read from the reply (`official_letter`: a letter, `"Error"` where its rules find none,
`"API_Error"` where the attempt delivered no reply). A question the run did not ask gets no `predicted_answer`.

The official scorer counts a prediction that is not exactly one of A-D as invalid: it is left out of the
denominator (counted as `invalid_prediction`), not counted wrong, where our leaderboard counts it wrong. It breaks
accuracy down by the video's category, each question type (a question with two types counts in both), the audio
type, the video's stated duration (`[60, 90)`, `[90, 120)`, `[120, 180)`, `[180, 270)` min, else `Other/Short`)
and the certificate length from `time_reference` (our `CCL_BINS`; an unreadable reference counts as 0 min).
"""

import copy
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnidr._files import write_atomic
from omnidr.benchmark import OTHER_DURATION, certificate_bin, duration_bin, open_snapshot
from omnidr.errors import UserError
from omnidr.media import release_file
from omnidr.paths import EvalPaths, RunPaths
from sandbox.models import OPTION_LETTERS

EXPORT = "videoodyssey"
"""This export's name, as `omnidr export` spells it and a kind lists it in `exports` (the multiple-choice kind)."""


@dataclass
class Tally:
    correct: int = 0
    total: int = 0

    @property
    def accuracy(self) -> float | None:
        return 100.0 * self.correct / self.total if self.total else None


@dataclass
class OfficialAccuracy:
    """Accuracy as the authors' scorer computes it from a result file."""

    overall: Tally = field(default_factory=Tally)
    invalid: int = 0
    breakdowns: dict[str, dict[str, Tally]] = field(default_factory=dict)


def _minutes(label: str) -> str:
    return label if label == OTHER_DURATION else f"{label} min"  # the scorer's own spelling of its bins


def _labels(value: Any, default: str) -> list[str]:
    items = value if isinstance(value, list) else [value] if value not in (None, "") else []
    return [str(v) for v in items if str(v).strip()] or [default]


def official_accuracy(annotation: list[dict]) -> OfficialAccuracy:
    """The official accuracy of a result file (`annotation` with `predicted_answer` per question)."""
    out = OfficialAccuracy(breakdowns={name: defaultdict(Tally) for name in (
        "video_category", "question_type", "audio_type", "duration", "certificate_length")})
    with_audio = any("audio_type" in q for v in annotation for q in v.get("questions", []))
    for video in annotation:
        for q in video.get("questions", []):
            predicted = str(q.get("predicted_answer") or "").strip().upper()
            if predicted not in OPTION_LETTERS:  # the authors' scorer counts exactly these as valid
                out.invalid += 1
                continue
            hit = int(predicted == str(q.get("answer", "")).strip().upper())
            groups = {"video_category": [str(video.get("video_category") or "Unknown")],
                      "question_type": _labels(q.get("question_type"), "Unknown"),
                      "duration": [_minutes(duration_bin(float(video.get("duration_minutes") or 0)))],
                      "certificate_length": [certificate_bin(str(q.get("time_reference") or "")) + " min"]}
            if with_audio:
                groups["audio_type"] = _labels(q.get("audio_type"), "Unknown")
            out.overall.correct += hit
            out.overall.total += 1
            for name, labels in groups.items():
                for label in labels:
                    out.breakdowns[name][label].correct += hit
                    out.breakdowns[name][label].total += 1
    out.breakdowns = {name: dict(groups) for name, groups in out.breakdowns.items() if groups}
    return out


@dataclass
class Export:
    path: Path
    questions: int
    asked: int
    no_reply: int
    unread: int
    accuracy: OfficialAccuracy


def _system_folder(root: Path, system: str) -> Path:
    if EvalPaths(root).system(system).eval_config.is_file():
        return root / system
    board = root / "leaderboard.json"
    systems = json.loads(board.read_text("utf-8")).get("systems", {}) if board.is_file() else {}
    if system in systems:
        return root / systems[system]
    known = [s.root.name for s in EvalPaths(root).systems()]
    raise UserError(f"{root}: no system {system!r}; pass a system folder name or leaderboard label "
                    f"({', '.join(known) or 'none scored here'})")


def export_videoodyssey(root: Path, system: str, out: Path, snapshot: Path | None = None) -> Export:
    """Write `system`'s answers in the release's result format to `out`."""
    from omnidr.evaluation import OFFICIAL_NO_REPLY, OFFICIAL_UNREAD, official_letter, read_answer_run

    from .kinds import folder_kind
    from .kinds._answer_board import read_answer_system

    folder = _system_folder(root, system)
    scored = read_answer_system(folder)
    if isinstance(scored, str):
        raise UserError(f"{folder}: cannot be exported: {scored}")
    if EXPORT not in folder_kind(folder).exports:
        raise UserError(f"{folder}: holds {scored.task_kind} answers; only a multiple-choice run exports to VideoOdyssey")
    snap_path = snapshot or Path(scored.snapshot)
    if not (snap_path / "snapshot.json").is_file():
        raise UserError(f"the run's snapshot {snap_path} is not found from here; pass --snapshot PATH")
    snap = open_snapshot(snap_path)
    annotation = json.loads(release_file(snap.root).read_text("utf-8"))
    _, evaluations = read_answer_run(RunPaths(folder).evaluation)
    by_task = {e.task_id: e for e in evaluations}
    by_release = {b.mcq.release.question_id: task_id for task_id, b in snap.tasks.items()
                  if b.mcq is not None and b.mcq.release is not None}
    result = copy.deepcopy(annotation)
    asked = no_reply = unread = total = 0
    for video in result:
        for q in video.get("questions", []):
            total += 1
            task_id = by_release.get(str(q.get("question_id")))
            evaluation = by_task.get(task_id) if task_id else None
            if evaluation is None:
                continue
            asked += 1
            letter = evaluation.official_answer or official_letter(evaluation.answer)
            q["predicted_answer"] = letter
            no_reply += letter == OFFICIAL_NO_REPLY
            unread += letter == OFFICIAL_UNREAD
    write_atomic(out, json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    return Export(out, total, asked, no_reply, unread, official_accuracy(result))
