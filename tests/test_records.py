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


def test_run_json_records_the_whole_system_config_and_a_run_json_from_before_it_resumes(tmp_path):
    from omnidr.attempts import open_run
    from omnidr.errors import UserError
    from omnidr.harness import SystemConfig, SystemSpec, WebPolicy

    system = SystemConfig(agent=SystemSpec(harness="reference", capability="video"), web=WebPolicy(model_policy="refuse"))
    before = RunConfig(snapshot=str(DEMO), tasks=["pendant-lamp-safety"], harness="reference", model="scripted",
                       agent_image="omnidr/reference:test", command=["python", "-m", "sandbox.reference_agent"],
                       upstreams=[], budget=Budget(), limits=SandboxLimits(), retry=RetryPolicy(), proxy_mode="replay",
                       gateway_image="omnidr/gateway:test", egress_image="omnidr/egress:test")
    now = before.model_copy(update={"system": system.model_dump(mode="json")})
    assert now.run_id() == before.run_id()  # the record is not the run's identity: its containers keep their labels
    open_run(tmp_path / "old", before)  # a run.json written before `system` existed
    open_run(tmp_path / "old", now)  # resumes
    open_run(tmp_path / "new", now)
    recorded = json.loads((tmp_path / "new" / "run.json").read_text("utf-8"))["system"]
    assert SystemConfig.model_validate(recorded) == system  # the dump reads back as the model, whole
    with pytest.raises(UserError, match="different configuration"):  # a setting of the attempts still refuses
        open_run(tmp_path / "new", now.model_copy(update={"model_policy": "refuse"}))
