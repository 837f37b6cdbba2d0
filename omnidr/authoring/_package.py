"""An authoring package: a one-task snapshot folder with an `authoring/` folder that keeps every stage's inputs,
prompts, model calls, outputs and decisions (issue 43), and S0, which makes it.

    <package>/                      a snapshot (`omnidr snapshot validate` reads it as any other)
        snapshot.json hyperparameters.json contract/ web/
        tasks/<id>/                 task.json, the video, facts.json (S1c), rubric.json (S4)
        authoring/
            task-draft.json         S0's skeleton (TaskDraft)
            s0/ ... s6/             one folder per stage: record.json (inputs, prompts, outputs, decisions),
                                    the stage's files, and for the stages that run in the sandbox
                                    staging/ (the one-task snapshot the sandbox was given) and run/ (the run
                                    folder: instruction, gateway.jsonl, network.jsonl, the agent's output)
            report.json             the attrition trace and the package's fate (AuthoringReport)
"""

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnidr._files import write_atomic
from omnidr.benchmark import (
    HYPERPARAMETERS_FILE,
    SNAPSHOT_FILE,
    FactLibrary,
    Hyperparameters,
    RubricTree,
    SnapshotInfo,
    SourceVideo,
    Task,
    direction_inventory,
    open_snapshot,
    probe_catalog,
    sha256_file,
    taxonomy,
)
from omnidr.errors import UserError

from ._models import ROUTES, Budgets, TaskDraft

AUTHORING = "authoring"
DRAFT_FILE = "task-draft.json"
REPORT_FILE = "report.json"


def dump(path: Path, value: Any) -> None:
    """Write a model or plain JSON value atomically."""
    text = value.model_dump_json(indent=2) if hasattr(value, "model_dump_json") else json.dumps(
        value, ensure_ascii=False, indent=2)
    write_atomic(path, text + "\n")


@dataclass(frozen=True)
class Package:
    """The files of one package, named once."""

    root: Path

    @property
    def authoring(self) -> Path:
        return self.root / AUTHORING

    def stage(self, name: str) -> Path:
        return self.authoring / name

    @property
    def draft_file(self) -> Path:
        return self.authoring / DRAFT_FILE

    @property
    def report_file(self) -> Path:
        return self.authoring / REPORT_FILE

    def draft(self) -> TaskDraft:
        if not self.draft_file.is_file():
            raise UserError(f"{self.root}: not an authoring package (no {AUTHORING}/{DRAFT_FILE}); make one with "
                            "`omnidr author init VIDEO --request TEXT ... OUT`")
        return TaskDraft.model_validate_json(self.draft_file.read_text("utf-8"))

    def task_dir(self, draft: TaskDraft) -> Path:
        return self.root / "tasks" / draft.id

    def task(self, draft: TaskDraft) -> Task:
        return Task.model_validate_json((self.task_dir(draft) / "task.json").read_text("utf-8"))

    def hyperparameters(self) -> Hyperparameters:
        return Hyperparameters.model_validate_json((self.root / HYPERPARAMETERS_FILE).read_text("utf-8"))

    def read(self, stage: str, name: str, model):
        path = self.stage(stage) / name
        if not path.is_file():
            raise UserError(f"{path} is missing: run the stage that makes it first (`omnidr author --help` lists "
                            "them in order)")
        return model.model_validate_json(path.read_text("utf-8"))


def _link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        dst.hardlink_to(src)
    except OSError:
        shutil.copy2(src, dst)


def copy_tree(src: Path, dst: Path) -> None:
    """A copy, never links: a package's corpus and contract may be rewritten (`--web record`) without touching the
    snapshot they came from."""
    shutil.copytree(src, dst, dirs_exist_ok=True)


@dataclass(frozen=True)
class TaskRequest:
    """What S0 is asked to make: the user request, how the task is classified, its id and its routes."""

    request: str
    """The user request, in the task language."""
    language: str
    family: str
    subcategory: str
    """Subcategory id from the taxonomy."""
    query_form: str
    task_id: str
    video_url: str | None = None
    """Public URL of the video; None: the local file's path."""
    routes: list[str] | None = None
    """The S1b routes; None: all six of App. E.2."""


