"""No phoning home, no chatter: the libraries the CLI uses report usage by default (these variables turn
that off) and log INFO lines into our output (their loggers are set to WARNING).

Set for the CLI's own process and inherited by everything it starts (Ray workers, `mlflow ui` from
our hints, helper processes). A value the user set already is kept.
"""

import logging
import os

NO_TELEMETRY = {
    "MLFLOW_DISABLE_TELEMETRY": "true",  # MLflow 3.x; it reads DO_NOT_TRACK only as the string "true"
    "DO_NOT_TRACK": "1",  # the cross-tool convention (consoledonottrack.com)
    "RAY_USAGE_STATS_ENABLED": "0",
}


def disable_telemetry() -> None:
    for key, value in NO_TELEMETRY.items():
        os.environ.setdefault(key, value)


QUIET_LOGGERS = ("mlflow", "alembic", "ray", "urllib3", "docker")


def quiet_libraries() -> None:
    """Telemetry off, and the libraries' INFO lines kept out of the console (warnings still show)."""
    disable_telemetry()
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")  # MLflow sets its own level when imported
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
