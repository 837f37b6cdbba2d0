"""Every file and folder of an evaluation, named once (Harbor's `TrialPaths` is the anchor).

An `omnidr eval` root holds one run folder per system; `omnidr run` makes a run folder alone:

    <eval root>/                    EvalPaths
        omnidr.log                  the driver's run log: every stage, attempt, retry and fault, timestamped
        environment.json            versions of the host, engine, images and key packages
        leaderboard.json .md .png   the results
        index.html                  the results page
        <system>/                   RunPaths: one system's run folder
            eval.json               the system's evaluation config (`omnidr eval` only)
            run.json                the run's config (attempts.RunConfig)
            web/                    what the attempts recorded (`--web record`), in a snapshot's web/ format
            attempts/summary.json   the runner's per-task summary
            attempts/<task>/<n>/    AttemptPaths: one attempt, n from 1
                attempt.json        the attempt record (attempts.AttemptRecord), written last
                trajectory.json     the audited trajectory (ATIF)
                audit.html          the audit page
                control/ input/     what the agent got (gateway config, instruction; video, captions)
                logs/               gateway.jsonl, gateway_state.json, network.jsonl, provider_web.jsonl,
                                    agent.log, <helper>.container.log
                output/             the agent's /output: report/ (or answer.json), harness-logs/, trajectory.jsonl
                record/             what the proxy recorded (`record` mode)
            evaluation/summary.json the system's scores
            evaluation/<task>/evaluation.json   one task's scored evaluation
            evaluation/<task>/probe.json        the probe step's record (beside material.json, screenshots/, ...)

`omnidr._runread.read_run(folder)` reads any of the three folders back (root, system, attempt) with each record's
model; no other module builds these paths by hand.
"""

from dataclasses import dataclass
from pathlib import Path

from sandbox.models import ANSWER_FILE, GATEWAY_LOG, GATEWAY_STATE, NETWORK_LOG, PROVIDER_WEB_LOG, QUESTION_FILE

ATTEMPT_FILE = "attempt.json"
TRAJECTORY_FILE = "trajectory.json"
AUDIT_PAGE = "audit.html"
RUN_FILE = "run.json"
SUMMARY_FILE = "summary.json"
EVALUATION_FILE = "evaluation.json"
EVAL_FILE = "eval.json"
ENVIRONMENT_FILE = "environment.json"
RUN_LOG = "omnidr.log"
HARNESS_LOGS = "harness-logs"
"""Under the agent's /output (`output/` of the attempt folder): the harness's own logs and the skills' state."""
RESULT_FILES = ("leaderboard.json", "leaderboard.md", "leaderboard.png", "index.html")


@dataclass(frozen=True)
class AttemptPaths:
    """One attempt's folder: `attempts/<task>/<n>/` of a run folder."""

    root: Path

    @property
    def record(self) -> Path:
        return self.root / ATTEMPT_FILE

    @property
    def trajectory(self) -> Path:
        return self.root / TRAJECTORY_FILE

    @property
    def audit_page(self) -> Path:
        return self.root / AUDIT_PAGE

    @property
    def control(self) -> Path:
        return self.root / "control"

    @property
    def gateway_config(self) -> Path:
        """The model gateway's configuration (`control/gateway.json`)."""
        return self.control / "gateway.json"

    @property
    def ca(self) -> Path:
        """Where the egress proxy writes the attempt's CA certificate (`control/ca/`, modes that decrypt HTTPS)."""
        return self.control / "ca"

    @property
    def resolv_conf(self) -> Path:
        """The agent's /etc/resolv.conf (`control/resolv.conf`)."""
        return self.control / "resolv.conf"

    @property
    def input(self) -> Path:
        return self.root / "input"

    @property
    def instruction(self) -> Path:
        """The instruction the agent is given (`input/instruction.txt`)."""
        return self.input / "instruction.txt"

    @property
    def question(self) -> Path:
        """A multiple-choice attempt's question without its key (`input/question.json`)."""
        return self.input / QUESTION_FILE

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def gateway_log(self) -> Path:
        return self.logs / GATEWAY_LOG

    @property
    def gateway_state(self) -> Path:
        return self.logs / GATEWAY_STATE

    @property
    def network_log(self) -> Path:
        return self.logs / NETWORK_LOG

    @property
    def provider_web_log(self) -> Path:
        return self.logs / PROVIDER_WEB_LOG

    @property
    def agent_log(self) -> Path:
        return self.logs / "agent.log"

    def container_log(self, helper: str) -> Path:
        return self.logs / f"{helper}.container.log"

    @property
    def output(self) -> Path:
        return self.root / "output"

    @property
    def report(self) -> Path:
        return self.output / "report"

    @property
    def answer(self) -> Path:
        """`answer.json` of a short-answer attempt (`/output/answer.json` in the agent's container)."""
        return self.output / ANSWER_FILE

    @property
    def harness_logs(self) -> Path:
        return self.output / HARNESS_LOGS

    @property
    def common_trajectory(self) -> Path:
        """`trajectory.jsonl` a harness may write itself (the reference agent does)."""
        return self.output / "trajectory.jsonl"

    @property
    def recording(self) -> Path:
        return self.root / "record"

    def set_aside(self, stamp: str) -> Path:
        """Where an interrupted attempt's folder is kept (`<n>.interrupted-<stamp>`) when the attempt is redone."""
        return self.root.with_name(f"{self.root.name}.interrupted-{stamp}")

    @property
    def finished(self) -> bool:
        """Whether the attempt ended: its record is written last."""
        return self.record.is_file()


