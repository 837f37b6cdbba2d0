"""Capability levels are enforced by the doors, not by asking the harness (paper App. F.5; calibration's R1 "cannot
search the web", App. E.4). The real Claude Code and Codex CLIs, driven by a scripted model that tries every way to
the web an agent has: its shell fetching a corpus page through the proxy, Claude Code's WebFetch and WebSearch, and
a provider-side web search sent straight to the gateway with the attempt's own token. At `video` nothing of it
succeeds and each try is refused and logged, although the run asked for the replayed web and open provider tools;
at `text_web` the same tries succeed."""

import json
import os
import secrets
from pathlib import Path

import pytest
from testkit import DEMO, scripted_on_loopback, system

from omnidr.attempts import AttemptRecord
from omnidr.harness import SystemRunOptions, run_system
from sandbox.models import Budget, ProviderToolsPolicy, read_network_log

pytestmark = [pytest.mark.docker, pytest.mark.images("claude-code", "codex")]
TASK = "pendant-lamp-safety"
PAGE = "https://en.example-wiki.org/wiki/Neutral-density_filter"  # a page of the demo's replay corpus
QUERY = "pendant lamp safety standard"
FETCH = ("python3 -c \"import urllib.request as u; r = u.urlopen('" + PAGE + "', timeout=20); "
         "print('FETCHED', r.status, len(r.read()))\"")
# a provider-side search sent by the agent itself, past its harness's settings, with the token it was given
SEARCH = {
    "claude-code": ("python3 -c \"import json, os, urllib.request as u; b = json.dumps({'model': 'scripted-demo', "
                    "'max_tokens': 256, 'tools': [{'type': 'web_search_20250305', 'name': 'web_search'}], 'messages': "
                    "[{'role': 'user', 'content': 'Perform a web search for the query: " + QUERY + "'}]}).encode(); "
                    "q = u.Request(os.environ['ANTHROPIC_BASE_URL'] + '/v1/messages', b, {'x-api-key': "
                    "os.environ['ANTHROPIC_API_KEY'], 'anthropic-version': '2023-06-01', 'content-type': "
                    "'application/json'}); print('SEARCHED', u.urlopen(q, timeout=30).status)\""),
    "codex": ("python3 -c \"import json, os, urllib.request as u; b = json.dumps({'model': 'scripted-demo', "
              "'input': 'search the web for " + QUERY + "', 'tools': [{'type': 'web_search'}]}).encode(); "
              "q = u.Request('http://gateway:8080/v1/responses', b, {'authorization': 'Bearer ' + "
              "os.environ['OPENAI_API_KEY'], 'content-type': 'application/json'}); "
              "print('SEARCHED', u.urlopen(q, timeout=30).status)\""),
}

# the agent names another model than the system's: a stronger one (rewritten to the system's), and a provider's
# search model (refused while provider-side web search is deny; at text_web with open provider tools, rewritten)
ROUTE = {"claude-code": ("/v1/messages", "ANTHROPIC_API_KEY"), "codex": ("/v1/chat/completions", "OPENAI_API_KEY")}


def _other_models(harness: str) -> str:
    path, key = ROUTE[harness]
    return ("python3 -c \"import json, os, urllib.request as u\n"
            "for m in ('gpt-stronger-than-the-system', 'gpt-4o-search-preview'):\n"
            " b = json.dumps({'model': m, 'max_tokens': 64, 'messages': [{'role': 'user', 'content': 'hi'}]}).encode()\n"
            f" q = u.Request('http://gateway:8080{path}', b, {{'authorization': 'Bearer ' + os.environ['{key}'], "
            "'anthropic-version': '2023-06-01', 'content-type': 'application/json'})\n"
            " try: print('MODEL', m, u.urlopen(q, timeout=30).status)\n"
            " except Exception as e: print('MODEL', m, e)\"")


def _episode(harness: str) -> dict:
    match = json.loads((DEMO / "tasks" / TASK / "task.json").read_text("utf-8"))["video"]["url"]
    return {"task": TASK, "match": match, "model": "scripted-demo", "steps": [
        {"content": "Try the web every way there is.", "load_tools": ["WebFetch", "WebSearch"],
         "commands": [{"command": FETCH + " ; true", "description": "Fetch a page"},
                      {"command": SEARCH[harness] + " ; true", "description": "Search at the provider"},
                      {"command": _other_models(harness) + " ; true", "description": "Ask other models"}]},
        {"content": "Now with the harness's own web tools.",
         "webfetch": [{"url": PAGE, "prompt": "What does the page say?"}],
         "websearch": [{"query": QUERY, "results": [{"url": PAGE, "title": "Neutral-density filter"}]}]},
        {"content": "Done trying.", "final": True}]}


