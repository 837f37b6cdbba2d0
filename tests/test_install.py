"""`pip install .` alone gives a working tool: pyproject.toml declares every runtime dependency.

The venv is made from the wheels of requirements.lock that `make test` downloads into
.venv/wheelhouse (no network here): pip resolves pyproject.toml's ranges against them and installs
only what they require, so a dependency missing from pyproject.toml is missing in the venv.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from testkit import DEMO, ROOT

WHEELHOUSE = ROOT / ".venv" / "wheelhouse"


@pytest.fixture(scope="module")
def plain_venv(tmp_path_factory) -> Path:
    if not any(WHEELHOUSE.glob("*.whl")):
        pytest.fail(f"{WHEELHOUSE} holds no wheels; run `make test` (it downloads them)")
    tmp = tmp_path_factory.mktemp("plain")
    src = tmp / "src"  # a copy, so that the build leaves nothing in the checkout
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for pkg in ("omnidr", "sandbox"):
        shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # the project venv's pip (requirements-bootstrap.lock) installs into the bare venv (`pip --python`): a newer pip
    # than the one `venv` bundles, and a third faster; --no-compile: byte-compiling every installed module is most
    # of the install's CPU and proves nothing here
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                          "--disable-pip-version-check", "--no-compile", "--no-index", "--find-links", str(WHEELHOUSE),
                          str(src)], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    return venv


def _omnidr(venv: Path, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(venv / "bin" / "omnidr"), *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


def test_plain_install_runs_the_commands(plain_venv, tmp_path):
    # the installed copy, not the checkout, answers
    where = subprocess.run([str(plain_venv / "bin" / "python"), "-c", "import omnidr; print(omnidr.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert str(plain_venv) in where.stdout, where.stdout + where.stderr

    helped = _omnidr(plain_venv, "--help", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    for command in ("eval", "snapshot", "images", "aggregate", "score", "audit", "judge", "labels"):
        assert command in helped.stdout

    valid = _omnidr(plain_venv, "snapshot", "validate", str(DEMO), "--no-videos", cwd=tmp_path)
    assert valid.returncode == 0, valid.stdout + valid.stderr

    rubric = DEMO / "tasks" / "sky-blue-rayleigh" / "rubric.json"
    atoms = json.loads(rubric.read_text("utf-8"))["atoms"]
    decisions = tmp_path / "decisions.json"
    decisions.write_text(json.dumps({"task_id": "sky-blue-rayleigh", "decisions": {a["id"]: "pass" for a in atoms}}))
    scored = _omnidr(plain_venv, "aggregate", "--rubric", str(rubric), "--decisions", str(decisions), "--format", "json",
                     cwd=tmp_path)
    assert scored.returncode == 0, scored.stdout + scored.stderr
    assert json.loads(scored.stdout)["total"] == pytest.approx(100.0)

    # every stage imports (the stage commands load their modules only when invoked)
    for module in ("omnidr.trajectory", "omnidr.evaluation", "omnidr.pipeline", "omnidr.tracking",
                   "omnidr.attempts", "omnidr.reliability", "sandbox.gateway"):
        imported = subprocess.run([str(plain_venv / "bin" / "python"), "-c", f"import {module}"],
                                  capture_output=True, text=True, cwd=tmp_path)
        assert imported.returncode == 0, f"{module}: {imported.stderr.strip().splitlines()[-1:]}"


def test_ray_is_an_extra_with_a_clear_message(plain_venv, tmp_path):
    probe = subprocess.run([str(plain_venv / "bin" / "python"), "-c", "import ray"], capture_output=True, text=True)
    assert probe.returncode != 0  # not installed without the extra
    code = ("from omnidr.attempts._executors import RayExecutor\n"
            "from omnidr.errors import UserError\n"
            "try:\n    RayExecutor()._connect()\nexcept UserError as e:\n    print(e)\n")
    said = subprocess.run([str(plain_venv / "bin" / "python"), "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert "pip install 'omnidr[ray]'" in said.stdout, said.stdout + said.stderr
