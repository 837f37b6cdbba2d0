"""The empty-report check of `omnidr snapshot validate`: every M atom is run against a valid but
content-free report (the contract's template, window.DATA with the task's request and video and
nothing else). An atom that awards credit there would reward an agent for delivering the bare
interface, so it is a snapshot error."""

import asyncio
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path

from omnidr.benchmark import Problem, ReferenceBudgets, Snapshot, Task
from omnidr.errors import UserError
from sandbox.models import CONTRACT_VERSION, ReportData

from ._browser import ChromiumBrowser, ProbeLimits
from ._probes import ProbeContext, probe_report


def content_free_report(folder: Path, template: Path, task: Task, video: Path | None,
                        entry: str = "index.html", data_file: str = "data.js") -> Path:
    """Write a valid report with no content for `task` into `folder` (the source video is linked
    or copied in when given). Returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, folder / entry)
    name = video.name if video is not None else "video.mp4"
    data = ReportData(
        contract=CONTRACT_VERSION, title="", language=task.language.value, query=task.query,
        video={"src": name, "duration_s": task.video.duration_s, "source_url": task.video.url},
        overview="", timeline=[], anchors=[], findings=[], sources=[],
    )
    (folder / data_file).write_text("window.DATA = " + json.dumps(data.model_dump(mode="json"), ensure_ascii=False, indent=2) + ";\n", "utf-8")
    if video is not None and video.is_file():
        try:
            os.link(video, folder / name)
        except OSError:
            shutil.copyfile(video, folder / name)
    return folder


async def _probe_all(snap: Snapshot, work: Path) -> list[Problem]:
    assert snap.contract is not None and snap.contract_file is not None
    contract = snap.contract
    template = (snap.root / snap.contract_file).parent / contract.template
    limits = ProbeLimits(load_timeout_s=20, report_timeout_s=60)

    async def one(browser: ChromiumBrowser, task_id: str, bundle) -> list[Problem]:
        m_atoms = [(i, a) for i, a in enumerate(bundle.rubric.atoms) if a.probe is not None]
        video = bundle.folder / bundle.task.video.file
        folder = content_free_report(work / task_id, template, bundle.task, video if video.is_file() else None,
                                     contract.entry, contract.data_file)
        context = ProbeContext(duration_s=bundle.task.video.duration_s, sections=tuple(contract.required_sections),
                               budgets=snap.hyperparameters.budgets if snap.hyperparameters else ReferenceBudgets())
        outcome = await probe_report(browser, folder, [a.probe for _, a in m_atoms], context, limits, contract.entry)
        problems = []
        for i, atom in m_atoms:
            result = outcome.result(atom.probe)
            credit = (result.status == "pass") == (atom.polarity.value == "yes")
            if credit and result.status != "error":
                problems.append(Problem(
                    "error", f"tasks/{task_id}/rubric.json", f"atoms[{i}].probe",
                    f"atom {atom.id} (probe '{atom.probe.name}') awards credit to a content-free report: {result.reason}",
                ))
        return problems

    tasks = [(t, b) for t, b in snap.tasks.items()
             if b.task is not None and b.rubric is not None and any(a.probe is not None for a in b.rubric.atoms)]
    if not tasks:
        return []
    problems: list[Problem] = []
    async with ChromiumBrowser() as browser:  # one context per task
        for task_id, bundle in tasks:
            problems += await one(browser, task_id, bundle)
    return problems


def _run_sync(coro):
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict = {}

    def worker() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def check_empty_reports(snap: Snapshot) -> list[Problem]:
    """Problems for every M atom that passes on the content-free report of its task."""
    if snap.contract is None or snap.contract_file is None:
        return []
    template = (snap.root / snap.contract_file).parent / snap.contract.template
    if not template.is_file():
        return []  # reported by the contract check
    with tempfile.TemporaryDirectory(prefix="omnidr-empty-report-") as tmp:
        try:
            return _run_sync(_probe_all(snap, Path(tmp)))
        except UserError as exc:
            return [Problem("error", snap.contract_file, "", f"the empty-report check could not run: {exc}")]
