"""How the suite is spread over pytest-xdist workers (`make test` runs `pytest -n N --dist loadgroup`).

A unit of work goes whole to one worker. Tests that share an expensive fixture form one unit, so the fixture
is made once and not once per worker: the tests of a module when they use a module-scoped fixture (an eval
run root, a decoded clip, a proxy lab), the tests of a session-scoped fixture other than the cheap per-worker
ones. Every other test is a unit of its own, handed to whichever worker is free. The units without a Docker
test go out first (they run while `make test` builds the images in the background), then the Docker units,
heaviest first (by their markers: Docker, then browser and media), so that the long end-to-end tests do not
come last.

While that build runs, a Docker unit goes out only once the images its tests need are done: a Docker test needs
the sandbox's images (base, gateway, egress) and those its `images` marks name (`pytest.mark.images("reference")`).
The build writes each image's result the moment it is done (`omnidr images build --results-dir`); the controller
hands a free worker the first unit in the order above whose images are all there (else the one with the fewest
still building), and a test's setup waits for its own images (tests/conftest.py), or fails at once, saying which
image, when the build did not make one.

The workers decide the units at collection, where the fixtures are known, and write them to a plan the
controller's scheduler reads. (xdist's own `xdist_group` marks do not reach its scheduler under pytest 9,
which no longer reads the node id xdist rewrites.)

How heavy a unit is comes from tests/durations.json, each test's seconds (setup, call and teardown) measured by a
whole run on the 2-core CI machine with the images built (`make test-durations` rewrites it); a test it does not
list yet weighs what its markers guess. The Docker units then go out longest first, so that the two workers
finish together instead of one waiting on the last long end-to-end test.
"""

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from xdist.scheduler import LoadScopeScheduling

# Session fixtures every worker may make for itself: cheap once the images exist (`make images`).
PER_WORKER = frozenset({"client", "images", "chromium", "tmp_path_factory"})
# How much a test weighs by its markers, in seconds, for a test tests/durations.json does not list (a guess).
MARKER_WEIGHTS = {"docker": 8, "browser": 2, "media": 2, "network": 1}
PLAN_KEY = "omnidr_plan"
DURATIONS = Path(__file__).with_name("durations.json")
DURATIONS_ENV = "OMNIDR_DURATIONS"
"""Another durations file to plan by (the tests of this module use it)."""
DURATIONS_OUT_ENV = "OMNIDR_DURATIONS_OUT"
"""Set to a file path, the run writes each test's seconds there (the controller, at the end)."""
IMAGES_ENV = "OMNIDR_IMAGES_RESULTS"
"""The folder where `make test`'s background image build writes each image's result when it is done (NAME.json),
and its exit code when it has ended (`exit`); noxfile.py sets it. Unset, nothing waits for an image."""
BUILD_LOG = ".nox/images-build.log"
SANDBOX_IMAGES = ("base", "gateway", "egress")
"""What every Docker test may use without saying so: the attempt sandbox's images."""


