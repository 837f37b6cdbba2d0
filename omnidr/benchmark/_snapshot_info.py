"""`snapshot.json`: what a snapshot is and which shared data it was built against."""

from pydantic import Field, model_validator

from ._base import Record
from ._kinds import _FORMATS, TaskFormat, kind_name, task_format


class SnapshotInfo(Record):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", description="Snapshot name, e.g. 'demo'.")
    version: str = Field(description="Snapshot version label chosen by its authors.")
    description: str = Field(description="What the snapshot holds.")
    task_kind: TaskFormat | str = Field(TaskFormat.report, union_mode="left_to_right",
                                      description="What the tasks ask for: `report` (OmniDR-Bench, the default), "
                                      "`short_answer` (OpenDS-World), `mcq` (VideoOdyssey) or a registered kind's name.")
    tasks: list[str] = Field(min_length=1, description="Task ids; each has a folder `tasks/<id>/`.")
    inventory_version: str | None = Field(None, description="Version of the direction inventory the rubrics use "
                                                            "(report snapshots).")
    probes_version: str | None = Field(None, description="Version of the probe catalog the M atoms use (report "
                                                         "snapshots).")
    reports: dict[str, str] = Field(
        default_factory=dict,
        description="Example reports shipped for tests: label -> folder relative to the snapshot (e.g. 'good' -> reports/<task>/good).",
    )

    @model_validator(mode="after")
    def _kind_fields(self) -> "SnapshotInfo":
        fmt = task_format(self.task_kind)
        if fmt is None:
            raise ValueError(f"task kind {kind_name(self.task_kind)!r} is not supported yet; this sandbox runs "
                             f"{' and '.join(_FORMATS)} snapshots")
        if not fmt.delivers_answer:  # a report snapshot's rubrics name their inventory and probe catalog
            missing = [f for f in ("inventory_version", "probes_version") if getattr(self, f) is None]
            if missing:
                raise ValueError(f"a report snapshot names its {' and '.join(missing)}")
        elif self.inventory_version or self.probes_version or self.reports:
            raise ValueError(f"inventory_version, probes_version and reports belong to report snapshots, not to "
                             f"{kind_name(self.task_kind)}")
        return self
