"""The suite's parallel runs (tests/scheduling.py): tests that share a module-scoped fixture run on one worker,
so the fixture is made once; the other tests spread over the workers; the units without Docker go out first (they
run while `make test` builds the images), then the Docker units."""

import json
import os
import subprocess
import sys
from pathlib import Path

from testkit import ROOT

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
    env = {k: v for k, v in os.environ.items() if k != "OMNIDR_IMAGES_DONE"}  # the probe needs no image
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
    env = {k: v for k, v in os.environ.items() if k != "OMNIDR_IMAGES_DONE"}
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
