"""A demo run phones nobody: no telemetry, no request outside loopback and the project's containers.

Every HTTP client the driver and its children use honours HTTP(S)_PROXY, so the run is given a
loopback "proxy" that answers nothing and records every connection: any attempt to reach a host
outside (MLflow's telemetry, a browser's background traffic, an archive lookup) shows up there.
The environment is stripped of the variables by which libraries guess they run in CI or under
pytest (and turn their telemetry off on their own), so the test sees what a user's shell sees.
"""

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from testkit import DEMO, ROOT

pytestmark = [pytest.mark.docker, pytest.mark.browser, pytest.mark.images("reference")]
CI_MARKERS = ("PYTEST_CURRENT_TEST", "CI", "GITHUB_ACTIONS", "MLFLOW_DISABLE_TELEMETRY", "DO_NOT_TRACK",
              "RAY_USAGE_STATS_ENABLED", "RAY_AUTH_TOKEN", "RAY_AUTH_MODE")


class Recorder:
    """A TCP listener on loopback that records the first line of every connection and closes it."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.seen: list[str] = []
        self._stop = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(0.3)
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            conn.settimeout(2)
            try:
                self.seen.append(conn.recv(4096).split(b"\r\n", 1)[0].decode("latin-1"))
                conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            except OSError:
                self.seen.append("(connection without a request line)")
            finally:
                conn.close()

    def close(self) -> None:
        self._stop = True
        self.sock.close()


def _user_env(home: Path, proxy_port: int | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CI_MARKERS}
    cache = Path.home() / ".cache" / "omnidr"
    env.update(HOME=str(home), OMNIDR_IMAGE_CACHE=str(cache / "images"), OMNIDR_WHEEL_CACHE=str(cache / "wheels"))
    env.pop("XDG_CONFIG_HOME", None)
    if proxy_port:
        url = f"http://127.0.0.1:{proxy_port}"
        env.update(HTTP_PROXY=url, HTTPS_PROXY=url, http_proxy=url, https_proxy=url, ALL_PROXY=url,
                   NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    return env


def _omnidr(*args, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "omnidr.cli", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, env=env, timeout=timeout)


def test_a_demo_run_opens_no_connection_outside_and_sends_no_telemetry(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    recorder = Recorder()
    try:
        r = _omnidr("eval", "--snapshot", DEMO, "--task", "sky-blue-rayleigh", "--runs-root", tmp_path / "runs",
                    env=_user_env(home, recorder.port))
    finally:
        recorder.close()
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert recorder.seen == [], f"the run tried to reach outside: {recorder.seen}"
    assert not (home / ".config" / "mlflow").exists()  # MLflow's telemetry id is made only when telemetry is on
    assert "mlflow-telemetry" not in r.stdout + r.stderr


def test_a_local_ray_run_writes_no_token_into_the_home_folder(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    r = _omnidr("eval", "--snapshot", DEMO, "--task", "sky-blue-rayleigh", "--executor", "ray", "--runs-root", tmp_path / "runs",
                env=_user_env(home, None))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert not (home / ".ray" / "auth_token").exists()
    assert not (home / ".config" / "mlflow").exists()
