"""One attempt's lifecycle: its limits (wall clock, stall), its delivery check, its record and its reason.

It talks to the sandbox through the backend interface alone (`_backend`: start the agent with its two doors,
wait, kill, exec, copy out, end the doors, stop); which engine runs the sandbox (Docker, `_docker`) is the
backend's business. The doors' logs in the attempt folder and the model gateway's control endpoints are what it
reads besides."""

import dataclasses
import logging
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import requests

from omnidr._files import write_atomic
from omnidr.benchmark import check_report
from omnidr.paths import AttemptPaths
from sandbox.models import (
    AnswerFile,
    FinalizationResult,
    GatewayExchange,
    GatewayState,
    SpendCounts,
    read_answer_file,
    read_web_log,
)

from ._admission import Admission, Cancelled, NotStarted
from ._backend import SandboxBackend, SandboxFault, direct_session, one_line
from ._contract import Harness
from ._models import AttemptReason, AttemptRecord, BudgetUse, DoorPolicy
from ._spec import AttemptSpec

log = logging.getLogger(__name__)

# Set by the runner on Ctrl-C: attempts stopped by it are not finished attempts (no attempt.json is
# written, so the next invocation sets the folder aside and runs the attempt again), and no new one starts.
INTERRUPTED = threading.Event()
FINALIZE_TIMEOUT_S = 900.0  # two requests of at most 4,000 output tokens each, with the gateway's retries


def _now() -> datetime:
    return datetime.now(UTC)


def _mtime(path: Path) -> float:
    """When a file was last written (epoch seconds), 0 when there is none."""
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _outage_requests(gateway_log: Path) -> int:
    """Exchanges that failed on the upstream's side (`GatewayExchange.upstream_outage`)."""
    n = 0
    try:
        lines = gateway_log.read_text("utf-8").splitlines()
    except OSError:
        return 0
    for line in lines:
        try:
            n += GatewayExchange.model_validate_json(line).upstream_outage
        except ValueError:
            continue  # a last line cut short by a kill
    return n


