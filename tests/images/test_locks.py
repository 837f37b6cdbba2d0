"""Locks record, they do not break builds: a locked Debian version the archive no longer serves.

Builds a small image (`jq` on the project's base) from a private images folder, as a user runs
`omnidr images build`, against the real Debian archive the build host reaches.
"""

import json
import re
import shutil
from pathlib import Path

import pytest
from testkit import ROOT, run_cli

from omnidr.images import build_images, content_tag, packages_of
from omnidr.images._build import LABEL_RECIPE

# the probe images are removed by name before and after each test: the tests that build them run one after another
pytestmark = [pytest.mark.docker, pytest.mark.xdist_group("probe-images")]

DOCKERFILE = """\
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG DEBIAN_PACKAGES
RUN apt-get update -qq \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $DEBIAN_PACKAGES >/dev/null \\
 && rm -rf /var/lib/apt/lists/*
"""
LABEL = {"label": "org.omnidr.image=probe-jq"}


@pytest.fixture
def images_dir(tmp_path: Path, client):
    base_tag = build_images(["base"])[0].tag
    folder = tmp_path / "images"
    shutil.copytree(ROOT / "images" / "base", folder / "base")
    probe = folder / "probe-jq"
    probe.mkdir()
    (probe / "image.json").write_text(json.dumps({
        "name": "probe-jq", "description": "jq on the base (test)", "kind": "dockerfile", "parent": "base",
        "debian_packages": ["jq"]}))
    (probe / "Dockerfile").write_text(DOCKERFILE)
    for image in client.images.list(filters=LABEL):
        client.images.remove(image.id, force=True)
    yield folder, base_tag
    for image in client.images.list(filters=LABEL):
        client.images.remove(image.id, force=True)


def _cli(folder: Path, *args: str, **env: str):
    return run_cli("images", *args, env={"OMNIDR_IMAGES_DIR": str(folder), "COLUMNS": "200", **env})


def test_unserved_lock_builds_with_the_served_version_strict_refuses_and_lock_records(images_dir, client):
    folder, base_tag = images_dir
    lock = folder / "probe-jq" / "packages.lock"
    lock.write_text("jq=0.0-gone\n")

    built = _cli(folder, "build", "probe-jq")
    assert built.returncode == 0, built.stdout + built.stderr
    warnings = [line for line in built.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, built.stderr
    [image] = client.images.list(filters=LABEL)
    packages = packages_of(image)
    served = packages.debian["jq"]
    assert served != "0.0-gone"
    assert f"jq 0.0-gone -> {served}" in warnings[0] and "omnidr images lock probe-jq" in warnings[0]
    assert any(d.package == "jq" and d.locked == "0.0-gone" and d.served == served for d in packages.drift)
    # the image holds what it records, in its label and in a file inside it
    inside = client.containers.run(image.id, ["cat", "/etc/omnidr/packages.json"], remove=True)
    assert json.loads(inside) == json.loads(packages.model_dump_json())
    assert client.containers.run(image.id, ["jq", "--version"], remove=True).decode().strip().startswith("jq-")
    # the tag follows the installed versions: not the lock's
    installs = {n: packages.debian[n] for n in packages.debian if n in {"jq", "libjq1", "libonig5"}}
    recipe = image.labels[LABEL_RECIPE]
    [tag] = image.tags
    assert tag == content_tag("probe-jq", recipe, base_tag, installs, {})
    assert tag != content_tag("probe-jq", recipe, base_tag, {**installs, "jq": "0.0-gone"}, {})

    lock.write_text("jq=0.0-also-gone\n")
    for args, env in ((("build", "probe-jq", "--strict"), {}), (("build", "probe-jq"), {"OMNIDR_STRICT_IMAGES": "1"})):
        refused = _cli(folder, *args, **env)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in refused.stderr, refused.stderr
        assert f"jq 0.0-also-gone -> {served}" in lines[0] and "omnidr images lock probe-jq" in lines[0]
        assert [i.id for i in client.images.list(filters=LABEL)] == [image.id]  # nothing new was built

    relocked = _cli(folder, "lock", "probe-jq")
    assert relocked.returncode == 0, relocked.stdout + relocked.stderr
    assert f"jq 0.0-also-gone -> {served}" in relocked.stdout
    assert f"jq={served}\n" in lock.read_text() and "libjq1=" in lock.read_text()

    again = _cli(folder, "build", "probe-jq", "--strict")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "warning" not in again.stderr
    assert [i.id for i in client.images.list(filters=LABEL)] == [image.id]  # same contents, same tag: reused
    assert "cached" in again.stdout and "built " not in again.stdout


def test_a_failing_image_is_reported_and_the_others_are_still_built(tmp_path, client):
    """... and with --results-dir each image's result is also a file of its own (what `make test`'s Docker tests
    wait on): the failure with its reason, so that the tests needing that image fail saying why."""
    build_images(["base"])
    folder = tmp_path / "images"
    shutil.copytree(ROOT / "images" / "base", folder / "base")
    for name, run in (("probe-broken", "RUN echo the build breaks here && false"), ("probe-fine", "RUN true")):
        (folder / name).mkdir()
        (folder / name / "image.json").write_text(json.dumps(
            {"name": name, "description": "test", "kind": "dockerfile", "parent": "base"}))
        (folder / name / "Dockerfile").write_text(f"ARG BASE_IMAGE\nFROM ${{BASE_IMAGE}}\n{run}\n")
    try:
        r = _cli(folder, "build", "--results-dir", str(tmp_path / "results"))
        assert r.returncode == 1, r.stdout + r.stderr
        assert "Traceback" not in r.stdout + r.stderr
        failed = [line for line in r.stdout.splitlines() if line.startswith("failed probe-broken:")]
        assert len(failed) == 1 and "docker build of probe-broken failed" in failed[0]
        assert client.images.list(filters={"label": "org.omnidr.image=probe-fine"})  # built despite the other
        assert re.search(r"probe-fine\s*│\s*built", r.stdout) and re.search(r"probe-broken\s*│\s*failed", r.stdout)
        results = {p.stem: json.loads(p.read_text()) for p in (tmp_path / "results").glob("*.json")}
        assert set(results) == {"base", "probe-broken", "probe-fine"} and results["base"]["tag"]
        assert (results["probe-broken"]["status"], results["probe-fine"]["status"]) == ("failed", "built")
        assert "docker build of probe-broken failed" in results["probe-broken"]["reason"]
        assert results["probe-fine"]["tag"].startswith("omnidr/probe-fine:") and results["probe-fine"]["image_id"]
    finally:
        for image in client.images.list(filters={"label": "org.omnidr.image=probe-fine"}):
            client.images.remove(image.id, force=True)
