"""Images built at once (`omnidr images build --jobs N`, what `make images` runs before the tests): independent
images overlap, an image waits for its parent and for the image whose installed Debian layer it shares, and two
processes that need the same image build it once.

Small probe images on the project's base, from a private images folder (salted per test run, so that each
build is new to the engine), against the real Debian archive the build host reaches.
"""

import json
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from testkit import ROOT, run_cli

from omnidr.images import build_images, docker_client

# the probe images are removed by name after each test: the tests that build them run one after another
pytestmark = [pytest.mark.docker, pytest.mark.xdist_group("probe-images")]

HEAD = """\
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
LABEL org.omnidr.test-salt=SALT
"""
APT = """\
ARG DEBIAN_PACKAGES
RUN apt-get update -qq \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $DEBIAN_PACKAGES >/dev/null \\
 && rm -rf /var/lib/apt/lists/*
"""
SLEEP = """\
RUN sleep 4
"""


def _probe(folder: Path, name: str, dockerfile: str, salt: str, packages: list[str] | None = None,
           after: list[str] | None = None) -> None:
    (folder / name).mkdir()
    spec = {"name": name, "description": f"{name} (test)", "kind": "dockerfile", "parent": "base"}
    if packages:
        spec["debian_packages"] = packages
    if after:
        spec["build_after"] = after
    (folder / name / "image.json").write_text(json.dumps(spec))
    # the salt comes before every step: nothing of an earlier test run is in Docker's layer cache
    (folder / name / "Dockerfile").write_text(HEAD.replace("SALT", salt) + dockerfile)


@pytest.fixture
def probes(tmp_path: Path, client):
    """An images folder of the base and three probes; the probes' images are removed after the test."""
    build_images(["base"])
    folder = tmp_path / "images"
    shutil.copytree(ROOT / "images" / "base", folder / "base")
    salt = secrets.token_hex(6)
    _probe(folder, "probe-apt-a", APT, salt, ["jq"])
    _probe(folder, "probe-apt-b", APT, salt, ["jq"], after=["probe-apt-a"])  # repeats probe-apt-a's layer
    _probe(folder, "probe-sleep", SLEEP, salt)
    yield folder
    for image in client.images.list(filters={"label": f"org.omnidr.test-salt={salt}"}):
        client.images.remove(image.id, force=True)


def test_independent_images_overlap_and_a_shared_layer_is_built_once(probes):
    events: list[tuple[float, str]] = []
    results = build_images(["probe-apt-a", "probe-apt-b", "probe-sleep"], images_dir=probes, jobs=3,
                           progress=lambda m: events.append((time.monotonic(), m)))

    assert [r.name for r in results] == ["base", "probe-apt-a", "probe-apt-b", "probe-sleep"]  # parents first
    assert {r.name: r.status for r in results} == {"base": "cached", "probe-apt-a": "built", "probe-apt-b": "built",
                                                   "probe-sleep": "built"}

    def first(needle: str) -> int:
        return next(i for i, (_, m) in enumerate(events) if needle in m)

    a_done = first(f"built   {results[1].tag}")
    # probe-sleep waits for nothing but the base: it starts and builds while probe-apt-a is still resolving
    assert first(f"building {results[3].tag}") < a_done
    # probe-apt-b installs what probe-apt-a installs on the same parent and builds after it: it starts only once
    # that layer exists, and Docker's cache gives it the very layer instead of a second apt install (two installs
    # would differ: dpkg and apt write their logs and states with the time)
    assert first("probe-apt-b") > a_done
    client = docker_client()
    layers = {r.name: client.images.get(r.tag).attrs["RootFS"]["Layers"] for r in results}
    base_layers = len(layers["base"])
    apt_a, apt_b = layers["probe-apt-a"][base_layers], layers["probe-apt-b"][base_layers]
    assert apt_a == apt_b
    assert layers["probe-sleep"][base_layers] != apt_a


def test_two_processes_that_need_one_image_build_it_once(probes):
    code = ("import sys, time; from pathlib import Path; from omnidr.images import build_images; "
            "[r] = build_images(['probe-sleep'], images_dir=Path(sys.argv[1]), "
            "progress=lambda m: print('progress', m, flush=True))[-1:]; print('result', r.status, r.tag)")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(probes)], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        outputs.append(out)
    results = sorted(line.split()[1:] for out in outputs for line in out.splitlines() if line.startswith("result "))
    assert [status for status, _ in results] == ["built", "cached"], outputs
    assert results[0][1] == results[1][1]  # the same image
    waited = next(out for out in outputs if "result cached" in out)
    assert "waiting for another process building probe-sleep" in waited


@pytest.mark.parametrize(("after", "message"), [
    ({"probe-x": ["probe-y"], "probe-y": ["probe-x"]}, "the images wait for each other (probe-x -> probe-y -> probe-x)"),
    ({"probe-x": ["nowhere"]}, "names image 'nowhere', which does not exist"),
])
def test_an_order_that_cannot_be_built_exits_2_with_one_line(tmp_path, after, message):


    folder = tmp_path / "images"
    shutil.copytree(ROOT / "images" / "base", folder / "base")
    for name in ("probe-x", "probe-y"):
        _probe(folder, name, SLEEP, "x", after=after.get(name))
    r = run_cli("images", "build", "--jobs", "2", env={"OMNIDR_IMAGES_DIR": str(folder), "COLUMNS": "300"})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    [line] = r.stderr.strip().splitlines()
    assert message in line, line


def test_every_label_goes_on_in_one_step_and_reads_back_exactly(tmp_path, client):
    """Labels are one LABEL instruction (each instruction is a slow commit on the classic builder); a JSON record
    with quotes, backslashes, `$` and non-ASCII text reads back byte for byte."""
    from omnidr.images._build import label_instruction

    base = build_images(["base"])[0].tag
    record = json.dumps({"quote": 'a"b', "backslash": "c\\d", "dollar": "$HOME ${PATH}", "text": "é 中", "q": "'x'"},
                        ensure_ascii=False)
    labels = {"org.omnidr.test": record, "org.omnidr.test-empty": "", "org.omnidr.test-salt": secrets.token_hex(6)}
    (tmp_path / "Dockerfile").write_text(f"FROM {base}\n{label_instruction(labels)}\n")
    tag = f"omnidr/test-labels:{labels['org.omnidr.test-salt']}"
    steps = [c["stream"] for c in client.api.build(path=str(tmp_path), tag=tag, decode=True, rm=True)
             if c.get("stream", "").startswith("Step ")]
    try:
        assert len(steps) == 2, steps  # FROM and the one LABEL
        got = client.images.get(tag).labels
        assert {k: got.get(k) for k in labels} == labels
    finally:
        client.images.remove(tag, force=True)
