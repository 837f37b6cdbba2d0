"""Shared fixtures: the bundled demo snapshot, copies of it to break, the CLI as a user runs it."""

import ipaddress
import os
import secrets
import shutil
import socket
import threading
import time
import uuid
from pathlib import Path

import docker
import pytest
import scheduling
from testkit import DEMO, ROOT

from omnidr._offline import disable_telemetry

# Tests never let a library phone home: the same variables the CLI sets, for this process and every
# subprocess a test starts.
disable_telemetry()

# Scores are computed on the host in the tests, as `--evaluator host` does: the scoring logic is the same code in
# both places, and the evaluator image's path costs two container starts per scoring. The tests of that path ask
# for it by name (tests/evaluation/test_container.py, the `make eval` demo run in tests/pipeline/test_end_to_end.py,
# the hostile-report test in tests/evaluation/test_evaluator_isolation.py).
os.environ["OMNIDR_EVALUATOR"] = "host"

# --- Parallel runs (pytest-xdist, as `make test` runs the suite; see tests/scheduling.py) -----------------
TERMINAL = ("COLUMNS", "LINES")


def pytest_configure(config: pytest.Config) -> None:
    scheduling.configure_controller(config)
    scheduling.record_durations(config)
    # (worker) A worker process has COLUMNS=80 and LINES=24 in its environment (seen with pytest-xdist 3.8 under
    # pytest 9.2, where a serial run has neither), and the CLI fits its tables to COLUMNS: restore what the
    # command that started the run had.
    for key, value in getattr(config, "workerinput", {}).get("omnidr_terminal", {}).items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """(controller) What each worker is told: the terminal size variables, and where to write its plan."""
    node.workerinput["omnidr_terminal"] = {k: os.environ.get(k) for k in TERMINAL}
    scheduling.tell_worker(node.config, node)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    return scheduling.make_scheduler(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    scheduling.plan_in_worker(config, items)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """`make test` builds the images while the tests without Docker run (noxfile.py): a Docker test waits until
    the images it needs are done (the sandbox's, and those its `images` marks name; tests/scheduling.py), so that
    no test's own time limit runs while one of them is still being built. An image the build failed or skipped
    fails the tests that need it, at once and saying which."""
    build = scheduling.ImageBuild.from_env()
    names = scheduling.images_of(item)
    if build is None or not names:
        return
    problem = build.wait(names)
    if problem:
        pytest.fail(problem, pytrace=False)


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    """A private copy of the demo snapshot that a test may damage."""
    dest = tmp_path / "demo"
    shutil.copytree(DEMO, dest)
    return dest


# --- Docker sandbox fixtures (tests/attempts) --------------------------------------------

TEST_LABEL = {"org.omnidr.test": "1"}


@pytest.fixture(scope="session")
def client():
    return docker.from_env(timeout=600)


@pytest.fixture(scope="session")
def images():
    from omnidr.images import build_images

    return {r.name: r.tag for r in build_images(["base", "gateway", "egress"])}


@pytest.fixture
def upstream_factory(client, images):
    """Start a fake OpenAI-compatible upstream (container) on a fresh outside network."""
    made = []

    def start(fail_first: int = 0) -> tuple[str, object]:
        net = client.networks.create(f"omnidr-test-out-{uuid.uuid4().hex[:8]}", driver="bridge", labels=TEST_LABEL)
        container = client.containers.run(
            images["base"], ["python3", "/srv/fake_upstream.py", "9000"], detach=True, labels=TEST_LABEL,
            network=net.name, environment={"FAIL_FIRST": str(fail_first)},
            volumes={str(ROOT / "tests" / "attempts" / "fake_upstream.py"): {"bind": "/srv/fake_upstream.py", "mode": "ro"}},
        )
        net.reload()
        net.disconnect(container)
        net.connect(container, aliases=["upstream"])
        made.append((container, net))
        deadline = time.monotonic() + 60  # listening before the run probes it (one request, no retry)
        while b'"listening"' not in container.logs(stdout=True, stderr=False):
            assert time.monotonic() < deadline, container.logs().decode()[-2000:]
            time.sleep(0.1)
        return net.name, container

    yield start
    for container, net in made:
        container.remove(force=True)
        net.remove()


@pytest.fixture
def host_server(client):
    """A TCP server on the host's address on Docker's default bridge (not loopback, so a
    container could reach it if nothing stopped it)."""
    bridge = client.networks.get("bridge")
    config = bridge.attrs["IPAM"]["Config"][0]
    ip = config.get("Gateway") or str(next(ipaddress.ip_network(config["Subnet"]).hosts()))
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((ip, 0))
    srv.listen(8)
    srv.settimeout(0.5)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                conn.sendall(b"hello\n")
                conn.close()
            except OSError:
                continue

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield ip, srv.getsockname()[1]
    stop.set()
    srv.close()


@pytest.fixture
def real_key(monkeypatch):
    key = "sk-real-" + secrets.token_hex(12)
    monkeypatch.setenv("OMNIDR_TEST_REAL_KEY", key)
    return key
