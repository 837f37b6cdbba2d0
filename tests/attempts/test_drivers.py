"""Drivers that never interfere: several `omnidr run` processes on one host, the same system (so the same run
id) in their own run folders, at once. Each finishes, none stops with a traceback, every object it made carries
its run folder, and nothing is left behind."""

import subprocess
import sys
import threading
import time
import uuid

import pytest
from attempt_helpers import DEMO, agent_argv
from testkit import ROOT

from omnidr.attempts import LABEL_RUN, LABEL_RUN_DIR, cleanup_run
from omnidr.attempts._labels import LABEL_ATTEMPT, LABEL_DRIVER, LABEL_OWNER

pytestmark = pytest.mark.docker

DRIVERS = 4
TASKS = ["pendant-lamp-safety", "nd-filter-waterfall"]


def _labelled(client) -> list[tuple[str, dict]]:
    """(kind, labels) of every container, network and volume of a run now, read without inspecting: other
    drivers remove theirs meanwhile."""
    selector = {"label": LABEL_RUN}
    found = [("container", c.attrs.get("Labels") or {}) for c in
             client.containers.list(all=True, filters=selector, sparse=True)]
    found += [("network", n.attrs.get("Labels") or {}) for n in client.networks.list(filters=selector)]
    found += [("volume", v.attrs.get("Labels") or {}) for v in client.volumes.list(filters=selector)]
    return found


def test_four_drivers_with_the_same_system_in_four_run_folders_all_finish_and_leave_nothing(
        tmp_path, client, images, upstream_factory):
    network, _ = upstream_factory()
    folders = [(tmp_path / f"run{i}").resolve() for i in range(DRIVERS)]
    seen: dict[str, set[str]] = {}  # run folder -> kinds of object seen carrying it
    unlabelled: list[str] = []
    stop = threading.Event()
    run_ids: set[str] = set()

    def watch() -> None:
        from omnidr.attempts import RunConfig

        while not stop.is_set():
            if not run_ids:  # the drivers' run id, once the first has written run.json (others' runs share the engine)
                try:
                    run_ids.add(RunConfig.model_validate_json((folders[0] / "run.json").read_text()).run_id())
                except (OSError, ValueError):
                    time.sleep(0.05)
                    continue
            for kind, labels in _labelled(client):
                if labels.get(LABEL_RUN) in run_ids:
                    if LABEL_RUN_DIR in labels:
                        seen.setdefault(labels[LABEL_RUN_DIR], set()).add(kind)
                    else:
                        unlabelled.append(f"{kind} {labels}")
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    argv = ["--snapshot", str(DEMO), "--harness", "command", "--image", images["base"],
            "--openai-base-url", "http://upstream:9000/v1", "--model", "fake-model", "--outside-network", network,
            "--wall-time", "90", "--attempts", "1", "--cpus", "1", "--memory-mb", "256", "--pids", "128",
            "--parallel", "2", *[a for t in TASKS for a in ("--task", t)]]
    procs = []
    try:
        for folder in folders:  # at once: each one's cleanup runs while the others make and remove objects
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "omnidr.cli", "run", *argv, "--run-dir", str(folder), "--",
                 *agent_argv("chat:1", "sleep:2", "report")],
                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outcomes = [p.communicate(timeout=600) for p in procs]
    finally:
        stop.set()
        watcher.join(10)
        for p in procs:
            if p.poll() is None:
                p.kill()
    for folder, proc, (stdout, stderr) in zip(folders, procs, outcomes, strict=True):
        assert proc.returncode == 0, f"{folder.name}: exit {proc.returncode}\n{stdout[-3000:]}\n{stderr[-3000:]}"
        assert "Traceback" not in stderr and "Traceback" not in stdout, stderr[-3000:]
        assert f"{len(TASKS)} of {len(TASKS)} task(s) delivered a report" in stdout, stdout[-2000:]
    # the four run ids are one: the folders are what tells their objects apart
    assert len({(f / "run.json").read_text() for f in folders}) == 1
    for folder in folders:
        assert seen.get(str(folder)) == {"container", "network", "volume"}, (folder, seen)
        assert not client.containers.list(all=True, filters={"label": f"{LABEL_RUN_DIR}={folder}"}, sparse=True)
        assert not client.networks.list(filters={"label": f"{LABEL_RUN_DIR}={folder}"})
        assert not client.volumes.list(filters={"label": f"{LABEL_RUN_DIR}={folder}"})
    assert not unlabelled, f"objects of the run without their run folder: {unlabelled[:5]}"


