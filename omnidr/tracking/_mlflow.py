"""The MLflow side of `omnidr eval` (see the package docstring)."""

import json
import os
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


def seed_store(tracking_uri: str, artifact_root: Path | None = None) -> None:
    """Make a missing sqlite store a copy of an empty one kept per MLflow version in the cache
    (`$XDG_CACHE_HOME|~/.cache/omnidr/mlflow/`): a store MLflow creates runs every schema migration, about 1.5 s
    of CPU for each run root. The copy's Default experiment keeps its artifacts under `artifact_root` (MLflow's
    own puts them under the working folder). Other stores (a server, an existing file) are left alone."""
    import sqlite3

    if not tracking_uri.startswith("sqlite:///"):
        return
    db = Path(tracking_uri.removeprefix("sqlite:///"))
    if db.exists():
        return
    try:
        _copy_empty_store(db, artifact_root)
    except (OSError, sqlite3.Error):
        return  # no cache to write, a full disk, ...: MLflow makes the store itself, as without the copy


def _copy_empty_store(db: Path, artifact_root: Path | None) -> None:
    import shutil
    import sqlite3
    import tempfile

    from mlflow import MlflowClient
    from mlflow.version import VERSION

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "omnidr" / "mlflow" / f"empty-{VERSION}.db"
    if not cache.is_file():
        cache.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache.parent) as tmp:
            MlflowClient(tracking_uri=f"sqlite:///{tmp}/empty.db").search_experiments()
            os.replace(f"{tmp}/empty.db", cache)  # whole or not at all; two makers write the same empty store
    db.parent.mkdir(parents=True, exist_ok=True)
    part = db.with_name(f".{db.name}.{os.getpid()}.part")
    try:
        shutil.copyfile(cache, part)
        if artifact_root is not None:
            with sqlite3.connect(part) as con:
                con.execute("UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0",
                            ((Path(artifact_root).resolve() / "0").as_posix(),))
            con.close()
        try:
            os.link(part, db)  # never over a store another process made meanwhile
        except FileExistsError:
            pass
    finally:
        part.unlink(missing_ok=True)


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


def _ns(when) -> int | None:
    """A datetime as nanoseconds since the epoch (None stays None)."""
    return int(when.timestamp() * 1e9) if when is not None else None


