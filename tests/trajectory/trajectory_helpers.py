"""Helpers of the trajectory tests: gateway exchanges, run folders, attempt records and network
logs, written through the real models of the gateway, the attempts stage and the egress proxy."""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sandbox.models import GatewayExchange, TokenUsage

T0 = datetime(2026, 5, 1, 10, 0, 0, tzinfo=UTC)


def exchange(seq: int, response_body, *, route: str = "chat_completions", request_body=None, tokens=(100, 10),
             outcome: str = "ok", status: int = 200, stream: bool = False) -> GatewayExchange:
    """One gateway.jsonl line, as the gateway model writes it."""
    start = T0 + timedelta(seconds=10 * seq)
    return GatewayExchange(
        seq=seq, started_at=start, finished_at=start + timedelta(seconds=3), latency_s=3.0, method="POST",
        path={"chat_completions": "/v1/chat/completions", "responses": "/v1/responses",
              "messages": "/v1/messages"}[route],
        route=route, model="test-model", stream=stream, counted=True, status=status, outcome=outcome,
        usage=TokenUsage(input_tokens=tokens[0], output_tokens=tokens[1]) if tokens else None,
        request_body=request_body or {"model": "test-model", "messages": []}, response_body=response_body,
    )


def write_gateway(path: Path, exchanges: list[GatewayExchange]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(e.model_dump_json() + "\n" for e in exchanges), "utf-8")
    return path


def make_run(root: Path, harness: str, task: str = "task-1", attempt: int = 1) -> Path:
    """A run folder with one empty attempt folder; returns the attempt folder."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "run.json").write_text(json.dumps({"harness": harness, "model": "test-model"}), "utf-8")
    folder = root / "attempts" / task / str(attempt)
    for sub in ("logs", "output/harness-logs", "output/report"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    return folder


def attempt_record(folder: Path, harness: str, wall_time_s: float = 95.0, max_total_tokens: int | None = 50_000,
                   reason: str = "success", detail: str = "report delivered", exit_code: int | None = 0) -> None:
    """attempt.json written through the real AttemptRecord model."""
    from omnidr.attempts import AttemptRecord, SandboxLimits
    from sandbox.models import Budget

    record = AttemptRecord(
        task_id=folder.parent.name, attempt=int(folder.name), harness=harness, command=["agent"], reason=reason,
        detail=detail, exit_code=exit_code, started_at=T0, ended_at=T0 + timedelta(seconds=wall_time_s),
        wall_time_s=wall_time_s, budget=Budget(max_total_tokens=max_total_tokens), limits=SandboxLimits(),
        proxy_mode="log",
    )
    (folder / "attempt.json").write_text(record.model_dump_json(indent=2), "utf-8")


def network_log(folder: Path) -> None:
    from sandbox.models import RequestEvent, TunnelEvent

    events = [
        RequestEvent(seq=1, started_at=T0 + timedelta(seconds=12), duration_s=0.4, mode="intercept", method="GET",
                     host="example.org", port=443, status=200, received_bytes=5120, scheme="https",
                     url="https://example.org/page?q=1", source="upstream", content_type="text/html"),
        RequestEvent(seq=2, started_at=T0 + timedelta(seconds=20), duration_s=0.1, mode="intercept", method="GET",
                     host="benchmark.example", port=443, status=403, blocked=True, block_reason="denylist",
                     scheme="https", url="https://benchmark.example/answers", source="proxy"),
        TunnelEvent(seq=3, started_at=T0 + timedelta(seconds=30), duration_s=1.0, mode="log", method="CONNECT",
                    host="cdn.example", port=443, status=200, received_bytes=900),
    ]
    (folder / "logs" / "network.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in events), "utf-8")
