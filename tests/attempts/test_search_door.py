"""The search door: the research skills' web search through the egress proxy to a provider (a fake Brave
Search API on the run's own Docker network). The proxy injects the provider's key; the agent's container
never holds it; the search is logged like any request, and the release repository's results are left out."""

import json
import subprocess
import sys
import time
import uuid

import pytest
from attempt_helpers import DEMO, HERE, first_task

ROOT = HERE.parents[1]

pytestmark = [pytest.mark.docker, pytest.mark.images("reference")]


def test_search_goes_through_the_proxy_which_injects_the_key(tmp_path, client, images, upstream_factory, real_key,
                                                             monkeypatch):
    from omnidr.images import build_images

    network, _ = upstream_factory()
    key = "brave-key-" + uuid.uuid4().hex
    monkeypatch.setenv("OMNIDR_TEST_SEARCH_KEY", key)
    search = client.containers.run(
        images["base"], ["python3", "/srv/fake_search.py", "8080"], detach=True, labels={"org.omnidr.test": "1"},
        network=network, volumes={str(ROOT / "tests" / "attempts" / "fake_search.py"): {
            "bind": "/srv/fake_search.py", "mode": "ro"}})
    try:
        net = client.networks.get(network)
        net.disconnect(search)
        net.connect(search, aliases=["search"])
        deadline = time.monotonic() + 60
        while b'"listening"' not in search.logs(stdout=True, stderr=False):
            assert time.monotonic() < deadline, search.logs().decode()[-2000:]
            time.sleep(0.1)
        task = first_task()
        run_dir = tmp_path / "run"
        r = subprocess.run(
            [sys.executable, "-m", "omnidr.cli", "run", "--snapshot", str(DEMO), "--run-dir", str(run_dir), "--task", task,
             "--image", build_images(["reference"])[-1].tag, "--openai-base-url", "http://upstream:9000/v1",
             "--openai-key-env", "OMNIDR_TEST_REAL_KEY", "--outside-network", network, "--attempts", "1",
             "--proxy-mode", "intercept", "--search-door", "brave@http://search:8080",
             "--search-key-env", "OMNIDR_TEST_SEARCH_KEY", "--",
             "sh", "-c", "omnidr-skill search web 'pendant safety' && env | sort"],
            cwd=ROOT, capture_output=True, text=True, timeout=600)
        seen = [json.loads(line) for line in search.logs(stdout=True, stderr=False).decode().splitlines()[1:]]
    finally:
        search.remove(force=True)
    assert r.returncode == 1 and "no_report" in r.stdout, r.stdout + r.stderr  # the command writes no report
    attempt = run_dir / "attempts" / task / "1"
    log = (attempt / "logs" / "agent.log").read_text()
    found = json.loads(log[log.index("{"):log.index("\n}") + 2])
    assert found["backend"] == "brave" and [x["url"] for x in found["results"]] == [
        "https://www.example-pendant.org/", "https://www.example-safety.org/", "https://github.com/example/pendant-notes"]
    assert "OMNIDR_SEARCH_DOOR=brave@http://search:8080" in log
    # the provider got the key from the proxy; the agent's environment and every artifact lack it
    assert [s["token"] for s in seen] == [key] and seen[0]["path"].startswith("/res/v1/web/search?q=pendant+safety")
    assert key not in log
    assert not [p for p in attempt.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    [event] = [json.loads(line) for line in (attempt / "logs" / "network.jsonl").read_text().splitlines()
               if "search:8080" in line]
    assert (event["status"], event["source"]) == (200, "upstream") and event["url"].startswith(
        "http://search:8080/res/v1/web/search?q=pendant+safety")