def measured() -> dict[str, float]:
    try:
        path = Path(os.environ.get(DURATIONS_ENV) or DURATIONS)
        return {k: float(v) for k, v in json.loads(path.read_text("utf-8")).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def shared_group(item: pytest.Item) -> str | None:
    """The unit a test must run in because it shares an expensive fixture, or None: it may run anywhere."""
    marker = item.get_closest_marker("xdist_group")
    if marker is not None:
        return str(marker.args[0] if marker.args else marker.kwargs.get("name", "default"))
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    group = None
    for name in item.fixturenames:
        defs = info.name2fixturedefs.get(name)
        if not defs or name in PER_WORKER:
            continue
        scope = defs[-1].scope
        if scope == "session":
            return f"session:{name}"
        if scope in ("package", "module", "class"):
            group = item.nodeid.split("::")[0]
    return group


def weight(item: pytest.Item, seconds: dict[str, float] | None = None) -> float:
    """The test's measured seconds, else its markers' guess."""
    if seconds and item.nodeid in seconds:
        return seconds[item.nodeid]
    return 1 + sum(w for name, w in MARKER_WEIGHTS.items() if item.get_closest_marker(name))


def images_of(item: pytest.Item) -> tuple[str, ...]:
    """The images a test needs: none unless it is marked `docker`; else the sandbox's, and those its `images`
    marks name (parents are built first, so an image's being done means its parents are)."""
    if item.get_closest_marker("docker") is None:
        return ()
    names = [*SANDBOX_IMAGES, *(str(n) for marker in item.iter_markers("images") for n in marker.args)]
    return tuple(dict.fromkeys(names))


class ImageBuild:
    """What the background image build has done so far, read from its results folder (IMAGES_ENV)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def from_env(cls) -> "ImageBuild | None":
        folder = os.environ.get(IMAGES_ENV)
        return cls(Path(folder)) if folder else None

    def exit_code(self) -> str | None:
        """The build's exit code, once it has ended."""
        try:
            return (self.folder / "exit").read_text("utf-8").strip()
        except OSError:
            return None

    def done(self) -> set[str]:
        """The images whose result is written (built, cached, skipped or failed)."""
        try:
            return {p.stem for p in self.folder.glob("*.json")}
        except OSError:
            return set()

    def pending(self, names: tuple[str, ...] | list[str]) -> list[str]:
        """Of `names`, those not done yet while the build still runs (none once it has ended)."""
        if self.exit_code() is not None:
            return []
        done = self.done()
        return [n for n in names if n not in done]

    def problem(self, names: tuple[str, ...] | list[str]) -> str | None:
        """Why one of `names` cannot be used (the build failed or skipped it, or ended without it), or None."""
        for name in names:
            try:
                result = json.loads((self.folder / f"{name}.json").read_text("utf-8"))
            except (OSError, ValueError):
                code = self.exit_code()
                if code is None:
                    continue
                return (f"the image build `make test` runs ended (exit code {code}) without the {name} image; "
                        f"see {BUILD_LOG}")
            if result.get("status") in ("failed", "skipped"):
                return (f"the {name} image was {result['status']} by the image build `make test` runs "
                        f"({result.get('reason')}); see {BUILD_LOG}")
        return None

    def wait(self, names: tuple[str, ...] | list[str], poll_s: float = 1.0) -> str | None:
        """Wait until each of `names` is done or the build has ended; then what `problem` says."""
        while self.pending(names):
            time.sleep(poll_s)
        return self.problem(names)


def plan_units(items: list[pytest.Item]) -> dict[str, str]:
    """Group the items into units, put the units in the order they go out (heaviest first, each unit's tests
    together and in their collected order), and return node id -> unit."""
    unit_of = {item.nodeid: shared_group(item) or item.nodeid for item in items}
    seconds = measured()
    unit_weight: dict[str, float] = {}
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        unit = unit_of[item.nodeid]
        unit_weight[unit] = unit_weight.get(unit, 0) + weight(item, seconds)
        first.setdefault(unit, index)
    docker = {unit_of[item.nodeid] for item in items if item.get_closest_marker("docker")}
    order = {id(item): index for index, item in enumerate(items)}
    # the units without a Docker test first: they run while `make test` builds the images in the background
    items.sort(key=lambda it: (unit_of[it.nodeid] in docker, -unit_weight[unit_of[it.nodeid]],
                               first[unit_of[it.nodeid]], order[id(it)]))
    return unit_of


def unit_images(items: list[pytest.Item], unit_of: dict[str, str]) -> dict[str, list[str]]:
    """unit -> the images its tests need (units that need none are left out)."""
    needs: dict[str, dict[str, None]] = {}
    for item in items:
        for name in images_of(item):
            needs.setdefault(unit_of[item.nodeid], {})[name] = None
    return {unit: list(names) for unit, names in needs.items()}


class UnitScheduling(LoadScopeScheduling):
    """xdist's scope scheduler with the workers' units as scopes, in the order the workers collected them; while
    the background image build runs, a unit whose images are done goes out before one still waiting for some."""

    def __init__(self, config: pytest.Config, log=None, plan: Path | None = None,
                 build: ImageBuild | None = None) -> None:
        super().__init__(config, log)
        config.option.loadscopereorder = False  # the collected order is already heaviest first
        self.plan_dir = plan
        self.build = build
        self.units: dict[str, str] | None = None
        self.images: dict[str, list[str]] = {}

    def _load_plan(self) -> dict[str, str]:
        if self.units is None:
            self.units = {}
            for path in sorted(self.plan_dir.glob("*.json")) if self.plan_dir else []:
                plan = json.loads(path.read_text("utf-8"))
                self.units.update(plan["units"])
                self.images.update(plan["images"])
        return self.units

    def _split_scope(self, nodeid: str) -> str:
        return self._load_plan().get(nodeid, nodeid)

    def next_unit(self) -> str | None:
        """The unit to hand out next: the first queued one whose images are done, else the first of those with
        the fewest images still building; None (the queue's order) when no build runs."""
        if self.build is None or self.build.exit_code() is not None:
            return None
        self._load_plan()
        done = self.build.done()
        fallback: dict[int, str] = {}
        for unit in self.workqueue:
            building = len([n for n in self.images.get(unit, ()) if n not in done])
            if not building:
                return unit
            fallback.setdefault(building, unit)
        return fallback[min(fallback)] if fallback else None

    def _assign_work_unit(self, node) -> None:
        unit = self.next_unit()
        if unit is not None:
            self.workqueue.move_to_end(unit, last=False)
        super()._assign_work_unit(node)


def configure_controller(config: pytest.Config) -> None:
    """(controller) A folder for the workers' plans, removed at the end of the run."""
    if hasattr(config, "workerinput") or config.getoption("dist", "no") != "loadgroup":
        return
    folder = Path(tempfile.mkdtemp(prefix="omnidr-test-plan-"))
    config.stash[_PLAN_DIR] = folder
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


def make_scheduler(config: pytest.Config, log) -> LoadScopeScheduling | None:
    folder = config.stash.get(_PLAN_DIR, None)
    return UnitScheduling(config, log, folder, ImageBuild.from_env()) if folder is not None else None


def tell_worker(config: pytest.Config, node) -> None:
    folder = config.stash.get(_PLAN_DIR, None)
    if folder is not None:
        node.workerinput[PLAN_KEY] = str(folder)


def plan_in_worker(config: pytest.Config, items: list[pytest.Item]) -> None:
    """(worker) Order the items unit by unit and write the plan for the controller (every worker writes the
    same plan; each its own file, written whole before the worker reports its collection)."""
    folder = getattr(config, "workerinput", {}).get(PLAN_KEY)
    if folder is None:
        return
    units = plan_units(items)
    worker = config.workerinput.get("workerid", str(os.getpid()))
    tmp = Path(folder) / f".{worker}.tmp"
    tmp.write_text(json.dumps({"units": units, "images": unit_images(items, units)}), "utf-8")
    tmp.rename(Path(folder) / f"{worker}.json")


_PLAN_DIR = pytest.StashKey[Path]()


class DurationRecorder:
    """(controller, with OMNIDR_DURATIONS_OUT set) Each test's seconds, written at the end of the run."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds: dict[str, float] = {}

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration

    @pytest.hookimpl
    def pytest_sessionfinish(self) -> None:
        self.path.write_text(json.dumps({k: round(v, 1) for k, v in sorted(self.seconds.items())}, indent=0) + "\n",
                             "utf-8")


def record_durations(config: pytest.Config) -> None:
    target = os.environ.get(DURATIONS_OUT_ENV)
    if target and not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationRecorder(Path(target)), "omnidr-durations")
