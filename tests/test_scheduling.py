"""The suite's parallel runs (tests/scheduling.py): tests that share a module-scoped fixture run on one worker,
so the fixture is made once; the other tests spread over the workers; the units without Docker go out first (they
run while `make test` builds the images), then the Docker units, each once the images it needs are built."""

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from scheduling import IMAGES_ENV, ImageBuild
from testkit import ROOT

from omnidr.images import BuiltImage, record_results

PROBE = '''
import json, os, time
import pytest

@pytest.fixture(scope="module")
def run_root():
    with open(os.environ["PROBE_LOG"], "a") as f:
        f.write(json.dumps({"setup": os.environ["PYTEST_XDIST_WORKER"]}) + "\\n")
    return 1

@pytest.mark.parametrize("i", range(8))
def test_reads_the_root(run_root, i):
    time.sleep(0.1)

@pytest.mark.parametrize("i", range(8))
def test_alone(i):
    with open(os.environ["PROBE_LOG"], "a") as f:
        f.write(json.dumps({"alone": os.environ["PYTEST_XDIST_WORKER"], "t": time.time()}) + "\\n")
    time.sleep(2.0)

@pytest.mark.docker
def test_heavy():
    with open(os.environ["PROBE_LOG"], "a") as f:
        f.write(json.dumps({"heavy": os.environ["PYTEST_XDIST_WORKER"], "t": time.time()}) + "\\n")
'''


