"""The evaluator image's two steps, tried as a hostile report would. The probe step runs the report's JavaScript: it
must hold no judge key (not in its environment, not in any file it can read), reach no network, run Chromium with
Chromium's own sandbox, and see neither the output folder nor the judge cache. The judge step holds the key and
reads only what the probe step wrote (never the run folder)."""

import ipaddress
import json
import secrets
import threading
import time

import pytest
from eval_helpers import DEMO, TASK, copy_report, inject, write_attempt, write_run

pytestmark = [pytest.mark.docker, pytest.mark.browser, pytest.mark.images("evaluator")]

# What the report tries from inside the page, and how it keeps the probe container alive long enough to be looked
# at from inside (the page's clock is fixed, so the loop counts on performance.now()).
HOSTILE = """
(() => {
  const tries = ["http://judge-endpoint/v1/models", "http://172.17.0.1/", "http://169.254.169.254/latest/meta-data/",
                 "file:///proc/self/environ", "file:///data/run/run.json"];
  for (const url of tries) { try { fetch(url).catch(() => {}); } catch (e) {} }
  const t0 = performance.now();
  while (performance.now() - t0 < 6000) {}
})();
"""

# Run inside the probe container while it works: every place a key could be read from.
LOOK_INSIDE = r"""
import json, os, sys
key = sys.argv[1]
found = []
if any(key in v for v in os.environ.values()):
    found.append("environment")
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            if key.encode() in open(f"/proc/{pid}/environ", "rb").read():
                found.append(f"/proc/{pid}/environ")
        except OSError:
            pass
for root in ("/data", "/tmp", "/opt/omnidr", "/etc"):
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            try:
                if os.path.isfile(path) and os.path.getsize(path) < (8 << 20) and key.encode() in open(path, "rb").read():
                    found.append(path)
            except OSError:
                pass
print(json.dumps({"found": found, "uid": os.getuid(), "mounts": sorted(os.listdir("/data"))}))
"""


class Watcher(threading.Thread):
    """Looks at the evaluator's containers while they run: their settings, and (for the probe step) from inside."""

    def __init__(self, key: str) -> None:
        super().__init__(daemon=True)
        import docker

        self.client = docker.from_env()
        self.key = key
        self.seen: dict[str, dict] = {}
        self.inside: dict | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        from omnidr.evaluation._container import LABEL

        while not self.stop.is_set():
            for c in self.client.containers.list(ignore_removed=True, filters={"label": LABEL}):
                step = "probe" if c.name.startswith("omnidr-evaluator-probe-") else (
                    "judge" if c.name.startswith("omnidr-evaluator-") else None)
                if step is None or step in self.seen:
                    continue
                self.seen[step] = c.attrs
                if step == "probe" and self.inside is None:
                    done = c.exec_run(["python", "-c", LOOK_INSIDE, self.key])
                    self.inside = json.loads(done.output.decode().strip().splitlines()[-1]) if done.exit_code == 0 else {
                        "error": done.output.decode()[-500:]}
            time.sleep(0.05)


def test_the_probe_step_holds_no_key_and_the_judge_step_reads_only_what_it_wrote(tmp_path, monkeypatch):
    import docker
    from fake_judge import FakeJudge

    from omnidr.evaluation import JudgeSettings, ScoreRequest, read_scored_run
    from omnidr.evaluation._container import score_in_container

    key = "sk-isolation-" + secrets.token_hex(16)
    monkeypatch.setenv("OMNIDR_TEST_ISOLATION_KEY", key)
    report = inject(copy_report(tmp_path / "report"), HOSTILE, where="body")
    run = write_run(tmp_path / "run", [TASK])
    write_attempt(run, TASK, 1, "success", report_from=report)

    config = docker.from_env().networks.get("bridge").attrs["IPAM"]["Config"][0]
    bridge_ip = config.get("Gateway") or str(next(ipaddress.ip_network(config["Subnet"]).hosts()))
    judge = FakeJudge(host=bridge_ip).start()
    watcher = Watcher(key)
    watcher.start()
    try:
        settings = JudgeSettings(base_url=judge.url, model="fake-judge", api_key_env="OMNIDR_TEST_ISOLATION_KEY",
                                 timeout_s=20)
        summary = score_in_container(ScoreRequest(run_dir=run, out_dir=tmp_path / "out", snapshot=DEMO,
                                                   judge_settings=settings))
    finally:
        watcher.stop.set()
        watcher.join(5)
        judge.stop()

    # the probe step, looked at from inside while the report's script ran: no key anywhere, not root
    assert watcher.inside is not None and "error" not in watcher.inside, watcher.inside
    assert watcher.inside["found"] == [] and watcher.inside["uid"] != 0
    assert watcher.inside["mounts"] == ["probe", "run", "snapshot"]  # no output folder, no judge cache
    probe = watcher.seen["probe"]
    assert not any(key in e for e in probe["Config"]["Env"] or [])
    assert probe["HostConfig"]["NetworkMode"] == "none" and probe["HostConfig"]["ReadonlyRootfs"]
    assert probe["HostConfig"]["CapDrop"] == ["ALL"]
    # the judge step: the key, the probe step's output read-only, and no run folder
    judge_mounts = {m["Destination"]: m["RW"] for m in watcher.seen["judge"]["Mounts"]}
    assert judge_mounts == {"/data/probe": False, "/data/snapshot": False, "/data/out": True}
    assert judge.calls > 0 and {r["auth"] for r in judge.requests} == {f"Bearer {key}"}
    # both steps name the run folder they score, as an attempt's containers do
    assert {watcher.seen[s]["Config"]["Labels"].get("org.omnidr.run-dir") for s in ("probe", "judge")} == \
        {str(run.resolve())}

    # the record says where it was computed, and that Chromium ran with its sandbox; the page's tries were refused
    _, [ev] = read_scored_run(tmp_path / "out")
    assert summary.evaluator is not None and summary.evaluator.where == "docker"
    assert ev.evaluator == summary.evaluator and (summary.evaluator.image or "").startswith("omnidr/evaluator:")
    assert ev.session is not None and ev.session.chromium_sandbox is True
    assert ev.session.blocked_total >= 3  # the judge's name, the Docker host, the metadata service
    assert not (tmp_path / "out" / TASK / "probe.json").read_text().count(key)
    assert summary.tasks[0].total > 0


def test_a_link_planted_in_the_probe_output_is_not_followed(tmp_path):
    """A probe step taken over by the report could leave a link to the judge step's own files (its environment
    holds the key): the judge step copies regular files only."""
    from omnidr.evaluation._run import copy_regular_files

    src = tmp_path / "probe" / TASK
    (src / "figures").mkdir(parents=True)
    (src / "material.json").write_text("{}")
    secret = tmp_path / "secret"
    secret.write_text("the key")
    (src / "figures" / "x.png").symlink_to(secret)
    (src / "linked-dir").symlink_to(tmp_path)
    copy_regular_files(src, tmp_path / "out")
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*")) == ["material.json"]


def test_the_image_refuses_a_loopback_judge_with_the_way_out(tmp_path):
    from omnidr.errors import UserError
    from omnidr.evaluation._container import judge_route

    with pytest.raises(UserError, match="--evaluator host"):
        judge_route("http://127.0.0.1:8000/v1")
