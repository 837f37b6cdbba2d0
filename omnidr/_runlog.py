"""The run log: what the driver did and when, as a file in the run root (`omnidr.log`, named by
`omnidr.paths`). Every module logs to `logging.getLogger(__name__)`; while a command works on a run root,
`run_log` sends the `omnidr` loggers' records to that file, timestamped in UTC, and appends when the same
command resumes. The rich console stays the human view; this file is the record of a multi-hour run."""

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from omnidr.paths import EvalPaths

FORMAT = "%(asctime)s.%(msecs)03dZ %(levelname)-7s %(threadName)s %(name)s: %(message)s"
DATE_FORMAT = "%Y-%m-%dT%H:%M:%S"

log = logging.getLogger(__name__)


class _RunLogHandler(logging.Handler):
    """Appends to the run log, flushing each line. Lines logged before the run folder exists wait in memory
    and are written with the first line after it is made; if it never is (the command refused its input),
    nothing is written and no folder is made."""

    def __init__(self, path: Path) -> None:
        super().__init__(logging.INFO)
        self.path = path
        self.pending: list[str] = []
        self.stream: TextIO | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            lines = [*self.pending, self.format(record)]
            if self.stream is None:
                if not self.path.parent.is_dir():
                    self.pending = lines
                    return
                self.stream = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - open for the command's life
            self.pending = []
            self.stream.write("".join(line + "\n" for line in lines))
            self.stream.flush()
        except Exception:  # noqa: BLE001 - logging must not end a run
            self.handleError(record)

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()
            self.stream = None
        super().close()


@contextmanager
def run_log(root: Path, command: str) -> Iterator[Path]:
    """Log the `omnidr` package to `root/omnidr.log` (INFO and above) for the duration of the block; the
    first and last lines say which command started and how it ended. The folder is not made here: a command
    that refuses its input before making it leaves nothing behind."""
    path = EvalPaths(Path(root)).log
    handler = _RunLogHandler(path)
    formatter = logging.Formatter(FORMAT, DATE_FORMAT)
    formatter.converter = time.gmtime  # the timestamps are UTC (the Z in FORMAT)
    handler.setFormatter(formatter)
    logger = logging.getLogger("omnidr")
    previous = logger.level
    if logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    log.info("start: %s", command)
    try:
        yield path
    except BaseException as exc:
        log.error("stopped: %s: %s", type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
        raise
    else:
        log.info("done: %s", command)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
        handler.close()