class AttemptSandbox:
    """Runs one attempt in a sandbox of `backend`, under its limits, and writes its record."""

    def __init__(self, backend: SandboxBackend, spec: AttemptSpec, harness: Harness,
                 admission: Admission | None = None):
        self.admission = admission or Admission()  # start slots and the run's stop rule (see _admission)
        self.spec = dataclasses.replace(spec, folder=spec.folder.resolve())  # bind mounts need absolute paths
        self.harness = harness
        self.sandbox = backend.sandbox(self.spec, harness)
        self.dirs = AttemptPaths(self.spec.folder)
        self.t0 = time.monotonic()

    def run(self) -> AttemptRecord:
        spec, dirs = self.spec, self.dirs
        for d in (dirs.output, dirs.logs, dirs.control, dirs.input):
            d.mkdir(parents=True, exist_ok=True)
        self.sandbox.prepare(dirs)
        started = _now()
        self.t0 = time.monotonic()
        dirs.instruction.write_text(spec.instruction, "utf-8")
        if spec.question is not None:
            dirs.question.write_text(spec.question.model_dump_json(indent=2), "utf-8")
        record = dict(
            task_id=spec.task_id, attempt=spec.attempt, harness=self.harness.name, command=[], task_kind=spec.task_kind,
            started_at=started, budget=spec.budget, limits=spec.limits, proxy_mode=spec.proxy_mode,
            doors=DoorPolicy(capability=spec.capability, proxy_mode=spec.proxy_mode,
                             web=spec.proxy_mode != "deny" or spec.provider_tools.opens_provider_web,
                             provider_tools=spec.provider_tools, model=spec.model, model_policy=spec.model_policy,
                             denylist_entries=len(spec.denylist), allow_nets=list(spec.allow_nets)),
        )
        try:
            not_started = self._start(record)
            return not_started if not_started is not None else self._run_agent(record)
        finally:
            self.cleanup()

    def _start(self, record: dict) -> AttemptRecord | None:
        """Make the sandbox and start the agent, in a start slot (see _admission): from its first object to its
        agent's start. The attempt's record when it ended there (infra_error), None when the agent runs."""
        admission = self.admission
        try:
            with admission.gate.slot(INTERRUPTED) as waited_s:
                if admission.breaker.stopped:  # the run stopped while this attempt waited: it never starts
                    raise NotStarted(admission.breaker.reason)
                record["start_wait_s"] = round(waited_s, 3)
                setup_t0 = time.monotonic()
                try:
                    command = self.harness.command(self.sandbox.context)
                    record["command"] = command
                    record["image_ids"], record["image_packages"] = self.sandbox.images()
                    self.sandbox.start(self.dirs, command)
                except (RuntimeError, OSError) as exc:  # SandboxFault included: the engine failed
                    detail = f"sandbox setup failed: {exc}"
                    admission.breaker.failed(detail)
                    return self._finish(record, AttemptReason.infra_error, detail)
                record["setup_s"] = round(time.monotonic() - setup_t0, 3)
                admission.breaker.started()
        except Cancelled:  # Ctrl-C while queued: INTERRUPTED is set, so nothing is written
            return self._finish(record, AttemptReason.infra_error, "interrupted while waiting for a start slot")
        return None

    def _run_agent(self, record: dict) -> AttemptRecord:
        """Wait for the agent under the limits, keep its output, end the doors, and judge the attempt."""
        spec, dirs = self.spec, self.dirs
        run_t0 = time.monotonic()
        exit_code, timed_out, fault, stalled = None, False, None, None
        try:
            exit_code, timed_out, stalled = self._wait(run_t0)
        except SandboxFault as exc:
            fault = str(exc)
        wall = time.monotonic() - run_t0
        # Engine faults end the attempt as infra_error (retried, not counted), keeping whatever could be copied.
        copied = self.sandbox.copy_out(dirs)
        fault = fault or copied
        if spec.delivers_answer and fault is None:
            self._settle_answer(dirs, record, timed_out or stalled is not None, exit_code)
        self.sandbox.end_doors(dirs)
        use = self._gateway_state(dirs)
        if fault is not None:
            return self._finish(record, AttemptReason.infra_error, fault, exit_code, wall_s=wall, use=use)
        if spec.delivers_answer:
            reason, detail = self._answer_reason(dirs, record, use, stalled)
        else:
            reason, detail = self._reason(dirs, timed_out, exit_code, wall, use, stalled)
        return self._finish(record, reason, detail, exit_code, wall_s=wall, use=use)

    def _wait(self, run_t0: float) -> tuple[int | None, bool, str | None]:
        """Wait for the agent to exit; kill it at the wall-clock limit, or when it has stalled. Returns its exit
        code (None when killed), whether the wall clock killed it, and the stall's detail (None: no stall).

        A stall is `stall_timeout_s` (HostPolicy) with no model request (no write to gateway.jsonl), no proxy
        request (no write to network.jsonl) and no change under /output (the newest modification time there, read
        in the sandbox). The backend is asked every `poll_s`; the two logs' times are read on the host each time,
        and /output only when they alone would call the attempt stalled (at most once per timeout while nothing
        changes there), so a working agent costs no exec at all."""
        dirs = self.dirs
        wall_s = self.spec.budget.wall_time_s
        stall_s = self.admission.policy.stall_timeout_s
        poll_s = min(60.0, max(0.5, stall_s / 10))
        started = time.time()
        output_at = started  # the newest change under /output seen so far (epoch seconds)
        while True:
            left = run_t0 + wall_s - time.monotonic()
            if left <= 0:
                self.sandbox.kill()
                return None, True, None
            code = self.sandbox.wait(min(left, poll_s))
            if code is not None:
                return code, False, None
            now = time.time()
            last = max(output_at, _mtime(dirs.gateway_log), _mtime(dirs.network_log))
            if now - last < stall_s:
                continue
            output_at = max(output_at, self._output_changed_at() or output_at)
            quiet = now - max(last, output_at)
            if quiet >= stall_s:
                self.sandbox.kill()
                return None, False, (
                    f"stalled: no model request, no proxy request and no change under /output for {quiet:.0f} s "
                    f"(stall timeout {stall_s:g} s), {now - started:.0f} s after the agent started; killed")

    def _output_changed_at(self) -> float | None:
        """The newest modification time under the agent's output folder (epoch seconds, on the host's clock),
        read in the sandbox; None when it cannot be read."""
        try:
            result = self.sandbox.exec(["find", self.sandbox.context.output_dir, "-printf", "%T@\\n"])
        except SandboxFault:
            return None
        times = [float(t) for t in result.stdout.split() if t.replace(b".", b"").isdigit()]
        return max(times) if result.returncode == 0 and times else None

    # -- the short-answer delivery (task kind short_answer, paper 002 App. C.2.3) ------------------
    def _settle_answer(self, dirs: AttemptPaths, record: dict, timed_out: bool, exit_code: int | None) -> None:
        """After the agent stopped and before the helpers end: read the agent's answer.json; when research ended
        without a complete answer, run the finalization stage through the gateway; write the final answer.json.

        Why research ended, when the agent did not say: killed at the wall clock or refused by the gateway's budget
        is `budget_exhausted` (the 3,600 s / 100-call research budget); a non-zero exit is `execution_error`; an
        exit 0 without an answer is `incomplete_output`. An upstream outage is left to `_answer_reason` (the attempt
        does not count) and gets no finalization."""
        spec = self.spec
        record["context_handling"] = spec.context_handling
        agent_answer = read_answer_file(dirs.answer)
        if agent_answer is not None and agent_answer.has_answer:
            record.update(termination=agent_answer.termination, answer_source="research")
            return
        state = self._live_gateway_state()
        if agent_answer is not None:
            termination, error = agent_answer.termination, agent_answer.execution_error
        elif timed_out or (state is not None and state.budget_exhausted):
            termination, error = "budget_exhausted", None
        elif exit_code not in (0, None):
            termination, error = "execution_error", f"the agent exited {exit_code}"
        else:
            termination, error = "incomplete_output", None
        record["termination"] = termination
        if state is not None and state.failed_requests and _outage_requests(dirs.gateway_log):
            return  # an outage: the attempt does not count, and a rerun repeats it
        result = self._finalize() if spec.finalize is not None else None
        record["finalization"] = result
        final = result.answer_file(termination, error) if result is not None else \
            AnswerFile(answer="", termination=termination, source="none", execution_error=error)
        record["answer_source"] = final.source
        dirs.output.mkdir(parents=True, exist_ok=True)
        write_atomic(dirs.answer, final.model_dump_json(indent=2))

    def _live_gateway_state(self) -> GatewayState | None:
        """The gateway's counts now (it has not ended yet), None when it does not answer."""
        control = self.sandbox.control
        try:
            with direct_session() as http:
                answer = http.get(f"{control.gateway_url}/_gateway/state",
                                  headers={"Authorization": f"Bearer {control.admin_token}"}, timeout=30)
            return GatewayState.model_validate_json(answer.text) if answer.status_code == 200 else None
        except (requests.RequestException, ValueError):
            return None

    def _finalize(self) -> FinalizationResult | None:
        """The gateway's tool-free finalization stage (POST /_gateway/finalize); None when it could not run."""
        assert self.spec.finalize is not None
        control = self.sandbox.control
        try:
            with direct_session() as http:
                answer = http.post(
                    f"{control.gateway_url}/_gateway/finalize",
                    data=self.spec.finalize.model_dump_json(), timeout=FINALIZE_TIMEOUT_S,
                    headers={"Authorization": f"Bearer {control.admin_token}", "Content-Type": "application/json"})
        except requests.RequestException as exc:
            log.warning("%s attempt %d: the finalization stage did not run: %s", self.spec.task_id, self.spec.attempt,
                        one_line(exc))
            return None
        if answer.status_code != 200:
            log.warning("%s attempt %d: the gateway refused the finalization stage: %d %s", self.spec.task_id,
                        self.spec.attempt, answer.status_code, answer.text[:300])
            return None
        try:
            return FinalizationResult.model_validate_json(answer.text)
        except ValueError as exc:
            log.warning("%s attempt %d: the finalization answer is unreadable: %s", self.spec.task_id,
                        self.spec.attempt, one_line(exc))
            return None

    def _answer_reason(self, dirs: AttemptPaths, record: dict, state: BudgetUse,
                       stalled: str | None = None) -> tuple[AttemptReason, str]:
        final = read_answer_file(dirs.answer)
        termination = record.get("termination") or "execution_error"
        if final is not None and final.has_answer:
            stage = "research" if final.source == "research" else "the finalization stage"
            return AttemptReason.success, f"answer from {stage} (research ended: {termination})"
        if stalled is not None:
            return AttemptReason.stalled, stalled
        outages = _outage_requests(dirs.gateway_log) if state.failed_requests else 0
        if outages:
            return AttemptReason.upstream_error, (
                f"no answer; {outages} of {state.requests} model request(s) failed upstream (unreachable, 5xx or 429 "
                f"after {state.upstream_retries} gateway retries); the attempt does not count and a rerun repeats it")
        finalization = record.get("finalization")
        why = ("; finalization: " + "; ".join(finalization.rejected)) if finalization and finalization.rejected else \
            ("" if finalization else "; the finalization stage did not run")
        return AttemptReason.no_answer, f"no answer (research ended: {termination}){why}"

    def _reason(self, dirs: AttemptPaths, timed_out: bool, exit_code: int | None, wall_s: float,
                state: BudgetUse, stalled: str | None = None) -> tuple[AttemptReason, str]:
        report = dirs.report / self.spec.report_entry
        check = check_report(report.parent, self.spec.report_data_file) if report.is_file() else None
        problem = check.problem if check is not None else None
        if check is not None and problem is None:
            return AttemptReason.success, "; ".join([f"report delivered at output/report/{self.spec.report_entry}",
                                                     *check.warnings])
        if timed_out:
            return AttemptReason.timeout, f"killed at the wall-clock limit of {self.spec.budget.wall_time_s:g} s"
        if stalled is not None:
            return AttemptReason.stalled, stalled
        if state.exhausted:
            return AttemptReason.budget_exhausted, f"budget {state.exhausted} spent and no report"
        if problem is not None:  # counted and retried as any failure; the folder stays for the audit
            return AttemptReason.invalid_report, f"output/report/ is {problem}"
        outages = _outage_requests(dirs.gateway_log) if state.failed_requests else 0
        if outages:
            return AttemptReason.upstream_error, (
                f"no report; {outages} of {state.requests} model request(s) failed upstream (unreachable, 5xx or "
                f"429 after {state.upstream_retries} gateway retries); the attempt does not count and a rerun repeats it")
        if exit_code == 0:
            return AttemptReason.no_report, "the agent exited 0 without a report"
        if exit_code == 137 and wall_s < self.spec.budget.wall_time_s:
            return AttemptReason.agent_error, "the agent was killed (exit 137: out of memory or SIGKILL) without a report"
        return AttemptReason.agent_error, f"the agent exited {exit_code} without a report"

    def _gateway_state(self, dirs: AttemptPaths) -> BudgetUse:
        path = dirs.gateway_state
        if not path.is_file():
            return BudgetUse()
        try:
            s = GatewayState.model_validate_json(path.read_text("utf-8"))
        except (OSError, ValueError):  # a summary cut short by a kill: the gateway.jsonl lines stay for the audit
            return BudgetUse()
        return BudgetUse(**s.model_dump(include=set(SpendCounts.model_fields)), exhausted=s.budget_exhausted)

    def _finish(self, record: dict, reason: AttemptReason, detail: str, exit_code: int | None = None,
                wall_s: float | None = None, use: BudgetUse | None = None) -> AttemptRecord:
        dirs = self.dirs
        web = read_web_log(dirs.logs, [])  # a damaged line is skipped: the files stay for the audit
        events = [e for e in web if e.via == "proxy"]
        provider = [e for e in web if e.via == "provider"]
        report = dirs.report / self.spec.report_entry
        rec = AttemptRecord(
            **record, reason=reason, detail=detail, exit_code=exit_code, ended_at=_now(),
            wall_time_s=round(wall_s if wall_s is not None else time.monotonic() - self.t0, 3),
            budget_use=use if use is not None else self._gateway_state(dirs), network_requests=len(events),
            network_blocked=sum(1 for e in events if e.blocked), provider_web_requests=len(provider),
            provider_web_blocked=sum(1 for e in provider if e.blocked),
            helpers_served_before=self.sandbox.served_before,
            report_path=report.relative_to(self.spec.folder).as_posix() if report.is_file() else None,
        )
        if INTERRUPTED.is_set():  # stopped by the user, not ended: leave it unfinished for the rerun
            return rec
        write_atomic(dirs.record, rec.model_dump_json(indent=2))
        return rec

    def cleanup(self) -> None:
        """Remove what the sandbox made (a backend may keep shared parts for the run's next attempt)."""
        self.sandbox.stop()