def test_a_shared_module_fixture_is_made_once_and_the_rest_spreads_over_the_workers(tmp_path: Path):
    (tmp_path / "test_probe.py").write_text(PROBE)
    log = tmp_path / "log.jsonl"
    env = {k: v for k, v in os.environ.items() if k != IMAGES_ENV}  # the probe needs no image
    env.update(PYTHONPATH=str(ROOT / "tests"), PROBE_LOG=str(log))
    r = subprocess.run([sys.executable, "-m", "pytest", "-n", "3", "--dist", "loadgroup", "-p", "conftest",
                        "-p", "no:cacheprovider", "-q", "--rootdir", str(tmp_path), str(tmp_path)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "17 passed" in r.stdout
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert len([e for e in events if "setup" in e]) == 1  # one worker made the fixture, once
    assert len({e["alone"] for e in events if "alone" in e}) >= 2  # the free tests went to several workers
    [heavy] = [e for e in events if "heavy" in e]
    # the Docker test goes out last: every free test has started before it but those a worker had already been
    # handed when another took the Docker test (xdist sends each worker its next unit ahead)
    assert heavy["t"] > sorted(e["t"] for e in events if "alone" in e)[-3]


PLANNED = '''
import json, os, time
import pytest

@pytest.mark.docker
@pytest.mark.parametrize("name", ["short", "medium", "long"])
def test_docker(name):
    with open(os.environ["PROBE_LOG"], "a") as f:
        f.write(json.dumps({"name": name, "t": time.time()}) + "\\n")
    time.sleep(0.3)
'''


def test_docker_units_go_out_longest_first_by_the_measured_durations_which_a_run_records(tmp_path: Path):
    (tmp_path / "test_planned.py").write_text(PLANNED)
    log = tmp_path / "log.jsonl"
    # measured seconds that contradict the collection order: long, then medium, then short
    (tmp_path / "durations.json").write_text(json.dumps({
        f"test_planned.py::test_docker[{n}]": s for n, s in (("short", 1.0), ("medium", 50.0), ("long", 300.0))}))
    env = {k: v for k, v in os.environ.items() if k != IMAGES_ENV}
    env.update(PYTHONPATH=str(ROOT / "tests"), PROBE_LOG=str(log), OMNIDR_DURATIONS=str(tmp_path / "durations.json"),
               OMNIDR_DURATIONS_OUT=str(tmp_path / "recorded.json"))
    r = subprocess.run([sys.executable, "-m", "pytest", "-n", "1", "--dist", "loadgroup", "-p", "conftest",
                        "-p", "no:cacheprovider", "-q", "--rootdir", str(tmp_path), str(tmp_path)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    order = [json.loads(line)["name"] for line in log.read_text().splitlines()]
    assert order == ["long", "medium", "short"]
    recorded = json.loads((tmp_path / "recorded.json").read_text())
    assert set(recorded) == {f"test_planned.py::test_docker[{n}]" for n in ("short", "medium", "long")}
    assert all(0.3 <= s < 30 for s in recorded.values())


def _result(name: str, status: str = "built", reason: str | None = None) -> BuiltImage:
    return BuiltImage(name=name, tag=f"omnidr/{name}:0123456789abcdef" if status in ("built", "cached") else "",
                      image_id="sha256:00" if status in ("built", "cached") else "", status=status, reason=reason)


def test_a_test_waits_for_the_images_it_needs_until_the_build_writes_them_and_no_longer(tmp_path: Path):
    """The results `omnidr images build --results-dir` writes (record_results) as the waiting side reads them."""
    record = record_results(tmp_path)
    build = ImageBuild(tmp_path)
    record(_result("base"))
    assert build.pending(["base", "late"]) == ["late"]
    threading.Timer(1.0, record, [_result("late")]).start()
    started = time.monotonic()
    assert build.wait(["base", "late"], poll_s=0.05) is None
    assert 0.9 <= time.monotonic() - started < 30
    # an image the build failed, or skipped because its parent failed: the tests that need it fail at once, saying
    # which image and why
    record(_result("broken", "failed", "docker build of broken failed: apt-get install exited 100"))
    record(_result("child", "skipped", "parent image 'broken' was failed"))
    assert build.pending(["broken", "child"]) == []
    assert build.wait(["base", "broken"]) == (
        "the broken image was failed by the image build `make test` runs (docker build of broken failed: apt-get "
        "install exited 100); see .nox/images-build.log")
    assert "the child image was skipped" in (build.problem(["child"]) or "")
    # a build that ended (its exit code written) without an image: no wait, and the tests that need it fail
    (tmp_path / "exit").write_text("1\n")
    assert build.pending(["never"]) == []
    assert build.wait(["base", "never"]) == ("the image build `make test` runs ended (exit code 1) without the "
                                            "never image; see .nox/images-build.log")


STAGED = '''
import json, os, time
from pathlib import Path
import pytest

def note(**event):
    with open(os.environ["PROBE_LOG"], "a") as f:
        f.write(json.dumps({**event, "worker": os.environ["PYTEST_XDIST_WORKER"], "t": time.time()}) + "\\n")

@pytest.mark.docker
@pytest.mark.images("late")
def test_late():
    note(name="late")

@pytest.mark.docker
@pytest.mark.parametrize("i", range(6))
def test_early(i):
    note(name="early")
    # the build finishes the late image while the early tests run: once four of them have started
    started = sum('"early"' in line for line in Path(os.environ["PROBE_LOG"]).read_text().splitlines())
    if started >= 4 and not Path(os.environ["LATE_RESULT"]).exists():
        Path(os.environ["LATE_TMP"]).write_text(os.environ["LATE_JSON"])
        os.replace(os.environ["LATE_TMP"], os.environ["LATE_RESULT"])
        note(name="late-built")
    time.sleep(0.5)

@pytest.mark.docker
@pytest.mark.images("broken")
def test_broken():
    note(name="broken")
'''


def test_docker_units_go_out_once_their_images_are_built_and_a_failed_image_fails_its_tests(tmp_path: Path):
    """While the image build runs, a free worker takes the heaviest unit whose images are done: the early units go
    out on both workers before the heaviest unit, whose image comes later, and that unit starts once its image is
    there. A test whose image failed fails in its setup, saying why, and the run ends."""
    (tmp_path / "test_staged.py").write_text(STAGED)
    log, results = tmp_path / "log.jsonl", tmp_path / "results"
    record = record_results(results)
    for name in ("base", "gateway", "egress"):
        record(_result(name))
    record(_result("broken", "failed", "apt said no"))
    (tmp_path / "durations.json").write_text(json.dumps({"test_staged.py::test_late": 300.0}))
    env = {k: v for k, v in os.environ.items() if k != IMAGES_ENV}
    env.update(PYTHONPATH=str(ROOT / "tests"), PROBE_LOG=str(log), OMNIDR_DURATIONS=str(tmp_path / "durations.json"),
               LATE_RESULT=str(results / "late.json"), LATE_TMP=str(tmp_path / "late.tmp"),
               LATE_JSON=_result("late").model_dump_json(), **{IMAGES_ENV: str(results)})
    r = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-p", "conftest",
                        "-p", "no:cacheprovider", "-q", "--rootdir", str(tmp_path), str(tmp_path)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]
    assert re.search(r"\b7 passed, (\d+ warnings, )?1 error\b", r.stdout), r.stdout[-3000:]
    assert "the broken image was failed by the image build `make test` runs (apt said no)" in r.stdout
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert "broken" not in {e["name"] for e in events}  # it never ran
    [built] = [e for e in events if e["name"] == "late-built"]
    [late] = [e for e in events if e["name"] == "late"]
    assert late["t"] >= built["t"]
    # both workers ran early tests before the late image was there: neither sat waiting on the heaviest unit
    assert len({e["worker"] for e in events if e["name"] == "early" and e["t"] <= built["t"]}) == 2, events
