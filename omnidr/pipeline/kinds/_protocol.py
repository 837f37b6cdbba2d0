"""The task kind protocol: everything the pipeline, the archive, `compare`, `rescore` and tracking ask of a kind.

A kind is one module that implements `TaskKind` and is registered by name (`register_kind`); a snapshot declares
its kind in `snapshot.json` (`task_kind`). The kind builds on one of the built-in task formats
(`omnidr.benchmark.TaskFormat`: report, short_answer, mcq), which say how its tasks are loaded and validated, what
the agent is given and what it delivers (a report folder or `/output/answer.json`); the kind owns the rest: how a
delivery is evaluated, whether a kept evaluation is current, the score line, the leaderboard and its tables, the
MLflow metrics and the comparisons.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from omnidr.benchmark import TaskFormat

if TYPE_CHECKING:
    from rich.console import Console

    from .._checks import StageResult
    from .._specs import Endpoint


@dataclass(frozen=True)
class Scoring:
    """How a run's deliveries are evaluated: the snapshot, the judge endpoint, where the evaluator runs and the
    Docker network its judge step reaches out on."""

    snapshot: Path
    judge: "Endpoint"
    evaluator: str = "docker"
    outside_network: str | None = None
    progress: Callable[[str], None] = lambda _m: None


@runtime_checkable
class TaskKind(Protocol):
    """A task kind (see the module's docstring)."""

    name: str
    """The name snapshots declare (`snapshot.json`'s `task_kind`) and the registry knows the kind by."""
    task_format: TaskFormat
    """The built-in task format its snapshots use (task files, agent inputs, delivery)."""
    deliverable: str
    """What an attempt delivers, for a reader: `a report`, `an answer`."""
    default_harness: str
    """The harness `--harness auto` picks for it."""
    evaluates_in_image: bool
    """Whether `evaluate` uses the evaluator image (with `--evaluator docker`), so that the run builds it first; a
    kind whose check needs no browser and no judge key (say, exact match) evaluates in the driver's process."""

    @property
    def evaluator_version(self) -> str:
        """The version its evaluations carry; a kept evaluation of another version is made again."""
        ...

    example_reports: bool
    """Whether its snapshots ship example reports that the snapshot check reads and scores (the report kind)."""
    exports: tuple[str, ...]
    """The `omnidr export` formats its runs can be exported to (`videoodyssey` for multiple choice); an export
    refuses a run of a kind that does not list it."""

    def describe_tasks(self, snap: Any) -> str:
        """What the loaded snapshot's tasks hold, for the snapshot check's line (`42 atoms`)."""
        ...

    def source_videos(self, snap: Any) -> dict[str, Path]:
        """The source videos the snapshot check probes, by name."""
        ...

    def judge_key(self, judge: "Endpoint") -> str:
        """The key the evaluations of `judge` carry, known before any is made (a resumed run finds them by it)."""
        ...

    def evaluate(self, run_dir: Path, out_dir: Path, tasks: Sequence[str], scoring: Scoring) -> Any:
        """Evaluate the deliveries of `tasks` in the system folder `run_dir` into `out_dir` and return the summary
        (a `RunEvaluation`)."""
        ...

    def score_system(self, request: Any, spec: Any, folder: Path, task_ids: Sequence[str], progress: Any,
                     tracker: Any, out: Any) -> "StageResult":
        """Evaluate one system's attempts (or keep the current evaluations), track each in MLflow, fill
        `out.scored` and `out.evaluations`, and say how it went."""
        ...

    def build_board(self, root: Path, snapshot: Path, snapshot_id: str, key: str, task_ids: list[str],
                    traces: Path | None = None) -> tuple[Any, Any]:
        """The leaderboard of the run root's systems judged by `key`, and the results around it; (None, None)
        when no system is evaluated."""
        ...

    def write_board(self, root: Path, board: Any, results: Any) -> list[Path]:
        """Write the leaderboard, its tables and figures into `root`; the files written."""
        ...

    def system_metrics(self, row: Any, results: Any) -> dict[str, float | None]:
        """A leaderboard row as the MLflow metrics of the system's run."""
        ...

    def ranked_by(self, key: str) -> str:
        """How the board ranks, for the leaderboard stage's line (`judge KEY`, `accuracy, judge KEY`)."""
        ...

    def print_board(self, board: Any, run_root: Path | None, console: "Console") -> None:
        """Print the leaderboard (and its tables) as `omnidr eval` shows it."""
        ...

    deliveries: str
    """What its system folders hold, plural, for `compare`'s refusals: `reports`, `answers`."""
    compare_unreadable_hint: str
    """What `compare` adds to its refusal of a folder it cannot read as this kind's (after `run omnidr eval for it first`)."""
    compare_judges_differ: str
    """`compare`'s refusal of folders judged by different judges, with `{judges}` for their keys."""

    def read_system(self, folder: Path) -> Any:
        """A scored system folder of `omnidr eval` as its board and `compare` take it (label, folder, tasks, judge,
        config), or a string saying why it cannot be used."""
        ...

    def collect_systems(self, root: Path, judge_key: str, task_ids: list[str]) -> list[Any]:
        """The system folders of the run root `root` scored by `judge_key` on `task_ids`, as `read_system` reads
        them."""
        ...

    def compare_systems(self, chosen: list[Any], snapshot: Path, task_ids: list[str], under: Any, console: "Console",
                        fmt: str) -> Any:
        """`omnidr compare` of `chosen` (read by `read_system`), each paired with the first: print the tables and
        write them under `under.root` (a `ComparedUnder`: the run root, budget and judge they share)."""
        ...
