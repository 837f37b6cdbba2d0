"""The multiple-choice kind: VideoOdyssey (paper 004). The direct harness gives the model the question and its
video frames; the option letter read from `/output/answer.json` is checked against the key (no judge); the board
is accuracy by CCL bin with the input-setting ablations (App. D.2, F.1)."""

from pathlib import Path

import click

from omnidr.benchmark import TaskFormat
from omnidr.errors import UserError

from .._videoodyssey import EXPORT as VIDEOODYSSEY
from ._answers import AnswerKind


class McqKind(AnswerKind):
    name = "mcq"
    task_format = TaskFormat.mcq
    default_harness = "direct"
    exports: tuple[str, ...] = (VIDEOODYSSEY,)  # the release's result format (`omnidr export videoodyssey`)

    def source_videos(self, snap) -> dict[str, Path]:
        """The videos of videos.json, which the questions share."""
        return {v.id: snap.root / v.file for v in snap.videos.values()}

    def ablations(self, chosen, snapshot: Path, task_ids: list[str], console, fmt: str) -> None:
        mcq_ablations(chosen, snapshot, task_ids, console, fmt)


def mcq_ablations(chosen, snapshot: Path, task_ids: list[str], console, fmt: str = "terminal") -> None:
    """Accuracy by CCL bin and the modality/window ablation tables (paper 004, App. D.2, F.1) over the multiple-choice
    systems given. The snapshot is `snapshot` when it is a multiple-choice one, else the one the first system was
    scored with."""
    from omnidr.benchmark import open_snapshot

    from ._answer_board import ablation_grids, answer_board, ccl_grid

    if open_snapshot(snapshot).kind is not TaskFormat.mcq:
        snapshot = Path(chosen[0].snapshot)
        if not (snapshot / "snapshot.json").is_file():
            raise UserError(f"the multiple-choice snapshot '{chosen[0].snapshot}' the systems were scored with is not "
                            "found from here; pass --snapshot PATH")
    board = answer_board(list(chosen), snapshot, task_ids)
    grids = ablation_grids(board, {c.label: c.folder.name for c in chosen})
    for grid in (ccl_grid(board), *grids.values()):
        if fmt == "markdown":
            click.echo("\n" + grid.markdown())
        else:
            console.print(grid.rich())
    if not grids:
        console.print("no ablation table: the systems do not differ in modality or window (direct-harness folders "
                      "are named direct-<MODALITY>-<NNN>f-<WINDOW>-<model>)", soft_wrap=True, markup=False)
