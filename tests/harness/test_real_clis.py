"""The real Claude Code and Codex CLIs (from their PyPI wheels, in their images) in the real sandbox,
driven by the scripted model, end to end: report, score, trajectory, proxy log, budgets, limits, keys."""

import json
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from testkit import DEMO, ROOT, scripted_on_loopback, system

from omnidr.attempts import SandboxLimits
from omnidr.benchmark import is_skeleton, read_report_data
from omnidr.harness import SystemRunOptions, run_system
from omnidr.trajectory import Trajectory
from omnidr.trajectory._audit import audit_run
from sandbox.models import Budget

pytestmark = [pytest.mark.docker, pytest.mark.images("claude-code", "codex")]
TASKS = ["pendant-lamp-safety", "nd-filter-waterfall", "sky-blue-rayleigh"]
CLIS = {"claude-code": ("claude-code-stream", "2.1.327"), "codex": ("codex-rollout", "0.147.0")}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def loopback_model():
    """The scripted model on the host's loopback: the path a user's own model server takes (a relay
    carries it into the sandbox), and an endpoint that is given a key to keep out of every artifact."""
    proc, url = scripted_on_loopback()
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module", params=list(CLIS))
def cli_run(request, tmp_path_factory, loopback_model):
    import os
    import secrets

    harness = request.param
    key = "sk-real-" + secrets.token_hex(12)
    os.environ["OMNIDR_TEST_REAL_KEY"] = key
    run_dir = tmp_path_factory.mktemp(harness) / "run"
    try:
        config = system(harness, url=loopback_model, key_env="OMNIDR_TEST_REAL_KEY",
                        budget=Budget(wall_time_s=300, attempts_per_task=1))
        ran = run_system(DEMO, run_dir, config, SystemRunOptions(tasks=TASKS, parallel=2,
                                                                limits=SandboxLimits(cpus=1.0, memory_mb=2048)))
    finally:
        os.environ.pop("OMNIDR_TEST_REAL_KEY", None)
    return harness, run_dir, ran, key


def test_every_demo_task_delivers_a_scored_report(cli_run):
    from omnidr.evaluation import ScoreRequest, score_run

    harness, run_dir, ran, _key = cli_run
    for task_id in TASKS:
        [record] = ran.records[task_id]
        assert record.reason.value == "success", f"{harness} {task_id}: {record.detail}"
        report = run_dir / "attempts" / task_id / "1" / "output" / "report"
        data = read_report_data(report)
        assert not is_skeleton(data) and data.findings and data.sources
        assert (report / "index.html").read_bytes() == (DEMO / "contract" / "template.html").read_bytes()
        frames = [m.src for seg in data.timeline for m in seg.media]
        assert frames and all((report / src).read_bytes()[:2] == b"\xff\xd8" for src in frames)
        assert data.video.duration_s == pytest.approx(
            json.loads((DEMO / "tasks" / task_id / "task.json").read_text())["video"]["duration_s"])
        # the image's CLI is the one its wheel brings, and the attempt records it
        assert record.image_packages["agent"].cli == {harness.replace("claude-code", "claude"): CLIS[harness][1]}
    scored = score_run(ScoreRequest(run_dir=run_dir, snapshot=DEMO))
    assert {t.task_id for t in scored.tasks} == set(TASKS)
    assert all(not t.failed and t.total > 50 for t in scored.tasks), [(t.task_id, t.total) for t in scored.tasks]


