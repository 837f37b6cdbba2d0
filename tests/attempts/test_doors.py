"""The web door against an agent that looks for the private networks behind it.

A live-web attempt (the proxy intercepting HTTPS, as `omnidr eval --web live` runs it) on an outside network the
test made. On that network: a canary that counts every TCP connection it accepts, and an allowed web page (opened
with `--allow-net` for its address alone) that redirects to the canary. The agent tries the canary every way it
can through the proxy; none of its connections may arrive, and every try is a logged 403.
"""

import ipaddress
import json
import socket
import time
from pathlib import Path

import pytest
from attempt_helpers import read_jsonl, run_attempts
from testkit import ROOT

pytestmark = pytest.mark.docker
SERVERS = ROOT / "tests" / "attempts" / "door_servers.py"


def _server(client, images, network: str, alias: str, *args: str):
    container = client.containers.run(
        images["base"], ["python3", "/srv/door_servers.py", *args], detach=True, labels={"org.omnidr.test": "1"},
        network=network, volumes={str(SERVERS): {"bind": "/srv/door_servers.py", "mode": "ro"}})
    net = client.networks.get(network)
    net.disconnect(container)
    net.connect(container, aliases=[alias])
    deadline = time.monotonic() + 60
    while b'"listening"' not in container.logs(stdout=True, stderr=False):
        assert time.monotonic() < deadline, container.logs().decode()[-2000:]
        time.sleep(0.1)
    container.reload()
    return container, container.attrs["NetworkSettings"]["Networks"][network]["IPAddress"]


def test_no_try_of_an_agent_reaches_a_private_address_through_the_live_web_door(
        tmp_path: Path, client, images, upstream_factory, host_server, real_key):
    network, _upstream = upstream_factory()
    canary, ip = _server(client, images, network, "canary.test", "canary", "8080", "8443")
    web = None
    try:
        web, web_ip = _server(client, images, network, "web.test", "redirect", "8080",
                              "http://canary.test:8080/from-the-redirect")
        n = int(ipaddress.IPv4Address(ip))
        octets = ip.split(".")
        host_ip, host_port = host_server  # the Docker host, on the default bridge
        tries = [
            f"get:http://{ip}:8080/plain",  # the address
            "get:http://canary.test:8080/by-name",  # a name that resolves to it
            f"get:https://{ip}:8443/connect",  # CONNECT to the address
            "get:https://canary.test:8443/connect-by-name",  # CONNECT to the name
            f"get:http://{n}:8080/decimal",  # the address as one decimal number
            f"get:http://{hex(n)}:8080/hex",  # as one hexadecimal number
            "get:http://" + ".".join("0" + format(int(o), "o") for o in octets) + ":8080/octal",  # dotted octal
            f"get:http://[::ffff:{ip}]:8080/mapped",  # IPv4-mapped IPv6
            f"get:http://{host_ip}:{host_port}/docker-host",
        ]
        redirect = "get:http://web.test:8080/go"  # allowed; its answer sends the agent to the canary
        socket.create_connection((ip, 8080), timeout=5).close()  # the canary counts: the host's own connection
        deadline = time.monotonic() + 10
        while b"accepted" not in canary.logs(stdout=True, stderr=False):
            assert time.monotonic() < deadline, "the canary did not see the host's connection"
            time.sleep(0.1)
        results = run_attempts(tmp_path / "run", images, network, [*tries, redirect, "report"],
                               proxy_mode="intercept", allow_nets=[f"{web_ip}/32"])
        accepted = [line for line in canary.logs(stdout=True, stderr=False).decode().splitlines() if "accepted" in line]
    finally:
        canary.remove(force=True)
        if web is not None:
            web.remove(force=True)
    [record] = next(iter(results.values()))
    assert record.reason.value == "success", record.detail
    assert len(accepted) == 1  # the host's own connection; not one of the agent's tries arrived
    attempt = next((tmp_path / "run" / "attempts").glob("*/1"))
    probe = {r["action"]: r for r in json.loads((attempt / "output" / "probe.json").read_text())}
    for action in tries:
        got = probe[action]
        assert got["status"] == 403 or "Tunnel connection failed: 403" in (got.get("error") or ""), (action, got)
    assert probe[redirect]["status"] == 403  # the allowed page's redirect, followed, is refused at the next hop
    events = read_jsonl(attempt / "logs" / "network.jsonl")
    blocked = [e for e in events if e["blocked"]]
    assert len(blocked) == len(tries) + 1, events
    assert {e["block_reason"] for e in blocked} == {"private_network"}
    assert all(e["status"] == 403 for e in blocked)
    followed = [e for e in events if e.get("url") == "http://web.test:8080/go"]
    assert [(e["status"], e["blocked"]) for e in followed] == [(302, False)]  # the allowed hop went through
