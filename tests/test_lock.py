"""One driver per folder: a second `omnidr` command on a folder another one is writing stops with one line
naming the holder (or waits with --wait); the kernel frees the lock of a killed driver."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from testkit import DEMO, ROOT, run_cli, said

from omnidr._lock import LOCK_FILE, folder_lock
from omnidr.errors import UserError

HOLD = """
import sys, time
from pathlib import Path
from omnidr._lock import folder_lock
folder, seconds = Path(sys.argv[1]), float(sys.argv[2])
sys.argv = ["omnidr", "eval", "snapshots/demo"]  # what the holder's command line would be
with folder_lock(folder):
    print("held", flush=True)
    time.sleep(seconds)
"""


def _hold(folder: Path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder), str(seconds)], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_command_on_a_folder_in_use_exits_2_naming_the_holder(tmp_path):
    from omnidr.attempts import RetryPolicy, RunConfig, SandboxLimits
    from sandbox.models import Budget

    run = tmp_path / "run"
    run.mkdir()
    config = RunConfig(snapshot=str(DEMO), tasks=[], harness="reference", agent_image="omnidr/reference:test",
                       command=["python", "-m", "sandbox.reference_agent"], model="scripted", upstreams=[], budget=Budget(),
                       limits=SandboxLimits(), retry=RetryPolicy(), proxy_mode="replay",
                       gateway_image="omnidr/gateway:test", egress_image="omnidr/egress:test")
    (run / "run.json").write_text(config.model_dump_json())
    holder = _hold(run / "evaluation", 60)
    try:
        r = run_cli("score", run)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        [line] = said(r.stderr)
        assert line.startswith(f"error: {run / 'evaluation'} is in use by `omnidr eval snapshots/demo` (pid {holder.pid} on ")
        assert "since" in line and "--wait" in line
    finally:
        holder.kill()
        holder.wait()


def test_wait_starts_when_the_holder_is_done(tmp_path):
    holder = _hold(tmp_path / "root", 1.5)
    notes: list[str] = []
    t0 = time.monotonic()
    with folder_lock(tmp_path / "root", wait=True, on_wait=notes.append):
        waited = time.monotonic() - t0  # the holder kept it 1.5 s after saying so
    holder.wait()
    assert waited > 1.0
    assert notes == [f"waiting for `omnidr eval snapshots/demo` (pid {holder.pid} on {os.uname().nodename}, since "
                     + notes[0].split(", since ", 1)[1]]


def test_a_killed_holder_frees_the_folder_at_once(tmp_path):
    holder = _hold(tmp_path / "root", 60)
    with pytest.raises(UserError, match="is in use by"):
        with folder_lock(tmp_path / "root"):
            pass
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    with folder_lock(tmp_path / "root"):  # no stale lock: the kernel released it with the process
        info = json.loads((tmp_path / "root" / LOCK_FILE).read_text())
        assert info["pid"] == os.getpid()


def test_a_command_refused_before_writing_leaves_no_folder(tmp_path):
    with pytest.raises(UserError):
        with folder_lock(tmp_path / "new"):
            raise UserError("the model endpoint does not answer")
    assert not (tmp_path / "new").exists()
    (tmp_path / "kept").mkdir()
    with pytest.raises(UserError):
        with folder_lock(tmp_path / "kept"):
            raise UserError("refused")
    assert (tmp_path / "kept").is_dir()  # a folder that was there before stays


@pytest.mark.docker
@pytest.mark.browser
def test_a_second_eval_on_the_same_runs_root_stops_before_touching_the_first(tmp_path):
    """The lab's case: two `omnidr eval` of one snapshot into one runs root. The second one says who runs
    there and stops, before it could take the first one's containers for leftovers."""
    snapshot_id = json.loads((DEMO / "MANIFEST.json").read_text())["snapshot_id"]
    holder = _hold(tmp_path / "runs" / snapshot_id, 600)
    try:
        r = run_cli("eval", "--snapshot", DEMO, "--runs-root", tmp_path / "runs", timeout=600)
        assert r.returncode == 2, r.stdout[-2000:] + r.stderr
        [line] = said(r.stderr)
        assert f"is in use by `omnidr eval snapshots/demo` (pid {holder.pid}" in line
        assert [p.name for p in (tmp_path / "runs" / snapshot_id).iterdir()] == [LOCK_FILE]  # it wrote nothing
    finally:
        holder.kill()
        holder.wait()
