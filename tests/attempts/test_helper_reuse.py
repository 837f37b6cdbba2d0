"""Reused helper pairs (real Docker engine): a run's attempts share a gateway and proxy pair one after another,
and each attempt sees nothing of the one before: no logs, no budget counts, its token refused, its CA not
trusted; the escape and key checks hold on every attempt of a batch, not only the first."""

import base64
import hashlib
import json
from pathlib import Path

import pytest
from attempt_helpers import DEMO, agent_argv, read_jsonl, run_attempts

from omnidr.attempts import AttemptSandbox, AttemptSpec, DockerBackend, RunConfig, SandboxLimits, Upstream
from omnidr.attempts._docker import DockerSandbox
from omnidr.attempts._helpers import HelperPool
from omnidr.harness import CommandHarness
from sandbox.models import Budget

pytestmark = pytest.mark.docker
TASKS = json.loads((DEMO / "snapshot.json").read_text())["tasks"]


def _corpus_url(https: bool) -> str:
    pages = json.loads((DEMO / "web" / "corpus.json").read_text())["pages"]
    url = next(p["url"] for p in pages if p["content_type"].startswith("text/html"))
    return url if https else url.replace("https://", "http://", 1)


def _probe(attempt_dir: Path) -> dict:
    return {r["action"]: r for r in json.loads((attempt_dir / "output" / "probe.json").read_text())}


def test_every_attempt_of_a_batch_on_one_reused_pair_is_contained(tmp_path, client, images, upstream_factory,
                                                                  host_server, real_key, monkeypatch):
    network, _upstream = upstream_factory()
    # a user's shell with a web proxy: the controller still talks to its pairs directly (the admin token never
    # goes to that proxy), so every attempt after the first runs on the reused pair
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    ip, port = host_server
    url = _corpus_url(https=False)
    actions = [f"tcp:{ip}:{port}", f"get:{url}", "get:http://denied.example/x", "chat:1", f"scan:{real_key}",
               "env:OPENAI_API_KEY", "ca", "report"]
    results = run_attempts(tmp_path / "run", images, network, actions, tasks=TASKS, denylist=["denied.example"])

    tokens, cas = set(), set()
    for n, task in enumerate(TASKS):
        [record] = results[task]
        attempt = tmp_path / "run" / "attempts" / task / "1"
        probe = _probe(attempt)
        assert record.reason.value == "success", (task, record.detail)
        assert record.helpers_served_before == n, "the batch did not run on one reused pair"
        # the escape and key checks, on every attempt
        assert probe[f"tcp:{ip}:{port}"]["connected"] is False
        assert probe[f"get:{url}"]["status"] == 200
        assert probe["get:http://denied.example/x"]["status"] == 403
        assert probe["chat:1"]["responses"][0]["status"] == 200
        assert probe[f"scan:{real_key}"]["hits"] == []
        tokens.add(probe["env:OPENAI_API_KEY"]["value"])
        cas.add(probe["ca"]["sha256"])
        # its own logs and counts only, numbered from 1
        network_log = read_jsonl(attempt / "logs" / "network.jsonl")
        assert [e["seq"] for e in network_log] == [1, 2], network_log
        assert [line["seq"] for line in read_jsonl(attempt / "logs" / "gateway.jsonl")] == [1]
        assert (record.budget_use.requests, record.network_requests, record.network_blocked) == (1, 2, 1)
        proxy_output = (attempt / "logs" / "egress.container.log").read_text()  # this attempt's part of it
        if n:
            assert f"generation {task}/1/" in proxy_output and f"generation {TASKS[n - 1]}/" not in proxy_output
    assert len(tokens) == len(TASKS) and len(cas) == len(TASKS), "a token or a CA was used by two attempts"
    # the run leaves nothing behind: the pair, every attempt's network, volume and keeper are gone
    run_id = RunConfig.model_validate_json((tmp_path / "run" / "run.json").read_text()).run_id()
    label = {"label": f"org.omnidr.run={run_id}"}
    assert not client.containers.list(ignore_removed=True, all=True, filters=label)
    assert not client.networks.list(filters=label) and not client.volumes.list(filters=label)


def _run_id(tmp_path: Path) -> str:
    """A run id of this test's own: the tests of this file run at once on two workers, and one asserts that its
    run left no container behind (a shared id would count the other test's pair)."""
    return f"reuse-test-{hashlib.sha256(str(tmp_path).encode()).hexdigest()[:12]}"


