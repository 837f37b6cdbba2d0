"""Loading a snapshot folder into its models, with every problem named by file and field path."""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ValidationError

from sandbox.models import CORPUS_FILE, ShortAnswerProtocol, WebCorpus

from ._calibration import CALIBRATION_FILE, Calibration
from ._contract import ReportContract
from ._facts import FactLibrary
from ._hyperparameters import Hyperparameters
from ._kinds import TaskFormat, kind_name, task_format
from ._mcq import VIDEOS_FILE, McqProtocol, McqTask, McqVideo, McqVideos
from ._review import REVIEW_FILE, WarningReviews
from ._rubric import RubricTree
from ._short_answer import ShortAnswerTask
from ._snapshot_info import SnapshotInfo
from ._task import SourceVideo, Task

SNAPSHOT_FILE = "snapshot.json"
HYPERPARAMETERS_FILE = "hyperparameters.json"
SNAPSHOT_CORPUS_FILE = f"web/{CORPUS_FILE}"

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Problem:
    """One finding about a snapshot: where it is and what is wrong."""

    severity: Literal["error", "warning"]
    file: str  # path relative to the snapshot root
    path: str  # field path inside the file ("" for the whole file)
    message: str

    def line(self) -> str:
        where = f"{self.file}: {self.path}: " if self.path else f"{self.file}: "
        return f"{self.severity}: {where}{self.message}"


@dataclass
class TaskBundle:
    """The files of one task, as models (None where a file failed to load). A report task has `task`, `facts`
    and `rubric`; a short-answer task has `question` only; a multiple-choice task has `mcq` only (its video is
    the snapshot's, `Snapshot.videos`)."""

    folder: Path
    task: Task | None
    facts: FactLibrary | None
    rubric: RubricTree | None
    question: ShortAnswerTask | None = None
    mcq: McqTask | None = None

    @property
    def answer_task(self) -> ShortAnswerTask | McqTask | None:
        """The question of a task answered in `/output/answer.json` (None for a report task, or when it did not
        load)."""
        return self.question or self.mcq

    @property
    def video(self) -> SourceVideo | None:
        """The task's source video, of a report or short-answer task (a question's is in `Snapshot.videos`)."""
        item = self.task or self.question
        return item.video if item is not None else None


@dataclass
class Snapshot:
    """A loaded snapshot. `problems` holds load errors; a snapshot with none is usable."""

    root: Path
    info: SnapshotInfo | None
    hyperparameters: Hyperparameters | None  # of a report snapshot
    contract: ReportContract | None
    corpus: WebCorpus | None
    contract_file: str | None = None
    tasks: dict[str, TaskBundle] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    reviews: WarningReviews | None = None  # reviewed-warnings.json, when the snapshot has one
    calibration: Calibration | None = None  # calibration.json, when the snapshot has one
    protocol: ShortAnswerProtocol | None = None  # hyperparameters.json of a short-answer snapshot
    mcq_protocol: McqProtocol | None = None  # hyperparameters.json of a multiple-choice snapshot
    videos: dict[str, McqVideo] = field(default_factory=dict)  # videos.json of a multiple-choice snapshot

    def default_budget(self):
        """The attempt budget the snapshot's protocol gives when the user names none (short answers: paper 002,
        Sec. 3.1; questions: one request), None for a report snapshot (the run's own default)."""
        if self.protocol is not None:
            return self.protocol.budget()
        if self.mcq_protocol is not None:
            return self.mcq_protocol.budget()
        return None

    def mcq_video(self, task_id: str) -> McqVideo | None:
        """The video a multiple-choice question is about, None when it or the question did not load."""
        bundle = self.tasks.get(task_id)
        return self.videos.get(bundle.mcq.video) if bundle is not None and bundle.mcq is not None else None

    @property
    def kind(self) -> TaskFormat:
        """The task format of the snapshot's tasks (a registered kind's is the built-in format it builds on)."""
        return (task_format(self.info.task_kind) or TaskFormat.report) if self.info is not None else TaskFormat.report

    @property
    def kind_name(self) -> str:
        """The kind the snapshot declares (`snapshot.json`'s `task_kind`), as the kinds registry knows it."""
        return kind_name(self.info.task_kind) if self.info is not None else TaskFormat.report.value

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)


