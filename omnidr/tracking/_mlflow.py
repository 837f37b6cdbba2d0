"""The MLflow side of `omnidr eval` (see the package docstring)."""

import json
import subprocess
import threading
import time
from importlib import metadata
from pathlib import Path

from omnidr.errors import UserError

DB_FILE = "mlflow.db"
ARTIFACTS_DIR = "mlartifacts"
# Packages whose versions are logged as parameters (all installed versions go to environment.json).
KEY_PACKAGES = ("omnidr", "mlflow", "playwright", "openai", "docker", "pydantic", "numpy", "ray", "aiohttp")


def default_tracking_uri(run_root: Path) -> str:
    return f"sqlite:///{(Path(run_root).resolve() / DB_FILE).as_posix()}"


def git_commit(path: Path | None = None) -> tuple[str, bool]:
    """(commit, dirty) of the checkout holding this package; ("unknown", False) outside a checkout."""
    where = path or Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, timeout=10).stdout.strip())
        return commit, dirty
    except (OSError, subprocess.SubprocessError):
        return "unknown", False


def environment_facts() -> dict:
    """Git commit and every installed package version: what the run was made with."""
    commit, dirty = git_commit()
    packages = {d.metadata["Name"].lower(): d.version for d in metadata.distributions() if d.metadata["Name"]}
    return {"git_commit": commit, "git_dirty": dirty, "packages": dict(sorted(packages.items()))}


def _as_params(values: dict) -> dict[str, str]:
    """MLflow parameter values are strings of at most 6000 characters."""
    return {k: (v if isinstance(v, str) else json.dumps(v, sort_keys=True))[:6000] for k, v in values.items()
            if v is not None}


