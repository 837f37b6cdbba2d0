"""Which failed model requests count as an upstream outage (the attempt is not the agent's fault)."""

import json

from omnidr.attempts._sandbox import _outage_requests


def test_unreachable_5xx_and_429_are_outages_but_4xx_is_the_agents_failure(tmp_path):
    log = tmp_path / "gateway.jsonl"
    exchanges = [
        {"outcome": "ok", "upstream_status": 200},
        {"outcome": "upstream_unreachable", "upstream_status": None},
        {"outcome": "upstream_error", "upstream_status": 503},
        {"outcome": "upstream_error", "upstream_status": 429},
        {"outcome": "stream_broken", "upstream_status": 200},
        {"outcome": "upstream_error", "upstream_status": 400},  # context too long: the agent's request
        {"outcome": "budget_exhausted", "upstream_status": None},
    ]
    log.write_text("\n".join(json.dumps(e) for e in exchanges) + '\n{"outcome": "upstream_unrea')  # cut by a kill
    assert _outage_requests(log) == 4
    assert _outage_requests(tmp_path / "missing.jsonl") == 0