@pytest.fixture(scope="module", params=["claude-code", "codex"])
def tries(request, tmp_path_factory):
    """Both capabilities of one harness: {capability: (attempt folder, attempt record, notes)}."""
    harness = request.param
    scripts = tmp_path_factory.mktemp("scripts")
    (scripts / "shell").mkdir()
    (scripts / "shell" / f"{TASK}.json").write_text(json.dumps(_episode(harness)), "utf-8")
    proc, url = scripted_on_loopback("--scripts", str(scripts))
    os.environ["OMNIDR_TEST_DOORS_KEY"] = "sk-doors-" + secrets.token_hex(8)
    out = {}
    try:
        for capability in ("video", "text_web"):
            run_dir = tmp_path_factory.mktemp(f"{harness}-{capability}") / "run"
            notes: list[str] = []
            config = system(harness, capability, url, key_env="OMNIDR_TEST_DOORS_KEY",
                            budget=Budget(wall_time_s=240, attempts_per_task=1),
                            provider_tools=ProviderToolsPolicy.every("allow"))
            ran = run_system(DEMO, run_dir, config, SystemRunOptions(tasks=[TASK], on_note=notes.append))
            [record] = ran.records[TASK]
            out[capability] = (run_dir / "attempts" / TASK / "1", record, notes)
    finally:
        os.environ.pop("OMNIDR_TEST_DOORS_KEY", None)
        proc.terminate()
        proc.wait(10)
    return harness, out


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()] if path.exists() else []


def _agent_log(attempt: Path) -> str:
    return "".join(p.read_text("utf-8", "replace") for p in (attempt / "logs").rglob("*.jsonl"))


def _offered_tools(attempt: Path) -> set[str]:
    """The tools the harness offered its model: those of its own agent turns (many tools each), not of the one-tool
    requests of a search (the agent's own, or Claude Code's WebSearch sub-request)."""
    names = set()
    for exchange in _lines(attempt / "logs" / "gateway.jsonl"):
        body = exchange.get("client_request_body") or exchange.get("request_body") or {}
        tools = (body.get("tools") or []) if isinstance(body, dict) else []
        if len(tools) > 1:
            names |= {tool.get("name") or tool.get("type") for tool in tools}
    return names


def test_below_text_web_no_try_reaches_the_web_and_each_is_refused_and_logged(tries):
    harness, out = tries
    attempt, record, notes = out["video"]
    doors = AttemptRecord.model_validate_json((attempt / "attempt.json").read_text("utf-8")).doors
    # the doors closed the web although the run asked for the replayed web and open provider tools
    assert doors is not None and (doors.capability, doors.web, doors.proxy_mode) == ("video", False, "deny")
    assert not doors.provider_tools.opens_provider_web and record.proxy_mode == "deny"
    assert any("video has no web" in n for n in notes)
    # the proxy: every request refused (the shell's fetch; nothing else got through), each a logged 403
    events = read_network_log(attempt / "logs" / "network.jsonl")
    assert events, "the agent's fetch was not logged"
    assert all(e.blocked and e.status == 403 and e.block_reason == "deny_mode" for e in events), events
    assert any(e.host == "en.example-wiki.org" for e in events)
    # the gateway: the agent's own provider-side search refused and logged; nothing was searched
    refused = [e for e in _lines(attempt / "logs" / "gateway.jsonl") if e["outcome"] == "provider_tool_refused"]
    assert refused, "the provider-side search was not refused"
    web = _lines(attempt / "logs" / "provider_web.jsonl")
    assert web and all(e["blocked"] and e["action"] == "refused" for e in web)
    # one system, one model: a stronger model is sent as the system's, a search model is refused
    exchanges = {e["model"]: e for e in _lines(attempt / "logs" / "gateway.jsonl")}
    stronger, searcher = exchanges["gpt-stronger-than-the-system"], exchanges["gpt-4o-search-preview"]
    assert (stronger["outcome"], stronger["model_sent"]) == ("ok", "scripted-demo")
    assert (searcher["outcome"], searcher["model_sent"]) == ("model_refused", None)
    assert doors.model == "scripted-demo" and doors.model_policy == "rewrite"
    # the harness was not offered its web tools either
    offered = _offered_tools(attempt)
    assert not offered & {"WebFetch", "WebSearch", "web_search"}, offered
    log = _agent_log(attempt)
    assert "FETCHED 200" not in log and "SEARCHED 200" not in log


def test_at_text_web_the_same_tries_succeed(tries):
    harness, out = tries
    attempt, record, _notes = out["text_web"]
    assert record.doors is not None and (record.doors.web, record.doors.proxy_mode) == (True, "replay")
    events = read_network_log(attempt / "logs" / "network.jsonl")
    served = [e for e in events if not e.blocked and e.status == 200 and getattr(e, "url", None) == PAGE]
    # the shell's fetch, and Claude Code's WebFetch too
    assert len(served) == (2 if harness == "claude-code" else 1), events
    log = _agent_log(attempt)
    assert "FETCHED 200" in log and "SEARCHED 200" in log
    assert not [e for e in _lines(attempt / "logs" / "gateway.jsonl") if e["outcome"] in ("provider_tool_refused",
                                                                                           "model_refused")]
    # with provider-side search open, a search model is only another model: rewritten to the system's
    asked = {e["model"]: e["model_sent"] for e in _lines(attempt / "logs" / "gateway.jsonl")}
    assert asked["gpt-4o-search-preview"] == asked["gpt-stronger-than-the-system"] == "scripted-demo"
    offered = _offered_tools(attempt)
    assert ({"WebFetch", "WebSearch"} if harness == "claude-code" else {"web_search"}) <= offered, offered
