"""Run files name their format (`schema_version`): old files read as the current format, other formats are refused."""

import json

import pytest
from pydantic import ValidationError
from testkit import DEMO, run_cli

from omnidr.attempts import AttemptRecord, RetryPolicy, RunConfig, SandboxLimits
from omnidr.evaluation import Evaluation, RunEvaluation
from omnidr.pipeline._archive import ArchiveManifest, RescoreRecord
from omnidr.pipeline._results import EvalConfig, Results
from sandbox.models import Budget


def test_every_run_file_names_its_own_format():
    schemas = {m.SCHEMA for m in (RunConfig, AttemptRecord, EvalConfig, Results, ArchiveManifest, RescoreRecord,
                                  Evaluation, RunEvaluation)}
    assert len(schemas) == 8 and all(s.startswith("omnidr.") and s.endswith("/1") for s in schemas)


def test_a_file_from_before_the_version_reads_as_this_format_and_another_format_is_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    written = RunConfig(snapshot=str(DEMO), tasks=["pendant-lamp-safety"], harness="reference", model="scripted",
                        agent_image="omnidr/reference:test", command=["python", "-m", "sandbox.reference_agent"],
                        upstreams=[], budget=Budget(), limits=SandboxLimits(), retry=RetryPolicy(), proxy_mode="replay",
                        gateway_image="omnidr/gateway:test", egress_image="omnidr/egress:test")
    (run / "run.json").write_text(written.model_dump_json())
    data = json.loads((run / "run.json").read_text())
    assert data["schema_version"] == "omnidr.run/1"
    old = {k: v for k, v in data.items() if k != "schema_version"}
    config = RunConfig.model_validate(old)
    assert config == RunConfig.model_validate(data) and config.schema_version == "omnidr.run/1"
    assert config.run_id() == RunConfig.model_validate(old).run_id()  # the id does not depend on the field
    with pytest.raises(ValidationError, match="'omnidr.run/2': this omnidr reads omnidr.run/1"):
        RunConfig.model_validate({**data, "schema_version": "omnidr.run/2"})

    (run / "run.json").write_text(json.dumps({**data, "schema_version": "omnidr.run/2"}))
    r = run_cli("score", run)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    [line] = r.stderr.strip().splitlines()
    assert "run.json: not a valid run file" in line and "'omnidr.run/2': this omnidr reads omnidr.run/1" in line