def test_cleanup_of_one_run_folder_leaves_another_folders_objects_alone(tmp_path, client, images):
    """Objects whose maker is gone are leftovers, but only the driver of their own run folder removes them: a
    driver of the same run id in another folder may be about to copy from them (its Ray worker died)."""
    run_id = "drivers-" + uuid.uuid4().hex[:8]
    gone = subprocess.Popen(["sleep", "300"])
    stat = open(f"/proc/{gone.pid}/stat").read()
    from omnidr.attempts._labels import owner_id

    host = owner_id().rsplit(":", 2)[0]
    gone_owner = f"{host}:{gone.pid}:{stat.rsplit(')', 1)[1].split()[19]}"
    gone.kill()
    gone.wait()
    mine, other = (tmp_path / "mine").resolve(), (tmp_path / "other").resolve()
    made = []
    try:
        for folder in (mine, other):
            labels = {LABEL_RUN: run_id, LABEL_RUN_DIR: str(folder), LABEL_OWNER: gone_owner, LABEL_DRIVER: gone_owner,
                      LABEL_ATTEMPT: f"t/{folder.name}"}
            made.append(client.containers.create(images["base"], ["true"], labels=labels))
            made.append(client.networks.create(f"omnidr-drivers-{folder.name}-{run_id}", labels=labels))
            made.append(client.volumes.create(f"omnidr-drivers-{folder.name}-{run_id}", labels=labels))
        assert cleanup_run(client, run_id, run_dir=mine) == 3
        left = client.containers.list(all=True, filters={"label": f"{LABEL_RUN}={run_id}"}, sparse=True)
        assert [c.attrs["Labels"][LABEL_RUN_DIR] for c in left] == [str(other)]
        assert [n.name for n in client.networks.list(filters={"label": f"{LABEL_RUN}={run_id}"})] == \
            [f"omnidr-drivers-other-{run_id}"]
        assert cleanup_run(client, run_id, run_dir=other) == 3
        assert cleanup_run(client, run_id) == 0  # nothing left, and a second pass over nothing is no error
    finally:
        for item in made:
            try:
                item.remove(force=True) if hasattr(item, "kill") else item.remove()
            except Exception:  # noqa: BLE001 - already removed by the test
                pass


def test_cleanup_tolerates_objects_removed_while_it_lists_them(client, images):
    """Another driver removes containers of the same run id while this one cleans up: no error, no traceback."""
    run_id = "drivers-race-" + uuid.uuid4().hex[:8]
    labels = {LABEL_RUN: run_id, LABEL_OWNER: "gone-host:1:1", LABEL_DRIVER: "gone-host:1:1"}
    made = [client.containers.create(images["base"], ["true"], labels=labels) for _ in range(12)]
    errors: list[BaseException] = []

    def remove_all() -> None:
        for container in made:
            try:
                container.remove(force=True)
            except Exception:  # noqa: BLE001 - the cleanup got there first
                pass

    def clean() -> None:
        try:
            for _ in range(5):
                cleanup_run(client, run_id)
        except BaseException as exc:  # noqa: BLE001 - the failure the test looks for
            errors.append(exc)

    threads = [threading.Thread(target=remove_all), threading.Thread(target=clean), threading.Thread(target=clean)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert not client.containers.list(all=True, filters={"label": f"{LABEL_RUN}={run_id}"}, sparse=True)