def test_the_trajectory_comes_from_the_native_logs_with_the_gateways_tokens(cli_run):
    harness, run_dir, _ran, _key = cli_run
    results = audit_run(run_dir)
    assert len(results) == len(TASKS)
    for result in results:
        attempt = run_dir / "attempts" / result.task_id / "1"
        traj = Trajectory.model_validate_json((attempt / "trajectory.json").read_text("utf-8"))
        assert traj.source_format == CLIS[harness][0] and traj.harness_version == CLIS[harness][1]
        assert traj.complete is True
        m = traj.final_metrics
        assert (m.harness_tokens.input_tokens, m.harness_tokens.output_tokens) == \
            (m.gateway_tokens.input_tokens, m.gateway_tokens.output_tokens)
        # per step, not 1 each: every step's output count is one gateway exchange's; the exchanges left
        # over are the CLI's own sub-requests (Claude Code's WebFetch reading a page)
        steps = Counter(s.usage.output_tokens for s in traj.agent_steps() if s.usage)
        exchanges = Counter(e["usage"]["output_tokens"] for e in _jsonl(attempt / "logs" / "gateway.jsonl") if e.get("usage"))
        assert not steps - exchanges
        sub_requests = m.gateway_tokens.requests - (m.harness_tokens.requests or m.gateway_tokens.requests)
        assert (exchanges - steps).total() == sub_requests
        phases = {c.phase for s in traj.agent_steps() for c in s.tool_calls}
        assert {"video", "read", "write", "verify"} <= phases
        # the report is written by a script that names $OMNIDR_REPORT_DIR: a report-writing event, after
        # the searches and reads; the scratch draft under /tmp/work is not one
        assert result.stats.report_writes == 1 and result.stats.write_blocks == 1
        assert 50 < result.stats.first_write_pct < 100
        assert (attempt / "audit.html").is_file()


def test_claude_codes_webfetch_goes_through_the_proxy_and_its_sub_request_is_counted(cli_run):
    """WebFetch (loaded with ToolSearch, as Claude Code 2.1 defers it) fetches through the egress proxy
    and asks the model to read the page: one more gateway request than the session's own messages,
    and the harness's totals (every result's modelUsage) still equal the gateway's."""
    harness, run_dir, _ran, _key = cli_run
    if harness != "claude-code":
        pytest.skip("WebFetch is a Claude Code tool")
    for task_id in TASKS:
        attempt = run_dir / "attempts" / task_id / "1"
        traj = Trajectory.model_validate_json((attempt / "trajectory.json").read_text("utf-8"))
        [fetch] = [c for s in traj.agent_steps() for c in s.tool_calls if c.name == "WebFetch"]
        [seen] = [o for s in traj.agent_steps() for o in s.observations if o.tool_call_id == fetch.id]
        assert not seen.is_error and seen.content.strip()
        gets = [e for e in _jsonl(attempt / "logs" / "network.jsonl") if e.get("url") == fetch.arguments["url"]]
        assert len(gets) == 2 and all(e["status"] == 200 for e in gets)  # WebFetch's and curl's
        m = traj.final_metrics
        assert m.gateway_tokens.requests == m.harness_tokens.requests + 1


