"""Faults from outside the sandbox: containers removed mid-attempt by someone else, and what cleanup may remove
when drivers share a Docker engine. Each fault ends the attempt as infra_error with its reason, is retried as
the retry policy says, and crashes nothing."""

import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from attempt_helpers import first_task, run_attempts

from omnidr.attempts import RetryPolicy, cleanup_run
from omnidr.attempts._labels import LABEL_ATTEMPT, LABEL_DRIVER, LABEL_OWNER, LABEL_RUN, owner_id

pytestmark = pytest.mark.docker


def _owner(pid: int) -> str:
    host, _pid, _start = owner_id().rsplit(":", 2)
    stat = open(f"/proc/{pid}/stat").read()
    return f"{host}:{pid}:{stat.rsplit(')', 1)[1].split()[19]}"


def test_cleanup_removes_what_gone_drivers_left_and_never_a_live_drivers_objects(client, images):
    """Two run roots with the same configuration share a run id; cleanup at the start of one must not
    take the other's containers for leftovers (the crash two labs' evals gave each other)."""
    run_id = "faults-" + uuid.uuid4().hex[:8]
    other_driver = subprocess.Popen(["sleep", "300"])
    gone = subprocess.Popen(["sleep", "300"])
    gone_owner = _owner(gone.pid)
    gone.kill()
    gone.wait()
    zombie = subprocess.Popen(["sleep", "300"])  # killed and not yet reaped, as a SIGKILLed Ray worker is for a moment
    zombie_owner = _owner(zombie.pid)
    zombie.kill()
    while open(f"/proc/{zombie.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.01)
    made = {}
    try:
        for name, owner in (("live", _owner(other_driver.pid)), ("gone", gone_owner), ("unlabelled", None),
                            ("zombie", zombie_owner), ("mine", owner_id())):
            labels = {LABEL_RUN: run_id, LABEL_ATTEMPT: f"t/{name}"}
            if owner:
                labels.update({LABEL_OWNER: owner, LABEL_DRIVER: owner})
            made[name] = client.containers.create(images["base"], ["true"], labels=labels)
        client.networks.create(f"omnidr-faults-{run_id}", labels={LABEL_RUN: run_id, LABEL_OWNER: gone_owner,
                                                                         LABEL_DRIVER: gone_owner})

        def left() -> set[str]:
            found = client.containers.list(ignore_removed=True, all=True, filters={"label": f"{LABEL_RUN}={run_id}"})
            return {c.labels[LABEL_ATTEMPT].split("/")[1] for c in found}

        # the gone and the killed-not-reaped drivers' containers, the gone one's network, the unlabelled one
        assert cleanup_run(client, run_id) == 4
        assert left() == {"live", "mine"}
        assert not client.networks.list(filters={"label": f"{LABEL_RUN}={run_id}"})
        assert cleanup_run(client, run_id, mine=True) == 1  # Ctrl-C: this driver's own, still not the other's
        assert left() == {"live"}
    finally:
        other_driver.kill()
        other_driver.wait()
        zombie.wait()
        for container in made.values():
            try:
                container.remove(force=True)
            except Exception:  # noqa: BLE001 - already removed by the test
                pass


def _remove_when_running(client, prefix: str, folder: Path, stop: threading.Event, seen: list[str]) -> None:
    """Once the agent of the attempt in `folder` has run a moment, remove its container named `prefix<suffix>`
    (the attempt's containers share a suffix; the agent's mounts name the folder, so that other runs on the
    engine are left alone)."""
    while not stop.is_set():
        for agent in client.containers.list(ignore_removed=True, filters={"name": "omnidr-agent-", "status": "running"}):
            if any(str(folder) in m.get("Source", "") for m in agent.attrs.get("Mounts", [])):
                suffix = agent.name.removeprefix("omnidr-agent-")
                seen.append(suffix)
                time.sleep(1.5)  # the agent is busy now
                client.containers.get(prefix + suffix).remove(force=True)
                return
        time.sleep(0.1)


@pytest.mark.parametrize(("victim", "prefix", "expected"), [
    ("agent", "omnidr-agent-", "the agent container vanished during the attempt"),
    ("gateway", "omnidr-gateway-", "the model gateway container vanished during the attempt"),
    ("keeper", "omnidr-keeper-", "the output keeper container vanished during the attempt"),
])
def test_a_container_removed_mid_attempt_is_an_infra_error_and_the_attempt_is_redone(
        tmp_path, client, images, upstream_factory, real_key, victim, prefix, expected):
    network, _ = upstream_factory()
    task = first_task()
    stop = threading.Event()
    seen: list[str] = []
    remover = threading.Thread(target=_remove_when_running,
                               args=(client, prefix, tmp_path / "run" / "attempts" / task / "1", stop, seen), daemon=True)
    remover.start()
    try:
        results = run_attempts(tmp_path / "run", images, network, ["sleep:4", "report"],
                               retry=RetryPolicy(max_infra_retries=1))
    finally:
        stop.set()
        remover.join(10)
    first, second = results[task]
    assert first.reason.value == "infra_error" and expected in first.detail, first.detail
    if victim == "keeper":
        assert "output, held in a tmpfs volume by the keeper, is lost" in first.detail
    assert second.reason.value == "success", second.detail  # infra errors are retried, as the policy says
    folder = tmp_path / "run" / "attempts" / task / "1"
    assert (folder / "attempt.json").is_file() and (folder / "logs" / "gateway.jsonl").is_file()
    if victim != "agent":
        assert (folder / "logs" / "agent.log").is_file()
    [suffix] = seen
    assert not client.containers.list(ignore_removed=True, all=True, filters={"name": suffix})  # every container of the attempt is gone


def test_a_full_disk_under_the_run_folder_stops_with_one_line_and_a_rerun_resumes(tmp_path, images, upstream_factory,
                                                                                   real_key):
    """The run folder sits on a 24 MiB tmpfs that a 16 MiB file half fills; the agent's output (12 MiB) does
    not fit. The run stops with one line saying so, leaves no half-written record, and the rerun after the
    space is freed redoes the attempt and delivers."""
    import os

    from attempt_helpers import agent_argv
    from testkit import DEMO, run_cli, said

    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    network, _ = upstream_factory()
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(small)], check=True)
    try:
        filler = small / "filler"
        filler.write_bytes(b"\0" * (16 * 2**20))
        task = first_task()
        agent = ["sh", "-c", 'dd if=/dev/zero of=/output/blob bs=1M count=12 2>/dev/null && exec "$@"', "sh",
                 *agent_argv("report")]
        args = ["run", "--snapshot", DEMO, "--run-dir", small / "run", "--image", images["base"], "--task", task,
                "--openai-base-url", "http://upstream:9000/v1", "--openai-key-env", "OMNIDR_TEST_REAL_KEY",
                "--outside-network", network, "--wall-time", "60", "--attempts", "1", "--", *agent]
        r = run_cli(*args)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        [line] = said(r.stderr)
        assert line.startswith("error: no space left on device writing ") and "rerun the same command" in line
        attempt = small / "run" / "attempts" / task / "1"
        assert not (attempt / "attempt.json").exists() and not list(attempt.glob(".*.tmp"))
        assert (small / "run" / "run.json").is_file()
        filler.unlink()
        again = run_cli(*args)
        assert again.returncode == 0, again.stdout + again.stderr
        assert "1 of 1 task(s) delivered a report" in again.stdout
        assert list((small / "run" / "attempts" / task).glob("1.interrupted-*"))  # the cut attempt, kept aside
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)


