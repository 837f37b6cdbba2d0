"""MLflow tracking of evaluation runs: one parent run per system, one child run per task attempt.

The default store is SQLite inside the run root (`mlflow.db`, artifacts under `mlartifacts/`), so no
server is needed; `--tracking-uri` names another store (an MLflow server). Everything goes through
`MlflowClient` with explicit run ids, so attempts finishing in parallel threads log safely. Logging is
idempotent: runs are found again by their `omnidr.*` tags, so a resumed evaluation adds what is new
and never duplicates a run.
"""

from ._mlflow import (
    ARTIFACTS_DIR,
    DB_FILE,
    KEY_PACKAGES,
    Tracker,
    default_tracking_uri,
    environment_facts,
)

__all__ = ["ARTIFACTS_DIR", "DB_FILE", "KEY_PACKAGES", "Tracker", "default_tracking_uri", "environment_facts"]
