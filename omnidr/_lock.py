"""One driver per folder. The commands that write a folder (`eval` and `compare` their run root, `run` and each
system of an eval its run folder, `score` its output folder, `rescore` its output folder) hold an exclusive
OS lock on it (`flock` on `<folder>/.omnidr.lock`), so that two drivers never share a run: the second one
stops with one line naming the holder, or waits with `--wait`. The kernel releases the lock when the process
ends, however it ends (a SIGKILL included), so a crashed driver never leaves a stale lock behind.
"""

import fcntl
import json
import os
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from omnidr.errors import UserError

LOCK_FILE = ".omnidr.lock"


def holder_text(path: Path) -> str:
    """Who holds the lock, as its holder wrote it: command, pid, host, since when."""
    try:
        info = json.loads(path.read_text("utf-8"))
        return (f"`{info['command']}` (pid {info['pid']} on {info['host']}, since {info['since']})")
    except (OSError, ValueError, KeyError, TypeError):
        return "another omnidr process"


@contextmanager
def folder_lock(folder: Path, wait: bool = False, on_wait: Callable[[str], None] = lambda _m: None) -> Iterator[None]:
    """Hold `folder`'s lock for the block (the folder is made if missing). Held elsewhere: a `UserError`
    naming the holder, or with `wait`, a note through `on_wait` and a wait until it is free."""
    folder = Path(folder)
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    failed = True
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = holder_text(path)
            if not wait:
                raise UserError(f"{folder} is in use by {holder}; let it finish or stop it, or rerun with --wait "
                                "to start when it is done") from None
            on_wait(f"waiting for {holder} to release {folder}")
            fcntl.flock(fd, fcntl.LOCK_EX)
        info = {"pid": os.getpid(), "host": socket.gethostname(), "command": " ".join(["omnidr", *sys.argv[1:]]),
                "since": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        yield
        failed = False
    finally:
        if failed and created and [p.name for p in folder.iterdir()] == [LOCK_FILE]:
            # a command refused before writing anything leaves no folder behind (the lock goes with it)
            path.unlink(missing_ok=True)
            folder.rmdir()
        os.close(fd)  # closing the descriptor releases the lock


@contextmanager
def machine_lock(path: Path, waiting: str = "", progress: Callable[[str], None] = lambda _m: None) -> Iterator[None]:
    """Hold an exclusive lock on the file `path` across the threads and processes of this machine (`flock` on a
    descriptor of its own, released by the kernel however the holder ends); says `waiting` through `progress`
    while another holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting:
                progress(waiting)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