def test_the_proxy_saw_only_corpus_hosts_and_the_key_is_in_no_artifact(cli_run):
    harness, run_dir, _ran, key = cli_run
    corpus = {urlsplit(p["url"]).hostname for p in json.loads((DEMO / "web" / "corpus.json").read_text())["pages"]}
    for task_id in TASKS:
        hosts = {e.get("host") or urlsplit(e.get("url", "")).hostname
                 for e in _jsonl(run_dir / "attempts" / task_id / "1" / "logs" / "network.jsonl")}
        assert hosts and hosts <= corpus, f"{harness} {task_id} reached {hosts - corpus}"
    leaked = [p for p in run_dir.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    assert not leaked


@pytest.mark.parametrize("harness", list(CLIS))
def test_a_request_budget_ends_the_attempt_as_budget_exhausted(tmp_path, harness):
    config = system(harness, budget=Budget(max_iterations=2, wall_time_s=300, attempts_per_task=1))
    ran = run_system(DEMO, tmp_path / "run", config,
                     SystemRunOptions(tasks=["nd-filter-waterfall"], on_note=lambda _m: None))
    [record] = ran.records["nd-filter-waterfall"]
    assert record.reason.value == "budget_exhausted", record.detail
    # Claude Code sends refused requests again; they are refused, and not the agent's fault
    assert record.budget_use.requests == 2 and record.budget_use.refused_requests >= 1


@pytest.mark.parametrize("harness", list(CLIS))
def test_the_wall_clock_limit_kills_the_cli(tmp_path, harness):
    config = system(harness, budget=Budget(wall_time_s=0.5, attempts_per_task=1))
    ran = run_system(DEMO, tmp_path / "run", config,
                     SystemRunOptions(tasks=["nd-filter-waterfall"], on_note=lambda _m: None))
    [record] = ran.records["nd-filter-waterfall"]
    assert record.reason.value == "timeout", record.detail
    assert record.wall_time_s < 10


SEARCH_QUERY = "ND1000 filter optical density 10 stops"
SEARCH_RESULTS = [
    {"url": "https://en.example-wiki.org/wiki/Neutral-density_filter", "title": "Neutral-density filter"},
    {"url": "https://github.com/marinero4972/OmniDR-Bench/blob/main/data/rubrics.json", "title": "OmniDR-Bench rubrics"},
    {"url": "https://www.example-photo.net/nd-filters", "title": "ND filters explained"},
]


def test_claude_codes_websearch_runs_at_the_provider_through_the_gateway_and_is_a_network_event(tmp_path):
    """The real Claude Code's WebSearch: its own Messages request offering the provider's web_search server
    tool. The scripted model plays the provider and, like a leaky one, returns a result from the benchmark's
    release repository. Under the denylist policy the gateway puts the release hosts into blocked_domains,
    removes the leaked result before Claude Code sees it, and logs the search as a provider network event."""
    from omnidr.benchmark import RELEASE_DENYLIST
    from sandbox.models import ProviderToolsPolicy, read_web_log

    scripts = tmp_path / "scripts" / "shell"
    scripts.mkdir(parents=True)
    episode = json.loads((ROOT / "sandbox" / "scripted_model" / "scripts" / "shell" / "nd-filter-waterfall.json").read_text())
    episode["steps"][1]["load_tools"] = ["WebFetch", "WebSearch"]
    episode["steps"][2]["websearch"] = [{"query": SEARCH_QUERY, "results": SEARCH_RESULTS}]
    (scripts / "nd-filter-waterfall.json").write_text(json.dumps(episode))
    proc, url = scripted_on_loopback("--scripts", str(tmp_path / "scripts"))
    notes: list[str] = []
    try:
        config = system("claude-code", url=url, budget=Budget(wall_time_s=300, attempts_per_task=1),
                        provider_tools=ProviderToolsPolicy.every("denylist"))
        ran = run_system(DEMO, tmp_path / "run", config,
                         SystemRunOptions(tasks=["nd-filter-waterfall"], on_note=notes.append))
    finally:
        proc.terminate()
        proc.wait(10)
    [record] = ran.records["nd-filter-waterfall"]
    assert record.reason.value == "success", record.detail
    assert any("not offline" in n for n in notes)
    assert (record.provider_web_requests, record.provider_web_blocked) == (1, 1)
    assert record.budget_use.server_search_requests == 1
    attempt = tmp_path / "run" / "attempts" / "nd-filter-waterfall" / "1"
    [event] = [e for e in read_web_log(attempt / "logs") if e.via == "provider"]
    assert (event.tool, event.action, event.query, event.policy) == ("web_search", "search", SEARCH_QUERY, "denylist")
    assert [r.url for r in event.results] == [r["url"] for r in SEARCH_RESULTS]
    assert [r.blocked for r in event.results] == [False, True, False]
    [exchange] = [e for e in _jsonl(attempt / "logs" / "gateway.jsonl") if e["seq"] == event.exchange_seq]
    [tool] = exchange["request_body"]["tools"]
    assert tool["type"].startswith("web_search_") and set(RELEASE_DENYLIST) <= set(tool["blocked_domains"])
    assert exchange["denylisted_results"] == 1
    # what Claude Code handed its model: the search's links, without the release repository's
    results = audit_run(tmp_path / "run")
    traj = Trajectory.model_validate_json((attempt / "trajectory.json").read_text("utf-8"))
    [search] = [c for s in traj.agent_steps() for c in s.tool_calls if c.name == "WebSearch"]
    [seen] = [o for s in traj.agent_steps() for o in s.observations if o.tool_call_id == search.id]
    assert SEARCH_RESULTS[0]["url"] in seen.content and "OmniDR-Bench" not in seen.content
    assert results[0].stats.provider_web_requests == 1
    page = (attempt / "audit.html").read_text("utf-8")
    assert "at the model provider" in page and SEARCH_QUERY in page and "removed: denylist" in page


@pytest.mark.parametrize("harness,api", [("claude-code", "openai"), ("codex", "anthropic"), ("codex", "openai-chat")])
def test_a_cli_runs_on_a_model_server_of_the_other_api_through_the_gateways_translation(tmp_path, harness, api):
    """Claude Code on an OpenAI-compatible server, Codex on an Anthropic-compatible one and on a Chat
    Completions-only one: a multi-turn, streamed episode with tool calls delivers the demo report, and
    gateway.jsonl holds both sides of every model request, counted from the upstream's own usage."""
    from omnidr.evaluation import ScoreRequest, score_run

    proc, url = scripted_on_loopback("--api", api)  # it answers 404 on every other API's route
    try:
        config = system(harness, url=url, family=api, budget=Budget(wall_time_s=300, attempts_per_task=1))
        ran = run_system(DEMO, tmp_path / "run", config,
                         SystemRunOptions(tasks=TASKS[:1], limits=SandboxLimits(cpus=1.0, memory_mb=2048)))
    finally:
        proc.terminate()
        proc.wait(10)
    [record] = ran.records[TASKS[0]]
    assert record.reason.value == "success", record.detail
    expected = {("claude-code", "openai"): "anthropic-messages->openai-chat",
                ("codex", "anthropic"): "openai-responses->anthropic-messages",
                ("codex", "openai-chat"): "openai-responses->openai-chat"}[harness, api]
    assert ran.translation == expected
    attempt = tmp_path / "run" / "attempts" / TASKS[0] / "1"
    lines = [line for line in _jsonl(attempt / "logs" / "gateway.jsonl") if line.get("counted")]
    assert lines and all(line["translation"] == expected and line["outcome"] == "ok" for line in lines)
    assert any(line["stream"] for line in lines)
    assert sum(line["tool_calls"] for line in lines) >= 3  # a multi-turn episode of tool calls
    for line in lines:  # the upstream's usage, counted and also what the harness was told
        upstream = line["response_body"]
        usage = line["usage"]
        assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
        if isinstance(upstream, dict):
            reported = upstream["usage"]
            assert usage["output_tokens"] == reported.get("completion_tokens", reported.get("output_tokens"))
        assert line["client_request_body"] and line["client_response_body"]
    state = json.loads((attempt / "logs" / "gateway_state.json").read_text())
    assert state["output_tokens"] == sum(line["usage"]["output_tokens"] for line in lines)
    scored = score_run(ScoreRequest(run_dir=tmp_path / "run", snapshot=DEMO))
    assert scored.tasks[0].total > 50
    audit_run(tmp_path / "run")  # the trajectory from the CLI's native logs
    traj = Trajectory.model_validate_json((attempt / "trajectory.json").read_text("utf-8"))
    names = Counter(c.name for s in traj.agent_steps() for c in s.tool_calls)
    assert names["Bash" if harness == "claude-code" else "exec_command"] >= 3
    if harness == "claude-code":  # the deferred WebFetch is offered once ToolSearch has loaded it, as on Anthropic
        assert names["ToolSearch"] == 1 and names["WebFetch"] == 1
        first = lines[0]["request_body"]["tools"]
        assert "WebFetch" not in {t["function"]["name"] for t in first}
        assert traj.final_metrics.gateway_tokens.requests == traj.final_metrics.harness_tokens.requests + 1
