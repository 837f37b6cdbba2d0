"""Writing the files that other stages and later runs read: whole or not at all."""

import os
import secrets
from pathlib import Path


def write_atomic(path: Path | str, data: str | bytes) -> None:
    """Write `path` whole or not at all: a temporary file in the same folder (made if missing), flushed to the
    disk (fsync), then renamed over `path`. A failed write (a full disk, an interrupt) leaves the old file, if
    any, and no temporary one. Concurrent writers of one path each use their own temporary file; the last
    rename wins. Text is written as UTF-8."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        with tmp.open("xb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def save_figure(fig, path: Path) -> None:
    """A matplotlib figure as PNG at `path`, written to a temporary name and renamed (a reader never sees half a
    file), then closed."""
    from matplotlib import pyplot as plt

    tmp = path.with_name(path.name + ".tmp")
    fig.savefig(tmp, format="png")
    plt.close(fig)
    tmp.replace(path)