class Tracker:
    """Logs an evaluation run root to one MLflow experiment. Thread-safe."""

    def __init__(self, tracking_uri: str, experiment: str, artifact_root: Path | None = None):
        try:
            from mlflow import MlflowClient
            from mlflow.exceptions import MlflowException
        except ImportError:  # pragma: no cover - mlflow is in requirements.lock
            raise UserError("MLflow tracking needs the mlflow package; run `make setup`") from None
        self._error = MlflowException
        self._lock = threading.Lock()
        self.uri = tracking_uri
        self.client = MlflowClient(tracking_uri=tracking_uri)
        try:
            found = self.client.get_experiment_by_name(experiment)
            if found is None:
                location = Path(artifact_root).resolve().as_uri() if artifact_root is not None else None
                self.experiment_id = self.client.create_experiment(experiment, artifact_location=location)
            else:
                self.experiment_id = found.experiment_id
        except MlflowException as exc:
            raise UserError(f"cannot use the MLflow store {tracking_uri}: {str(exc).splitlines()[0][:200]}") from None
        except OSError as exc:
            raise UserError(f"cannot reach the MLflow store {tracking_uri}: {exc}") from None

    # ---- finding runs again ------------------------------------------------------------------

    def _find(self, **tags: str):
        query = " and ".join(f"tags.`{k}` = '{v}'" for k, v in tags.items())
        runs = self.client.search_runs([self.experiment_id], filter_string=query, max_results=2)
        return runs[0] if runs else None

    def _params(self, run_id: str, params: dict) -> None:
        from mlflow.entities import Param

        existing = self.client.get_run(run_id).data.params
        new = [Param(k, v) for k, v in _as_params(params).items() if k not in existing]
        for start in range(0, len(new), 100):
            self.client.log_batch(run_id, params=new[start:start + 100], synchronous=True)

    def _metrics(self, run_id: str, metrics: dict[str, float | None]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        existing = self.client.get_run(run_id).data.metrics
        batch = [Metric(k, float(v), now, 0) for k, v in metrics.items() if v is not None and existing.get(k) != float(v)]
        if batch:
            self.client.log_batch(run_id, metrics=batch, synchronous=True)

    # ---- what `omnidr eval` logs -------------------------------------------------------------

    def system_run(self, label: str, params: dict, tags: dict[str, str] | None = None) -> str:
        """The parent run of one system (created once, found again on resume)."""
        with self._lock:
            run = self._find(**{"omnidr.kind": "system", "omnidr.system": label})
            if run is None:
                run = self.client.create_run(self.experiment_id, run_name=label,
                                             tags={"omnidr.kind": "system", "omnidr.system": label, **(tags or {})})
            run_id = run.info.run_id
            self._params(run_id, params)
            return run_id

    def attempt_run(self, parent_id: str, label: str, record) -> str:
        """The child run of one finished attempt, with its params and metrics (artifacts follow
        with `attempt_artifacts` once the trajectory is parsed)."""
        key = f"{label}/{record.task_id}/{record.attempt}"
        with self._lock:
            run = self._find(**{"omnidr.kind": "attempt", "omnidr.attempt": key})
            if run is not None:
                return run.info.run_id
            run = self.client.create_run(
                self.experiment_id, run_name=f"{record.task_id} #{record.attempt}",
                start_time=int(record.started_at.timestamp() * 1000),
                tags={"omnidr.kind": "attempt", "omnidr.attempt": key, "omnidr.system": label,
                      "omnidr.task": record.task_id, "mlflow.parentRunId": parent_id},
            )
            run_id = run.info.run_id
            use = record.budget_use
            self._params(run_id, {
                "task": record.task_id, "attempt": record.attempt, "harness": record.harness, "reason": record.reason.value,
                "proxy_mode": record.proxy_mode.value,
                **{f"image.{role}": image_id for role, image_id in record.image_ids.items()},
            })
            self._metrics(run_id, {
                "success": 1.0 if record.reason.value == "success" else 0.0, "input_tokens": use.input_tokens,
                "output_tokens": use.output_tokens, "total_tokens": use.input_tokens + use.output_tokens,
                "steps": use.requests, "tool_calls": use.tool_calls, "wall_time_s": record.wall_time_s,
                "network_requests": record.network_requests, "network_blocked": record.network_blocked,
            })
            self.client.set_terminated(run_id, "FINISHED" if record.reason.value == "success" else "FAILED",
                                       end_time=int(record.ended_at.timestamp() * 1000))
            return run_id

    def attempt_artifacts(self, label: str, task_id: str, attempt: int, attempt_dir: Path) -> None:
        """The attempt folder (report, trajectory, agent, gateway and network logs), once."""
        with self._lock:
            run = self._find(**{"omnidr.kind": "attempt", "omnidr.attempt": f"{label}/{task_id}/{attempt}"})
            if run is None or run.data.tags.get("omnidr.artifacts") == "logged" or not attempt_dir.is_dir():
                return
            self.client.log_artifacts(run.info.run_id, str(attempt_dir), artifact_path="attempt")
            self.client.set_tag(run.info.run_id, "omnidr.artifacts", "logged")

    def attempt_score(self, label: str, task_id: str, attempt: int, evaluation, evaluation_dir: Path) -> None:
        """Scores of the evaluated attempt, and its evaluation folder (once per judge)."""
        with self._lock:
            run = self._find(**{"omnidr.kind": "attempt", "omnidr.attempt": f"{label}/{task_id}/{attempt}"})
            if run is None:
                return
            run_id = run.info.run_id
            score = evaluation.score
            self._metrics(run_id, {"score": score.total, **{f"score_{k.value}": v.score for k, v in score.dimensions.items()},
                                   "skipped_atoms": evaluation.skipped_atoms})
            judge = evaluation.judge.key
            if run.data.tags.get("omnidr.scored_by") != judge and evaluation_dir.is_dir():
                self.client.log_artifacts(run_id, str(evaluation_dir), artifact_path="evaluation")
                self.client.set_tag(run_id, "omnidr.scored_by", judge)

    def system_result(self, parent_id: str, metrics: dict[str, float | None], files: list[Path]) -> None:
        """Aggregates of the system, and the run root's leaderboard files."""
        with self._lock:
            self._metrics(parent_id, metrics)
            for path in files:
                if path.is_file():
                    self.client.log_artifact(parent_id, str(path), artifact_path="results")
            self.client.set_terminated(parent_id, "FINISHED")

    def run_link(self, run_id: str) -> str:
        return f"#/experiments/{self.experiment_id}/runs/{run_id}"
