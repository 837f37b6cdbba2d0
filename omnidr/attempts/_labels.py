"""Who an engine object of an attempt belongs to: its run, attempt, owner process, driver and run folder.

Labels are how a backend's objects are found again (cleanup by run folder, a driver that is gone); the names are
the same for every backend, and other stages label their own objects of a run folder with `run_labels`."""

import os
import socket
from pathlib import Path

LABEL_RUN = "org.omnidr.run"
LABEL_ATTEMPT = "org.omnidr.attempt"
# Who made an object, as `host:pid:start` (start: the process's start time in clock ticks since boot, so that
# a reused pid is not taken for the same process): the process that created it (a Ray worker, or the
# driver itself) and the driver of the run (`omnidr eval` or `run`). Cleanup removes only what a process that
# is gone left behind, never what a live driver (on another run root with the same run id) is using.
LABEL_OWNER = "org.omnidr.owner"
LABEL_DRIVER = "org.omnidr.driver"
# The run folder (absolute path) an object serves. Identical systems share a run id, so drivers on other run
# folders share the LABEL_RUN value; cleanup never touches an object labelled with another run folder.
LABEL_RUN_DIR = "org.omnidr.run-dir"


def _start_ticks(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot, /proc/PID/stat field 22), None if it is gone. A
    zombie (state Z: killed, not yet reaped by its parent, as a SIGKILLed Ray worker is for a moment) is gone:
    it makes nothing more."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def owner_id() -> str:
    """This driver process, as the LABEL_OWNER of the objects it makes."""
    return f"{socket.gethostname()}:{os.getpid()}:{_start_ticks(os.getpid())}"


def owner_alive(owner: str | None) -> bool:
    """Whether the driver named by a LABEL_OWNER value still runs. An object without one (made before owners
    were labelled) is a leftover; one from another host is never judged from here, so it counts as alive."""
    if not owner or owner.count(":") < 2:
        return False
    host, pid, start = owner.rsplit(":", 2)
    if host != socket.gethostname():
        return True
    return pid.isdigit() and _start_ticks(int(pid)) == start


def run_labels(run_dir: Path) -> dict[str, str]:
    """The labels every container, network and volume of an attempt in `run_dir` carries beyond its run id."""
    return {LABEL_RUN_DIR: str(Path(run_dir).resolve())}
