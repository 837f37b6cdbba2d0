"""`omnidr eval --config FILE`: a system kept in a TOML file builds the same `SystemConfig` as the same options on the
command line; options given on the command line win over the file; a bad file is exit 2 and one line."""

import json
from pathlib import Path

import pytest
from testkit import DEMO, ROOT, run_cli, said

from omnidr.harness import SystemConfig
from omnidr.paths import RunPaths

EXAMPLE = ROOT / "examples" / "system.toml"
TASK = "nd-filter-waterfall"

FILE = """\
evaluator = "host"

[agent]
harness = "reference"
capability = "video"
model = "scripted-openai"

[budget]
iterations = 40
wall_time = 600
attempts = 1

[web]
mode = "replay"
provider_tools = "deny"
model_policy = "refuse"
allow_net = ["10.20.0.0/16"]

[judge]
model = "judge-x@http://127.0.0.1:9/v1"
key_env = "MY_JUDGE_KEY"
"""
SAME_OPTIONS = ["--evaluator", "host", "--harness", "reference", "--capability", "video", "--model", "scripted-openai",
                "--budget", "iterations=40,wall_time=600,attempts=1", "--web", "replay", "--provider-tools", "deny",
                "--model-policy", "refuse", "--allow-net", "10.20.0.0/16", "--judge", "judge-x@http://127.0.0.1:9/v1",
                "--judge-key-env", "MY_JUDGE_KEY"]


def _request(args: list[str], env: dict | None = None, monkeypatch=None):
    """The request `omnidr eval ARGS` builds (Click's own parsing, the file read as the command reads it), not run."""
    from omnidr.pipeline._cli import eval_, eval_system_request
    from omnidr.pipeline._system_file import with_system_file

    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    ctx = eval_.make_context("eval", ["--snapshot", str(DEMO), *args])
    with ctx:
        return eval_system_request(DEMO, with_system_file(ctx, ctx.params))


def test_the_file_builds_the_config_the_same_options_build(tmp_path):
    (tmp_path / "system.toml").write_text(FILE, "utf-8")
    from_file = _request(["--config", str(tmp_path / "system.toml")])
    from_options = _request(SAME_OPTIONS)
    assert from_file.configs == from_options.configs
    config = from_file.config
    assert (config.agent.harness, config.agent.capability, config.agent.model.spec) == ("reference", "video",
                                                                                         "scripted-openai")
    assert (config.budget.max_iterations, config.budget.wall_time_s, config.budget.attempts_per_task) == (40, 600, 1)
    assert config.budget_label == "iterations=40,wall_time=600,attempts=1"
    assert (config.web.mode, str(config.web.tools_policy), config.web.model_policy) == ("replay", "deny", "refuse")
    assert config.web.allow_nets == ("10.20.0.0/16",)
    assert (config.judge.name, config.judge.key_env, config.evaluator) == ("judge-x", "MY_JUDGE_KEY", "host")


def test_an_option_on_the_command_line_or_in_the_environment_wins_over_the_file(tmp_path, monkeypatch):
    (tmp_path / "system.toml").write_text(FILE, "utf-8")
    config = _request(["--config", str(tmp_path / "system.toml"), "--capability", "full", "--budget", "attempts=2"],
                      env={"OMNIDR_JUDGE": "offline-baseline"}, monkeypatch=monkeypatch).config
    assert config.agent.capability == "full"  # the command line
    assert (config.budget_label, config.budget.attempts_per_task, config.budget.max_iterations) == ("attempts=2", 2, 500)
    assert config.judge.offline  # the environment (OMNIDR_JUDGE)
    assert (config.agent.model.spec, config.web.model_policy, config.evaluator) == ("scripted-openai", "refuse", "host")


def test_a_default_left_alone_does_not_override_the_file_and_no_file_keeps_the_defaults(tmp_path, monkeypatch):
    monkeypatch.delenv("OMNIDR_EVALUATOR", raising=False)  # the test session's (tests/conftest.py)
    (tmp_path / "system.toml").write_text('[agent]\ncapability = "video"\n', "utf-8")
    config = _request(["--config", str(tmp_path / "system.toml")]).config
    assert config.agent.capability == "video" and config.agent.harness == "reference"
    plain = _request([]).config
    assert plain == SystemConfig.model_validate(plain.model_dump())  # the recorded dump reads back as the same model
    assert (plain.agent.capability, plain.budget_label, plain.web.mode, plain.evaluator) == ("full", "default",
                                                                                             "replay", "docker")


def test_the_example_file_is_a_valid_config_of_the_offline_demo():
    config = _request(["--config", str(EXAMPLE)]).config
    assert config.agent.model.offline and config.judge.offline and config.web.mode == "replay"
    assert (config.budget.max_iterations, config.budget.attempts_per_task) == (50, 2)


