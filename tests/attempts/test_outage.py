"""Which failed model requests count as an upstream outage (the attempt is not the agent's fault)."""

from datetime import UTC, datetime

from omnidr.attempts._lifecycle import _outage_requests
from sandbox.models import GatewayExchange


def _exchange(seq: int, outcome: str, upstream_status: int | None) -> str:
    now = datetime.now(UTC)
    return GatewayExchange(seq=seq, started_at=now, finished_at=now, latency_s=0.1, method="POST",
                           path="/v1/chat/completions", route="chat_completions", status=upstream_status or 502,
                           upstream_status=upstream_status, outcome=outcome).model_dump_json()


def test_unreachable_5xx_and_429_are_outages_but_4xx_is_the_agents_failure(tmp_path):
    log = tmp_path / "gateway.jsonl"
    exchanges = [
        ("ok", 200),
        ("upstream_unreachable", None),
        ("upstream_error", 503),
        ("upstream_error", 429),
        ("stream_broken", 200),
        ("upstream_error", 400),  # context too long: the agent's request
        ("budget_exhausted", None),
    ]
    lines = [_exchange(n, outcome, status) for n, (outcome, status) in enumerate(exchanges, start=1)]
    log.write_text("\n".join(lines) + '\n{"outcome": "upstream_unrea')  # cut by a kill
    assert _outage_requests(log) == 4
    assert _outage_requests(tmp_path / "missing.jsonl") == 0