@dataclass(frozen=True)
class RunPaths:
    """One system's run folder (what `omnidr run` makes, and each system of an eval root)."""

    root: Path

    @property
    def config(self) -> Path:
        return self.root / RUN_FILE

    @property
    def eval_config(self) -> Path:
        return self.root / EVAL_FILE

    @property
    def web(self) -> Path:
        return self.root / "web"

    @property
    def attempts(self) -> Path:
        return self.root / "attempts"

    @property
    def attempts_summary(self) -> Path:
        return self.attempts / SUMMARY_FILE

    def task_attempts(self, task_id: str) -> Path:
        return self.attempts / task_id

    def attempt(self, task_id: str, number: int) -> AttemptPaths:
        return AttemptPaths(self.task_attempts(task_id) / str(number))

    def attempt_folders(self, task_id: str) -> list[AttemptPaths]:
        """The task's attempt folders in attempt order (numbered folders only)."""
        folder = self.task_attempts(task_id)
        if not folder.is_dir():
            return []
        return [AttemptPaths(f) for f in sorted((f for f in folder.iterdir() if f.is_dir() and f.name.isdigit()),
                                                key=lambda f: int(f.name))]

    @property
    def evaluation(self) -> Path:
        return self.root / "evaluation"

    @property
    def evaluation_summary(self) -> Path:
        return self.evaluation / SUMMARY_FILE

    def task_evaluation(self, task_id: str) -> Path:
        return self.evaluation / task_id / EVALUATION_FILE

    @property
    def scored(self) -> bool:
        return self.evaluation_summary.is_file()


@dataclass(frozen=True)
class EvalPaths:
    """An `omnidr eval` root."""

    root: Path

    @property
    def environment(self) -> Path:
        return self.root / ENVIRONMENT_FILE

    @property
    def log(self) -> Path:
        return self.root / RUN_LOG

    @property
    def results(self) -> tuple[Path, ...]:
        return tuple(self.root / name for name in RESULT_FILES)

    @property
    def index(self) -> Path:
        return self.root / "index.html"

    def system(self, name: str) -> RunPaths:
        return RunPaths(self.root / name)

    def systems(self) -> list[RunPaths]:
        """The system folders of `omnidr eval` (with eval.json), by name."""
        if not self.root.is_dir():
            return []
        return [RunPaths(p) for p in sorted(self.root.iterdir()) if p.is_dir() and RunPaths(p).eval_config.is_file()]

    def scored_systems(self) -> list[RunPaths]:
        """The system folders with scores, by name."""
        if not self.root.is_dir():
            return []
        return [RunPaths(p) for p in sorted(self.root.iterdir()) if p.is_dir() and RunPaths(p).scored]