def test_upstream_ca_paths_in_the_file_are_read_from_its_folder(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "system.toml").write_text('[web]\nmode = "live"\nupstream_ca = ["ca.pem"]\n', "utf-8")
    config = _request(["--config", str(tmp_path / "conf" / "system.toml")]).config
    assert config.web.upstream_ca == (tmp_path / "conf" / "ca.pem",)


@pytest.mark.parametrize(("text", "message"), [
    (None, "no such file; give a TOML system config (e.g. examples/system.toml)"),
    ('[agent]\nmodle = "scripted"\n', "unknown key 'agent.modle'; [agent] takes harness, capability, model, model_key_env"),
    ('[agnet]\nmodel = "scripted"\n', "unknown key 'agnet'; the file takes agent, budget, web, judge, evaluator"),
    ("[budget]\niterations = \"ten\"\n", "budget.iterations: input should be a valid integer, not 'ten'; fix the value"),
    ('[web]\nmode = "online"\n', "web.mode: input should be 'replay', 'live' or 'record', not 'online'"),
    ('[web]\nallow_net = "10.0.0.0/8"\n', "web.allow_net: input should be a valid list, not '10.0.0.0/8'"),
    ("evaluator = 3\n", "evaluator: input should be 'docker' or 'host', not 3"),
    ("[agent\nmodel = 1\n", "not TOML ("),
    ("[budget]\nattempts = 0\n", "budget: budget 'attempts=0' is out of range: attempts_per_task: Input should be "
                                  "greater than or equal to 1"),
    ('[agent]\nmodel = "gpt-4o"\n', "agent.model: unknown model 'gpt-4o'; use scripted"),
    ('[web]\nprovider_tools = "open"\n', "web.provider_tools: provider-tools policy 'open' is not one of allow"),
])
def test_a_bad_config_file_exits_2_with_one_line_and_writes_nothing(tmp_path, text, message):
    path = tmp_path / "system.toml"
    if text is not None:
        path.write_text(text, "utf-8")
    r = run_cli("eval", "--snapshot", DEMO, "--config", path, "--runs-root", tmp_path / "runs", timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = said(r.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(path) in lines[0], r.stderr
    assert message in lines[0]
    assert "Traceback" not in r.stdout + r.stderr
    assert not (tmp_path / "runs").exists()


def _recorded(runs: Path) -> tuple[dict, dict]:
    """The system config run.json recorded, and eval.json, of the one system folder under `runs`."""
    [folder] = [p for root in runs.iterdir() for p in root.iterdir() if (p / "eval.json").is_file()]
    run = json.loads(RunPaths(folder).config.read_text("utf-8"))
    return run["system"], json.loads((folder / "eval.json").read_text("utf-8"))


@pytest.mark.docker
@pytest.mark.browser  # --evaluator host: the probes run in this machine's Chromium
def test_eval_with_a_config_file_runs_the_system_the_same_options_run(tmp_path):
    (tmp_path / "system.toml").write_text(FILE.replace('model = "judge-x@http://127.0.0.1:9/v1"\nkey_env = "MY_JUDGE_KEY"',
                                                       'model = "offline-baseline"'), "utf-8")
    by_file = run_cli("eval", "--snapshot", DEMO, "--task", TASK, "--config", tmp_path / "system.toml",
                      "--runs-root", tmp_path / "file", timeout=900)
    assert by_file.returncode == 0, by_file.stdout + by_file.stderr
    options = SAME_OPTIONS[:-4]  # the offline judge, the default
    by_options = run_cli("eval", "--snapshot", DEMO, "--task", TASK, *options, "--runs-root", tmp_path / "options",
                         timeout=900)
    assert by_options.returncode == 0, by_options.stdout + by_options.stderr
    system_file, eval_file = _recorded(tmp_path / "file")
    system_options, eval_options = _recorded(tmp_path / "options")
    assert system_file == system_options
    assert eval_file == eval_options
    config = SystemConfig.model_validate(system_file)  # the record is the model, whole
    assert (config.agent.capability, config.agent.model.spec, config.web.model_policy) == ("video", "scripted-openai",
                                                                                          "refuse")
    assert (config.budget.max_iterations, config.evaluator, config.web.allow_nets) == (40, "host", ("10.20.0.0/16",))


def test_compare_reads_the_same_file_and_refuses_a_bad_one_in_one_line(tmp_path):
    path = tmp_path / "system.toml"
    path.write_text('[judge]\nkye_env = "X"\n', "utf-8")
    r = run_cli("compare", "--snapshot", DEMO, "--system", "reference:full", "--system", "reference:video",
                "--config", path, "--runs-root", tmp_path / "runs", timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert said(r.stderr) == [f"error: {path}: unknown key 'judge.kye_env'; [judge] takes model, key_env (see "
                              "examples/system.toml)"]
    assert not (tmp_path / "runs").exists()