def field_path(loc: tuple) -> str:
    """Render a pydantic error location as `atoms[3].direction`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def load_model(root: Path, rel: str, model: type[M], problems: list[Problem]) -> M | None:
    """Parse one JSON file into `model`; on failure append problems and return None."""
    path = root / rel
    if not path.is_file():
        problems.append(Problem("error", rel, "", "file is missing"))
        return None
    try:
        data = json.loads(path.read_text("utf-8"))
    except UnicodeDecodeError:
        problems.append(Problem("error", rel, "", "file is not UTF-8 text"))
        return None
    except json.JSONDecodeError as exc:
        problems.append(Problem("error", rel, f"line {exc.lineno} column {exc.colno}", f"malformed JSON: {exc.msg}"))
        return None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            problems.append(Problem("error", rel, field_path(err["loc"]), err["msg"]))
        return None


@dataclass(frozen=True)
class _Layout:
    """How the tasks of one format are stored: the model of `hyperparameters.json` and the `Snapshot` field it
    fills; for a question format, the model of its one `task.json` and the `TaskBundle` field it fills (a report
    task is three files: task, facts and rubric)."""

    protocol: type[BaseModel]
    protocol_field: str
    question: type[ShortAnswerTask] | type[McqTask] | None = None
    question_field: str = ""


_LAYOUTS: dict[TaskFormat, _Layout] = {
    TaskFormat.report: _Layout(Hyperparameters, "hyperparameters"),
    TaskFormat.short_answer: _Layout(ShortAnswerProtocol, "protocol", ShortAnswerTask, "question"),
    TaskFormat.mcq: _Layout(McqProtocol, "mcq_protocol", McqTask, "mcq"),
}


def _question_bundle(root: Path, folder: Path, task_id: str, layout: _Layout, problems: list[Problem]) -> TaskBundle:
    """A short-answer or multiple-choice task: one task.json, whose id must be its folder's name."""
    base = f"tasks/{task_id}"
    assert layout.question is not None
    loaded = load_model(root, f"{base}/task.json", layout.question, problems)
    if loaded is not None and loaded.id != task_id:
        problems.append(Problem("error", f"{base}/task.json", "id", f"'{loaded.id}' differs from its folder "
                                f"name '{task_id}'"))
    bundle = TaskBundle(folder, None, None, None)
    setattr(bundle, layout.question_field, loaded)
    return bundle


def load_snapshot(root: Path | str) -> Snapshot:
    """Load every file of the snapshot at `root`. Never raises for content problems:
    they are collected in `Snapshot.problems`. Raises FileNotFoundError if `root` is
    not a folder with a snapshot.json."""
    root = Path(root)
    if not (root / SNAPSHOT_FILE).is_file():
        raise FileNotFoundError(f"{root}: not a snapshot folder (no {SNAPSHOT_FILE})")
    problems: list[Problem] = []
    info = load_model(root, SNAPSHOT_FILE, SnapshotInfo, problems)
    kind = (task_format(info.task_kind) or TaskFormat.report) if info is not None else TaskFormat.report
    layout = _LAYOUTS[kind]
    protocol = load_model(root, HYPERPARAMETERS_FILE, layout.protocol, problems)
    corpus = load_model(root, SNAPSHOT_CORPUS_FILE, WebCorpus, problems) if (root / SNAPSHOT_CORPUS_FILE).exists() else None
    contract = None
    snap = Snapshot(root, info, None, None, corpus, problems=problems)
    setattr(snap, layout.protocol_field, protocol)
    if kind.shared_videos:
        videos = load_model(root, VIDEOS_FILE, McqVideos, problems)
        snap.videos = {v.id: v for v in videos.videos} if videos is not None else {}
    if (root / REVIEW_FILE).exists():
        snap.reviews = load_model(root, REVIEW_FILE, WarningReviews, problems)
    if (root / CALIBRATION_FILE).exists():
        snap.calibration = load_model(root, CALIBRATION_FILE, Calibration, problems)
    if info is None:
        return snap
    contract_refs: set[str] = set()
    seen: set[str] = set()
    for i, task_id in enumerate(info.tasks):
        if task_id in seen:
            problems.append(Problem("error", SNAPSHOT_FILE, f"tasks[{i}]", f"duplicate task id '{task_id}'"))
            continue
        seen.add(task_id)
        folder = root / "tasks" / task_id
        if not folder.is_dir():
            problems.append(Problem("error", SNAPSHOT_FILE, f"tasks[{i}]", f"task folder tasks/{task_id}/ is missing"))
            continue
        if layout.question is not None:  # one task.json per question
            snap.tasks[task_id] = _question_bundle(root, folder, task_id, layout, problems)
            continue
        base = f"tasks/{task_id}"
        task = load_model(root, f"{base}/task.json", Task, problems)
        facts = load_model(root, f"{base}/facts.json", FactLibrary, problems)
        rubric = load_model(root, f"{base}/rubric.json", RubricTree, problems)
        snap.tasks[task_id] = TaskBundle(folder, task, facts, rubric)
        if task is not None:
            contract_refs.add(task.contract)
    for ref in sorted(contract_refs):
        contract = load_model(root, ref, ReportContract, problems)
        snap.contract_file = ref
    if len(contract_refs) > 1:
        problems.append(Problem("warning", SNAPSHOT_FILE, "tasks", "tasks reference more than one report contract"))
    snap.contract = contract
    return snap
