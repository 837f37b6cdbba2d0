"""The run log: what the driver did and when, as a file in the run root (`omnidr.log`, named by
`omnidr.paths`). Every module logs to `logging.getLogger(__name__)`; while a command works on a run root,
`run_log` sends the `omnidr` loggers' records to that file, timestamped in UTC, and appends when the same
command resumes. The rich console stays the human view; this file is the record of a multi-hour run."""

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from omnidr.paths import EvalPaths

FORMAT = "%(asctime)s.%(msecs)03dZ %(levelname)-7s %(threadName)s %(name)s: %(message)s"
DATE_FORMAT = "%Y-%m-%dT%H:%M:%S"

log = logging.getLogger(__name__)


@contextmanager
def run_log(root: Path, command: str) -> Iterator[Path]:
    """Log the `omnidr` package to `root/omnidr.log` (INFO and above) for the duration of the block; the
    first and last lines say which command started and how it ended."""
    path = EvalPaths(Path(root)).log
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    formatter = logging.Formatter(FORMAT, DATE_FORMAT)
    formatter.converter = time.gmtime  # the timestamps are UTC (the Z in FORMAT)
    handler.setFormatter(formatter)
    handler.setLevel(logging.INFO)
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