def _delivers_answer(task_kind: str) -> bool:
    """Whether an attempt of this task format delivered an answer (its record then says how research ended)."""
    from omnidr.benchmark import task_format

    fmt = task_format(task_kind)
    return fmt is not None and fmt.delivers_answer


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
        seed_store(tracking_uri, artifact_root)
        self.client = MlflowClient(tracking_uri=tracking_uri)
        from mlflow.tracing.client import TracingClient  # assessments on traces (MlflowClient has no call for them)

        self.tracing = TracingClient(tracking_uri)
        # traces are exported to the process's tracking URI, not the client's, and by default on a
        # background queue that may still hold them when the process exits
        import mlflow

        mlflow.set_tracking_uri(tracking_uri)
        os.environ.setdefault("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
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
                "proxy_mode": record.proxy_mode,
                **{f"image.{role}": image_id for role, image_id in record.image_ids.items()},
                **({"termination": record.termination, "answer_source": record.answer_source,
                    "context_handling": record.context_handling} if _delivers_answer(record.task_kind) else {}),
            })
            self._metrics(run_id, {
                "success": 1.0 if record.delivered else 0.0, "input_tokens": use.input_tokens,
                "output_tokens": use.output_tokens, "total_tokens": use.input_tokens + use.output_tokens,
                "model_requests": use.requests, "tool_calls": use.tool_calls, "wall_time_s": record.wall_time_s,
                "network_requests": record.network_requests, "network_blocked": record.network_blocked,
                "cost_usd": use.cost, "unpriced_requests": use.unpriced_requests,
                **({"finalization_requests": record.finalization.requests,
                    "finalization_output_tokens": record.finalization.output_tokens} if record.finalization else {}),
            })
            self.client.set_terminated(run_id, "FINISHED" if record.delivered else "FAILED",
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

    def attempt_trace(self, label: str, task_id: str, attempt: int, trajectory, started_at=None, ended_at=None) -> str | None:
        """The attempt's trajectory as an MLflow trace linked to its run (once): a root span for the
        attempt, a span per model call (type CHAT_MODEL, with the turn's text and tokens) and, under it,
        a span per tool call (type TOOL, with its arguments, phase and observation), so that MLflow's
        trace view shows the steps as `audit.html` does. Steps without timestamps (Codex exec events)
        take their neighbours' times."""
        with self._lock:
            run = self._find(**{"omnidr.kind": "attempt", "omnidr.attempt": f"{label}/{task_id}/{attempt}"})
            if run is None or run.data.tags.get("omnidr.trace"):
                return None
            steps = trajectory.steps
            t0 = _ns(started_at) or next((_ns(s.timestamp) for s in steps if s.timestamp), None) or time.time_ns()
            t_end = max(_ns(ended_at) or 0, max((_ns(s.timestamp) or 0 for s in steps), default=0), t0 + 1)
            times, last = [], t0
            for s in steps:
                last = max(last, _ns(s.timestamp) or last)
                times.append(last)
            root = self.client.start_trace(
                f"{task_id} #{attempt}", span_type="AGENT", experiment_id=self.experiment_id, run_id=run.info.run_id,
                inputs={"task": task_id, "harness": trajectory.harness, "model": trajectory.model},
                attributes={"omnidr.system": label, "omnidr.source_format": trajectory.source_format},
                tags={"omnidr.attempt": f"{label}/{task_id}/{attempt}"}, start_time_ns=t0)
            trace_id = root.trace_id
            for k, step in enumerate(steps):
                if step.type != "agent":
                    continue
                start = times[k]
                end = max(times[k + 1] if k + 1 < len(times) else t_end, start + 1)
                usage = step.usage.model_dump(exclude_none=True) if step.usage else {}
                span = self.client.start_span(
                    f"model call {step.index}" + (" (subagent)" if step.subagent else ""), trace_id, root.span_id,
                    span_type="CHAT_MODEL", start_time_ns=start,
                    inputs={"model": step.model}, attributes={"omnidr.step": step.index, **{f"usage.{u}": v for u, v in usage.items()}})
                seen = {o.tool_call_id: o for o in step.observations}
                for call in step.tool_calls:
                    obs = seen.get(call.id)
                    tool = self.client.start_span(call.name, trace_id, span.span_id, span_type="TOOL", start_time_ns=start,
                                                  inputs=call.arguments, attributes={"omnidr.phase": call.phase})
                    self.client.end_span(trace_id, tool.span_id, end_time_ns=end,
                                         outputs=(obs.content[:4000] if obs else None),
                                         status="ERROR" if obs is not None and obs.is_error else "OK")
                self.client.end_span(trace_id, span.span_id, end_time_ns=end,
                                     outputs={"message": step.message[:4000], "reasoning": (step.reasoning or "")[:4000]},
                                     status="ERROR" if step.error else "OK")
            tokens = trajectory.final_metrics.tokens
            cost = run.data.metrics.get("cost_usd")  # the gateway's dollars (attempt_run); absent: unpriced
            self.client.end_trace(trace_id, end_time_ns=t_end, status="OK" if trajectory.complete is not False else "ERROR",
                                  outputs={"complete": trajectory.complete,
                                           "tokens": tokens.model_dump() if tokens else None,
                                           "cost_usd": cost})
            self.client.set_trace_tag(trace_id, "omnidr.cost_usd", "unpriced" if cost is None else f"{cost:.6f}")
            self._feedback(trace_id, "cost_usd", cost, "omnidr.gateway", rationale=(
                "what the attempt's model requests cost, priced by the gateway" if cost is not None else
                "unpriced: the run has no price for its model, or an answer came without usage"))
            # the audit's `steps` (paper Table 23: logged trajectory entries), the same quantity in both places
            self._metrics(run.info.run_id, {"steps": len(steps), "agent_steps": sum(s.type == "agent" for s in steps)})
            self.client.set_tag(run.info.run_id, "omnidr.trace", trace_id)
            return trace_id

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

    def _feedback(self, trace_id: str, name: str, value, source_id: str, rationale: str | None = None,
                  metadata: dict[str, str] | None = None, judge: bool = False) -> None:
        """One MLflow assessment (feedback) on a trace: a judge's verdict (LLM_JUDGE) or a figure (CODE)."""
        from mlflow.entities import AssessmentSource, Feedback

        source = AssessmentSource(source_type="LLM_JUDGE" if judge else "CODE", source_id=source_id)
        self.tracing.log_assessment(trace_id, Feedback(name=name, value=value, source=source, rationale=rationale,
                                                       metadata=metadata))

    def attempt_verdicts(self, label: str, task_id: str, attempt: int, evaluation) -> None:
        """The judge's verdicts on the attempt's trace, once per judge (after `attempt_trace`), so that MLflow's
        trace view shows what was decided and why beside what the agent did: for a report, one assessment per
        judged atom (J atoms: verdict, rationale, quoted span, votes, judge id) and the task's score; for an answer,
        whether it is correct and why. A model judge is an LLM_JUDGE source; the offline baseline and the option
        checker are CODE."""
        with self._lock:
            run = self._find(**{"omnidr.kind": "attempt", "omnidr.attempt": f"{label}/{task_id}/{attempt}"})
            trace_id = run.data.tags.get("omnidr.trace") if run is not None else None
            judge = evaluation.judge.key
            if run is None or not trace_id or run.data.tags.get("omnidr.assessed_by") == judge:
                return
            model = evaluation.judge.kind == "openai-compatible"
            if hasattr(evaluation, "atoms"):  # a report's evaluation
                for atom in evaluation.atoms:
                    if atom.evaluator != "J" or atom.verdict is None:
                        continue
                    self._feedback(trace_id, f"atom {atom.atom_id}", atom.verdict, judge,
                                   rationale=atom.rationale or None, judge=model,
                                   metadata={"direction": atom.direction, "outcome": atom.outcome, "quote": atom.quote,
                                             "votes": ",".join(v.verdict or "-" for v in atom.votes)})
                self._feedback(trace_id, "score", evaluation.score.total, judge,
                               rationale=f"Omni-ART total over the atoms decided by {judge} and the probes")
            elif evaluation.verdict is not None:  # an answer's
                verdict = evaluation.verdict
                self._feedback(trace_id, "correct", verdict.correct, judge, rationale=verdict.reason or None,
                               metadata={"confidence": f"{verdict.confidence:g}"}, judge=model)
            self.client.set_tag(run.info.run_id, "omnidr.assessed_by", judge)

    def attempt_answer(self, label: str, task_id: str, attempt: int, evaluation, evaluation_dir: Path) -> None:
        """The judged answer of the attempt (short-answer kind), and its evaluation folder (once per judge)."""
        with self._lock:
            run = self._find(**{"omnidr.kind": "attempt", "omnidr.attempt": f"{label}/{task_id}/{attempt}"})
            if run is None:
                return
            run_id = run.info.run_id
            verdict = evaluation.verdict
            self._metrics(run_id, {"correct": None if verdict is None else float(verdict.correct),
                                   "judge_confidence": None if verdict is None else verdict.confidence})
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
                elif path.is_dir():  # the analysis tables
                    self.client.log_artifacts(parent_id, str(path), artifact_path=f"results/{path.name}")
            self.client.set_terminated(parent_id, "FINISHED")

    def reliability_run(self, name: str, metrics: dict[str, float | None], files: list[Path]) -> str:
        """A judge-reliability result of the run root (stability, agreement): its figures and files, in
        a run of its own, found again and updated when the command is run again."""
        with self._lock:
            run = self._find(**{"omnidr.kind": "reliability", "omnidr.reliability": name})
            if run is None:
                run = self.client.create_run(self.experiment_id, run_name=f"judge {name}",
                                             tags={"omnidr.kind": "reliability", "omnidr.reliability": name})
            run_id = run.info.run_id
            self._metrics(run_id, metrics)
            for path in files:
                if path.is_file():
                    self.client.log_artifact(run_id, str(path), artifact_path="reliability")
            self.client.set_terminated(run_id, "FINISHED")
            return run_id

    def run_link(self, run_id: str) -> str:
        return f"#/experiments/{self.experiment_id}/runs/{run_id}"