def _spec(tmp_path: Path, images: dict, network: str, attempt: int) -> AttemptSpec:
    task = TASKS[0]
    return AttemptSpec(
        run_id=_run_id(tmp_path), task_id=task, attempt=attempt, folder=tmp_path / "attempts" / task / str(attempt),
        video=DEMO / "tasks" / task / "video.mp4", instruction="probe", contract_dir=DEMO / "contract",
        model="fake-model",
        upstreams=(Upstream(family="openai", base_url="http://upstream:9000/v1", key_env="OMNIDR_TEST_REAL_KEY"),),
        budget=Budget(wall_time_s=60, attempts_per_task=1), limits=SandboxLimits(cpus=1.0, memory_mb=512, pids=128),
        gateway_image=images["gateway"], egress_image=images["egress"], proxy_mode="replay",
        replay_dir=DEMO / "web", outside_network=network, gateway_backoff_s=0.05,
    )


def test_a_reused_pair_refuses_the_last_attempts_token_and_its_ca(tmp_path, client, images, upstream_factory,
                                                                   real_key):
    network, _upstream = upstream_factory()
    pool = HelperPool(tmp_path / "attempts")
    https = _corpus_url(https=True)
    try:
        first = AttemptSandbox(DockerBackend(client, pool), _spec(tmp_path, images, network, 1),
                               CommandHarness(images["base"], agent_argv("env:OPENAI_API_KEY", "ca-pem", "chat:1",
                                                                         "report"))).run()
        assert first.reason.value == "success", first.detail
        a = _probe(tmp_path / "attempts" / TASKS[0] / "1")
        old_token, old_ca = a["env:OPENAI_API_KEY"]["value"], a["ca-pem"]["pem"]
        old_ca_b64 = base64.b64encode(old_ca.encode()).decode()

        second = AttemptSandbox(DockerBackend(client, pool), _spec(tmp_path, images, network, 2), CommandHarness(
            images["base"], agent_argv(f"chat-as:{old_token}", "chat:1", "ca-pem", f"get:{https}",
                                       f"tls-with:{old_ca_b64}:{https}", "report"))).run()
        assert second.reason.value == "success", second.detail
        assert second.helpers_served_before == 1 and pool.reused == 1 and pool.started == 1
        folder = tmp_path / "attempts" / TASKS[0] / "2"
        b = _probe(folder)
        assert b[f"chat-as:{old_token}"]["responses"][0]["status"] == 401  # the first attempt's token
        assert b["chat:1"]["responses"][0]["status"] == 200
        assert b["ca-pem"]["pem"] != old_ca
        assert b[f"get:{https}"]["status"] == 200  # served under the second attempt's own CA
        refused = b["tls-with"]
        assert refused["status"] is None and "CERTIFICATE_VERIFY_FAILED" in refused["error"]  # not the first's CA
        gateway_lines = read_jsonl(folder / "logs" / "gateway.jsonl")
        assert [(line["seq"], line["status"]) for line in gateway_lines] == [(1, 401), (2, 200)]
        assert (second.budget_use.requests, first.budget_use.requests) == (1, 1)
        assert len(read_jsonl(tmp_path / "attempts" / TASKS[0] / "1" / "logs" / "gateway.jsonl")) == 1
    finally:
        pool.close()
    assert not client.containers.list(ignore_removed=True, all=True, filters={"label": f"org.omnidr.run={_run_id(tmp_path)}"})


def test_no_attempt_on_a_reused_pair_reaches_the_sandbox_networks_through_the_proxy(tmp_path, images,
                                                                                    upstream_factory, real_key):
    """Every attempt network is a /28 of 198.18.0.0/15, which the proxy refuses in the modes that reach the web:
    an agent cannot use the proxy to reach its own doors, another attempt's network, or a pair's old network."""
    network, _upstream = upstream_factory()
    actions = ["get-ip-of:gateway:8080/_gateway/health", "get-ip-of:proxy:3128/", "get:http://198.19.255.1/", "report"]
    results = run_attempts(tmp_path / "run", images, network, actions, tasks=TASKS[:2], proxy_mode="log")
    for n, task in enumerate(TASKS[:2]):
        [record] = results[task]
        assert record.reason.value == "success" and record.helpers_served_before == n, record.detail
        attempt = tmp_path / "run" / "attempts" / task / "1"
        probe = _probe(attempt)
        for action in actions[:3]:
            assert probe[action]["status"] == 403, (action, probe[action])
        assert probe[actions[0]]["url"].startswith("http://198.1")  # its gateway's door is in the pool
        events = read_jsonl(attempt / "logs" / "network.jsonl")
        assert [e["block_reason"] for e in events] == ["sandbox_network"] * 3


