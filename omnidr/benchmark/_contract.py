"""The report contract: the interface template the agent fills and the schema of its `window.DATA`.

The agent writes `report/data.js` (``window.DATA = {...};``) next to a copy of the template
`report/index.html`; the template renders the two-pane report from that object. The JSON
schema of `window.DATA` is generated from :class:`ReportData`; there is no hand-written copy.
"""

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


def report_problem(report_dir: Path, data_file: str = "data.js") -> str | None:
    """Why a delivered report folder does not count as a report, or None.

    Paper App. F: a run succeeds "only when its final HTML report is recoverable and can be parsed
    by the evaluator", and unfilled interface skeletons "are counted as failures". So the data must
    read and validate against the contract, and the interface must be filled."""
    try:
        data = read_report_data(report_dir, data_file)
    except ReportDataError as exc:
        return f"not a valid report: {str(exc).replace(str(report_dir / data_file), data_file)}"
    if is_skeleton(data):
        return "an unfilled interface skeleton (no timeline note, finding or source record)"
    return None