SNIFF = """
import json, socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(3))
s.bind(("lo", 0))
s.settimeout(0.2)
embedded = to_53 = 0
print("sniffing", flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    try:
        frame = s.recv(65535)
    except socket.timeout:
        continue
    ip = frame[14:]
    if len(ip) < 24 or ip[0] >> 4 != 4 or ip[9] not in (6, 17):
        continue
    dst, port = ip[16:20], int.from_bytes(ip[(ip[0] & 15) * 4 + 2:(ip[0] & 15) * 4 + 4], "big")
    embedded += dst == bytes([127, 0, 0, 11])
    to_53 += port == 53
print(json.dumps({"to_embedded": embedded, "to_53": to_53}), flush=True)
"""


def test_the_agent_has_no_dns_door(tmp_path, client, images, upstream_factory, real_key):
    """The doors resolve from the hosts file; every other name fails at once, and the lookups send nothing to
    Docker's embedded resolver (a sniffer in the agent's network namespace counts the packets)."""
    import json

    network, _ = upstream_factory()
    task = first_task()
    sniffed: list[str] = []

    def sniff() -> None:
        folder = str(tmp_path / "run" / "attempts" / task / "1")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for agent in client.containers.list(ignore_removed=True, filters={"name": "omnidr-agent-", "status": "running"}):
                if any(folder in m.get("Source", "") for m in agent.attrs.get("Mounts", [])):
                    side = client.containers.run(images["base"], ["python3", "-c", SNIFF, "6"], detach=True,
                                                 network_mode=f"container:{agent.id}")
                    side.wait(timeout=60)
                    sniffed.append(side.logs(stderr=False).decode())
                    side.remove(force=True)
                    return
            time.sleep(0.1)

    sniffer = threading.Thread(target=sniff, daemon=True)
    sniffer.start()
    names = ["gateway", "proxy", "example.com", "upstream", "api.openai.com"]
    results = run_attempts(tmp_path / "run", images, network, ["sleep:3", *[f"dns:{n}" for n in names], "report"])
    sniffer.join(60)
    assert results[task][-1].reason.value == "success"
    probe = {r["action"].split(":", 1)[1]: r for r in json.loads(
        (tmp_path / "run" / "attempts" / task / "1" / "output" / "probe.json").read_text())}
    assert probe["gateway"]["addresses"] and probe["proxy"]["addresses"]
    for name in names[2:]:
        assert "error" in probe[name] and probe[name]["seconds"] < 0.5, probe[name]
    [log] = sniffed
    counts = json.loads(log.strip().splitlines()[-1])
    assert counts["to_53"] >= len(names) - 2  # the resolver's dead end was tried: the sniffer sees lookups
    assert counts["to_embedded"] == 0