def test_a_pair_whose_next_attempt_failed_before_its_network_still_leaves_the_last_network(client):
    """An attempt takes a pair from the pool and fails before its own network exists (so it hands back no
    network): the pair must still leave, and so remove, the network of the attempt before it."""
    from omnidr.attempts._helpers import HelperPair

    last = client.networks.create("omnidr-test-stale-network", labels={"org.omnidr.test": "stale"})
    try:
        pair = HelperPair(("key",), None, None, "0.0.0.0", "0.0.0.0", 8080, 3128, "admin-token")
        pair.leave_later([last])  # the attempt before ended
        pair.leave_later([])  # the next attempt failed before its network was made
        assert pair.stale == [last]
        pair.remove_stale()
        assert not client.networks.list(names=["omnidr-test-stale-network"])
    finally:
        for net in client.networks.list(names=["omnidr-test-stale-network"]):
            net.remove()


def test_a_reused_pair_is_off_the_last_attempts_network_before_it_opens_for_the_next(tmp_path, client, images,
                                                                                      upstream_factory, real_key,
                                                                                      monkeypatch):
    """The last attempt's agent may still be alive while its container is removed in the background: by the time
    the pair opens for the next attempt (a new token, new logs), it has left that agent's network, as the engine
    reports it, so nothing of the last agent can be served under the next attempt."""
    from omnidr.attempts._helpers import HelperPair

    network, _upstream = upstream_factory()
    seen: list[tuple[list, set[str]]] = []
    real_open = HelperPair.open

    def watched_open(pair, *args, **kwargs):
        stale = list(pair.stale)  # first: what the pair has not left yet as `open` begins
        attached = set()
        for container in (pair.gateway, pair.proxy):
            container.reload()
            attached |= set(container.attrs["NetworkSettings"]["Networks"])
        seen.append((stale, attached))
        return real_open(pair, *args, **kwargs)

    monkeypatch.setattr(HelperPair, "open", watched_open)
    pool = HelperPool(tmp_path / "attempts")
    try:
        first = AttemptSandbox(DockerBackend(client, pool), _spec(tmp_path, images, network, 1),
                               CommandHarness(images["base"], agent_argv("report")))
        assert first.run().reason.value == "success"
        assert isinstance(first.sandbox, DockerSandbox)
        last_network = f"omnidr-{first.sandbox.suffix}"  # the first attempt's internal network, its agent's only one
        second = AttemptSandbox(DockerBackend(client, pool), _spec(tmp_path, images, network, 2),
                                CommandHarness(images["base"], agent_argv("report"))).run()
        assert second.reason.value == "success" and second.helpers_served_before == 1
    finally:
        pool.close()
    [(stale, attached)] = seen  # one opening: the second attempt's (the first attempt started the pair)
    assert stale == [], "the pair still had the last attempt's network to leave when it opened"
    assert network in attached and last_network not in attached, attached


def test_a_task_whose_driver_thread_fails_is_recorded_and_the_others_deliver_and_nothing_is_left(
        tmp_path, client, images, upstream_factory, real_key, monkeypatch, caplog):
    """Three tasks at once on the local executor, one of whose threads raises as its attempt begins: that attempt
    ends infra_error with the reason, the other two deliver on the shared helpers, and once the run is over no
    container of the run is left (the pool closed only after every task had ended)."""
    from omnidr.attempts import _runner

    network, _upstream = upstream_factory()
    real_run = _runner.AttemptSandbox.run

    def run(self):
        if self.spec.task_id == TASKS[1]:
            raise RuntimeError("a fault of the driver")
        return real_run(self)

    monkeypatch.setattr(_runner.AttemptSandbox, "run", run)
    results = run_attempts(tmp_path / "run", images, network, ["chat:1", "report"], tasks=TASKS, parallel=3)
    assert [r.reason.value for r in results[TASKS[0]]] == [r.reason.value for r in results[TASKS[2]]] == ["success"]
    [failed] = results[TASKS[1]]
    assert failed.reason.value == "infra_error"
    assert "the driver failed while running this attempt (RuntimeError: a fault of the driver)" in failed.detail
    on_disk = json.loads((tmp_path / "run" / "attempts" / TASKS[1] / "1" / "attempt.json").read_text())
    assert on_disk["reason"] == "infra_error" and "a fault of the driver" in on_disk["detail"]
    assert any("the driver failed while running this task: RuntimeError" in r.getMessage() and r.exc_info
               for r in caplog.records if r.levelname == "ERROR")  # the run log gets the error with its traceback
    run_id = RunConfig.model_validate_json((tmp_path / "run" / "run.json").read_text()).run_id()
    assert not client.containers.list(ignore_removed=True, all=True, filters={"label": f"org.omnidr.run={run_id}"})
