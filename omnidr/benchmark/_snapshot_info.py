"""`snapshot.json`: what a snapshot is and which shared data it was built against."""

from pydantic import Field

from ._base import Record


class SnapshotInfo(Record):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", description="Snapshot name, e.g. 'demo'.")
    version: str = Field(description="Snapshot version label chosen by its authors.")
    description: str = Field(description="What the snapshot holds.")
    tasks: list[str] = Field(min_length=1, description="Task ids; each has a folder `tasks/<id>/`.")
    inventory_version: str = Field(description="Version of the direction inventory the rubrics use.")
    probes_version: str = Field(description="Version of the probe catalog the M atoms use.")
    reports: dict[str, str] = Field(
        default_factory=dict,
        description="Example reports shipped for tests: label -> folder relative to the snapshot (e.g. 'good' -> reports/<task>/good).",
    )
