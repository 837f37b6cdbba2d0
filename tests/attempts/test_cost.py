"""Dollars in the sandbox: a lab's prices (`--prices`), an attempt's dollar budget enforced by the gateway, and
`--max-cost`, which leaves attempts unstarted rather than spend past it. The fake upstream answers every chat
request with 11 prompt and 7 completion tokens; at $1,000 and $2,000 per million that is $0.011 + $0.014 = $0.025
a request."""

import json

import pytest
from attempt_helpers import first_task, read_jsonl, run_attempts
from test_sandbox import DEMO, _probe, _run_cli

pytestmark = [pytest.mark.docker, pytest.mark.network]

PER_REQUEST = 11 * 1000 / 1e6 + 7 * 2000 / 1e6


@pytest.fixture
def prices(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"fake-model": {"input_per_mtok": 1000, "output_per_mtok": 2000}}))
    return path


def test_a_dollar_budget_ends_the_attempt_at_the_request_that_spends_it(tmp_path, images, upstream_factory, real_key,
                                                                        prices):
    from omnidr.attempts import load_prices

    network, upstream = upstream_factory()
    [record] = run_attempts(tmp_path / "run", images, network, ["chat:3"], budget={"max_cost_usd": 0.05},
                            prices=load_prices(prices))[first_task()]
    attempt = tmp_path / "run" / "attempts" / first_task() / "1"
    assert [r["status"] for r in _probe(attempt)["chat:3"]["responses"]] == [200, 200, 400]
    assert record.reason.value == "budget_exhausted" and record.budget_use.exhausted == "max_cost_usd"
    assert record.budget_use.cost == pytest.approx(2 * PER_REQUEST)  # $0.05: the second request reaches the limit
    lines = read_jsonl(attempt / "logs" / "gateway.jsonl")
    assert [line["cost_usd"] for line in lines] == [pytest.approx(PER_REQUEST)] * 2 + [None]
    assert lines[-1]["budget_exhausted"] == "max_cost_usd"
    # the gateway in its container asked the run's shared upstream limiter (on the host) before each request
    assert all(line["upstream_wait_s"] is not None and not line["upstream_limit_error"] for line in lines[:2])
    saved = json.loads((attempt / "attempt.json").read_text())
    assert saved["budget_use"]["cost_usd"] == pytest.approx(0.05) and saved["budget_use"]["unpriced_requests"] == 0
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["pricing"]["model"] == "fake-model" and run["pricing"]["source"].startswith("--prices prices.json")
    assert len([line for line in upstream.logs().decode().splitlines() if "/v1/chat/completions" in line]) == 2


def test_max_cost_leaves_attempts_unstarted_and_a_rerun_finishes_them(tmp_path, images, upstream_factory, real_key,
                                                                      prices):
    """Each attempt reserves its $0.05 budget; after the first spent $0.025, the second would need $0.075 of the
    $0.06 cap: it is left unstarted, the run stops with code 3 saying so, and the same command finishes it."""
    network, _ = upstream_factory()
    run_dir = tmp_path / "run"
    tasks = json.loads((DEMO / "snapshot.json").read_text())["tasks"][:2]
    extra = ("--model", "fake-model", "--max-attempt-cost", "0.05", "--max-cost", "0.06", "--prices", str(prices))
    first = _run_cli(run_dir, network, *extra, agent=("chat:1", "report"))
    out, err = first.communicate(timeout=300)
    assert first.returncode == 3, out + err
    assert (f"error: --max-cost $0.06 reached: this run spent $0.0250 on 1 attempt(s) and left 1 task(s) unstarted "
            f"({tasks[1]}); rerun the same command to finish them") in err and "Traceback" not in err
    assert (run_dir / "attempts" / tasks[0] / "1" / "attempt.json").is_file()
    assert not (run_dir / "attempts" / tasks[1]).exists()
    kept = (run_dir / "attempts" / tasks[0] / "1" / "attempt.json").read_bytes()

    again = _run_cli(run_dir, network, *extra, agent=("chat:1", "report"))
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, out + err
    assert "2 of 2 task(s) delivered a report" in out and "$0.0250" in out
    assert (run_dir / "attempts" / tasks[0] / "1" / "attempt.json").read_bytes() == kept  # not redone
    second = json.loads((run_dir / "attempts" / tasks[1] / "1" / "attempt.json").read_text())
    assert second["reason"] == "success" and second["budget_use"]["cost_usd"] == pytest.approx(PER_REQUEST)


def test_dollar_options_that_cannot_hold_are_refused_in_one_line(tmp_path, images, upstream_factory, real_key,
                                                                 prices):
    network, _ = upstream_factory()
    cases = [
        (("--max-attempt-cost", "0.05"), "no price is known for the model 'fake-model'"),
        (("--max-cost", "1", "--prices", str(prices)), "--max-cost needs a dollar budget per attempt"),
    ]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"fake-model": {"input_per_mtok": 1}}))
    cases.append((("--prices", str(bad)), "lacks output_per_mtok"))
    for extra, message in cases:
        proc = _run_cli(tmp_path / "run", network, "--model", "fake-model", *extra)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 2, (extra, out, err)
        assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "run" / "attempts").exists()