@pytest.mark.parametrize(("version", "resolv", "warned"), [
    ("20.10.24+dfsg1", "nameserver 127.0.0.53\noptions edns0\n", True),  # Debian's engine, systemd-resolved
    ("24.0.7", "nameserver 127.0.0.53\n", True),
    ("25.0.3", "nameserver ::1\n", True),
    ("25.0.4", "nameserver 127.0.0.53\n", False),
    ("23.0.11", "nameserver 127.0.0.53\n", False),
    ("28.2.2", "nameserver 127.0.0.53\n", False),
    ("20.10.24+dfsg1", "nameserver 10.255.255.53\n", False),  # a resolver off loopback: nothing to forward
])
def test_the_preflight_warns_of_an_engine_that_forwards_dns_from_the_host(version, resolv, warned):
    from omnidr.attempts._docker import dns_exposure

    warning = dns_exposure(version, resolv)
    assert (warning is not None) == warned
    if warned:
        assert warning.startswith(f"warning: Docker engine {version} ") and "CVE-2024-29018" in warning
        assert "\n" not in warning


def test_a_door_that_dies_while_booting_fails_the_start_at_once_and_a_slow_one_is_waited_for(client, images):
    """The readiness wait tries the doors' ports and asks the engine about them only once a second: a helper that
    exits during its start still ends the attempt's setup within seconds (not at the 60 s start timeout), saying
    what the helper last printed; a helper that listens late is waited for."""
    from omnidr.attempts._docker import _wait_ports

    tag = uuid.uuid4().hex[:8]
    listen_late = ("import socket, time; time.sleep(2); s = socket.socket(); s.bind(('0.0.0.0', 8080)); s.listen(); "
                   "time.sleep(120)")
    made = []
    try:
        late = client.containers.run(images["base"], ["python3", "-c", listen_late], name=f"omnidr-test-late-{tag}",
                                     network="bridge", detach=True)
        made.append(late)
        dying = client.containers.run(images["base"], ["sh", "-c", "sleep 2; echo the door cannot start: no key; exit 2"],
                                      name=f"omnidr-test-dying-{tag}", network="bridge", detach=True)
        made.append(dying)
        doors = []
        for container in (late, dying):
            container.reload()
            doors.append((container.attrs["NetworkSettings"]["Networks"]["bridge"]["IPAddress"], 8080, container))
        t0 = time.monotonic()
        with pytest.raises(RuntimeError, match="exited during start: the door cannot start: no key"):
            _wait_ports(doors, 60)
        assert time.monotonic() - t0 < 20
        _wait_ports(doors[:1], 60)  # the late one listens by now, or soon
        socket_ok = subprocess.run(["python3", "-c", f"import socket; socket.create_connection(('{doors[0][0]}', 8080), 2)"])
        assert socket_ok.returncode == 0
    finally:
        for container in made:
            container.remove(force=True)
