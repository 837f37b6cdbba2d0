"""The report contract: the interface template the agent fills and the schema of its `window.DATA`.

The agent writes `report/data.js` (``window.DATA = {...};``) next to a copy of the template
`report/index.html`; the template renders the two-pane report from that object. The JSON
schema of `window.DATA` is generated from :class:`ReportData`; there is no hand-written copy.
"""

import json
from pathlib import Path

from pydantic import Field, ValidationError

from sandbox.models import (
    ReportData,
    data_js_body,
)

from ._base import Record


class ReportContract(Record):
    """`contract/contract.json` in a snapshot: what every report must be."""

    version: str = Field(description="Contract version; window.DATA.contract must equal it.")
    template: str = Field(description="Interface template (HTML), relative to the contract file.")
    data_file: str = Field("data.js", description="File in the report folder that assigns window.DATA.")
    entry: str = Field("index.html", description="Report entry page in the report folder.")
    required_sections: list[str] = Field(description="Element ids the rendered report must contain.")
    description: str = Field(description="What the report must contain, in words, for agents.")


def data_schema() -> dict:
    """JSON schema of `window.DATA`, generated from :class:`ReportData`."""
    return ReportData.model_json_schema()


class ReportDataError(ValueError):
    """A report's data file is missing, not a `window.DATA = {...};` assignment, or invalid."""


def read_report_data(report_dir: Path, data_file: str = "data.js") -> ReportData:
    """Read `window.DATA` from a report folder without a browser (the file must be a plain
    JSON assignment, as the contract asks) and validate it against :class:`ReportData`."""
    path = report_dir / data_file
    if not path.is_file():
        raise ReportDataError(f"{path}: missing")
    body = data_js_body(path.read_text("utf-8", "replace"))
    if body is None:
        raise ReportDataError(f"{path}: expected `window.DATA = {{...}};`")
    try:
        return ReportData.model_validate_json(body)
    except ValidationError as exc:
        e = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in e["loc"]) or "window.DATA"
        raise ReportDataError(f"{path}: {where}: {e['msg']} ({exc.error_count()} problem(s))") from None


def is_skeleton(data: ReportData) -> bool:
    """An unfilled interface: no timeline note, no finding and no source record."""
    return not (data.timeline or data.findings or data.sources)


class ReportCheck(Record):
    """What the report check found in a delivered report folder (`check_report`)."""

    problem: str | None = Field(None, description="Why the folder does not count as a report; None when it does.")
    warnings: list[str] = Field(default_factory=list, description="Deviations from the contract the reader tolerates.")


MAX_DATA_BYTES = 64 * 1024 * 1024
"""The largest data file the report check reads (a report's data is text; the figures are files beside it)."""

SKELETON_PROBLEM = "an unfilled interface skeleton (no timeline note, finding or source record)"


def _filled(raw: dict) -> bool:
    """A `window.DATA` object read leniently has content: a non-empty timeline, findings or sources list."""
    return any(isinstance(raw.get(key), list) and raw[key] for key in ("timeline", "findings", "sources"))


def check_report(report_dir: Path, data_file: str = "data.js") -> ReportCheck:
    """The report check of paper App. F.1, made the same way at the end of an attempt and in the evaluator.

    A run succeeds "only when its final HTML report is recoverable and can be parsed by the evaluator", and
    unfilled interface skeletons "are counted as failures". So a report fails when its data file is missing or is
    not a `window.DATA = {...};` assignment of a JSON object, or when its interface is unfilled (no timeline note,
    finding or source record). A data object that deviates from the contract's schema but still reads as an object
    with content is a report: it succeeds with a warning naming the first deviation (the M atoms of the data's
    validity score it)."""
    path = report_dir / data_file
    if not path.exists() and not path.is_symlink():
        return ReportCheck(problem=f"not a valid report: {data_file}: missing")
    try:  # the folder is the agent's: the file must be a regular file inside it, of a size a report can have
        resolved = path.resolve(strict=True)
        inside = Path(report_dir).resolve() in resolved.parents
        size = resolved.stat().st_size if inside and resolved.is_file() else None
    except (OSError, RuntimeError) as exc:
        return ReportCheck(problem=f"not a valid report: {data_file}: {exc.__class__.__name__}")
    if not inside:
        return ReportCheck(problem=f"not a valid report: {data_file} points outside the report folder")
    if size is None:
        return ReportCheck(problem=f"not a valid report: {data_file} is not a regular file")
    if size > MAX_DATA_BYTES:
        return ReportCheck(problem=f"not a valid report: {data_file} is {size} bytes, above {MAX_DATA_BYTES}")
    body = data_js_body(resolved.read_text("utf-8", "replace"))
    if body is None:
        return ReportCheck(problem=f"not a valid report: {data_file}: expected `window.DATA = {{...}};`")
    try:
        data = ReportData.model_validate_json(body)
    except ValidationError as exc:
        try:
            raw = json.loads(body)
        except ValueError:
            raw = None
        if not isinstance(raw, dict):
            e = exc.errors(include_url=False)[0]
            return ReportCheck(problem=f"not a valid report: {data_file}: {e['msg']}")
        if not _filled(raw):
            return ReportCheck(problem=SKELETON_PROBLEM)
        e = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in e["loc"]) or "window.DATA"
        return ReportCheck(warnings=[f"{data_file} deviates from the contract ({where}: {e['msg']}; "
                                     f"{exc.error_count()} problem(s)); the evaluator reads it"])
    return ReportCheck(problem=SKELETON_PROBLEM if is_skeleton(data) else None)


def report_problem(report_dir: Path, data_file: str = "data.js") -> str | None:
    """Why a delivered report folder does not count as a report, or None (`check_report`'s problem)."""
    return check_report(report_dir, data_file).problem