def init_package(video: Path, spec: TaskRequest, out: Path, like: Path, budgets: Budgets | None = None) -> TaskDraft:
    """S0, scope: the task skeleton. The video is probed (ffprobe) and hashed as a snapshot's is; the report
    contract, hyperparameters and web corpus (the S1b replay corpus offline) come from the snapshot `like`.

    Open in the paper, chosen here: a package holds one task (ARC's unit of review and exclusion is the task
    package, App. E.1); the title is the request's first sentence; the routes default to all six."""
    from omnidr.media import ProbeError, probe_video

    request, language, family, subcategory = spec.request, spec.language, spec.family, spec.subcategory
    query_form, task_id, video_url, routes = spec.query_form, spec.task_id, spec.video_url, spec.routes
    if out.exists() and any(out.iterdir()):
        raise UserError(f"{out} exists and is not empty; give a new folder for the package")
    if not video.is_file():
        raise UserError(f"{video}: no such video file")
    base = open_snapshot(like)
    if base.contract_file is None or base.hyperparameters is None:
        raise UserError(f"{like}: --like needs a report snapshot with a report contract and hyperparameters "
                        "(for example snapshots/demo)")
    sub = taxonomy().subcategory(subcategory)
    if sub is None or sub.family.value != family:
        raise UserError(f"subcategory {subcategory!r} is not one of family {family!r}'s; see "
                        "omnidr/benchmark/data/taxonomy.json")
    unknown = [r for r in routes or [] if r not in ROUTES]
    if unknown:
        raise UserError(f"unknown route(s) {', '.join(unknown)}; choose from {', '.join(ROUTES)}")
    try:
        probe = probe_video(video)
    except ProbeError as exc:
        raise UserError(str(exc)) from None
    draft = TaskDraft(id=task_id, request=request, language=language, family=family, subcategory=subcategory,
                      query_form=query_form, video_url=video_url or video.resolve().as_uri(),
                      routes=list(routes or ROUTES), budgets=budgets or Budgets())
    pkg = Package(out)
    contract_dir = (base.root / base.contract_file).parent
    copy_tree(contract_dir, out / "contract")
    shutil.copy2(base.root / HYPERPARAMETERS_FILE, out / HYPERPARAMETERS_FILE)
    if (base.root / "web").is_dir():
        copy_tree(base.root / "web", out / "web")
    folder = pkg.task_dir(draft)
    _link_or_copy(video, folder / f"video{video.suffix or '.mp4'}")
    file = folder / f"video{video.suffix or '.mp4'}"
    title = request.split(". ")[0].split("。")[0][:120]
    task = Task(id=task_id, title=title, language=draft.language, family=draft.family, subcategory=subcategory,
                query_form=draft.query_form, query=request,
                video=SourceVideo(url=draft.video_url, file=file.name, sha256=sha256_file(file), duration_s=probe.duration_s),
                contract=f"contract/{Path(base.contract_file).name}")
    dump(folder / "task.json", task)
    dump(folder / "facts.json", FactLibrary(task_id=task_id, facts=[]))
    dump(folder / "rubric.json", RubricTree(task_id=task_id, atoms=[]))
    dump(out / SNAPSHOT_FILE, SnapshotInfo(
        name=task_id, version="draft", description=f"Authoring package of task {task_id} (omnidr author, ARC S0-S6).",
        tasks=[task_id], inventory_version=direction_inventory().version, probes_version=probe_catalog().version))
    dump(pkg.draft_file, draft)
    dump(pkg.stage("s0") / "record.json", {
        "stage": "S0", "inputs": {"video": str(video), "request": request, "like": str(like)},
        "probe": probe.model_dump(), "outputs": [f"tasks/{task_id}/task.json", f"{AUTHORING}/{DRAFT_FILE}"]})
    return draft


def write_library(pkg: Package, draft: TaskDraft, library: FactLibrary) -> None:
    dump(pkg.task_dir(draft) / "facts.json", library)


def write_rubric(pkg: Package, draft: TaskDraft, rubric: RubricTree) -> None:
    dump(pkg.task_dir(draft) / "rubric.json", rubric)


def hyperparameters_kappa(pkg: Package) -> int:
    return int(pkg.hyperparameters().kappa)
