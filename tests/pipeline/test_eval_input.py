"""Bad requests to `omnidr eval`: exit 2 with one line, before any attempt starts and before any run
root is written."""

import pytest
from testkit import DEMO, run_cli, said

from omnidr.errors import UserError
from omnidr.pipeline import make_system, parse_budget, parse_judge, parse_model, parse_system


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--model", "gpt-4o"], {}, "unknown model 'gpt-4o'; use scripted, scripted-openai, scripted-anthropic, openai/NAME, anthropic/NAME, or NAME@BASE_URL"),
        (["--harness", "autogpt"], {}, "unknown harness 'autogpt'; choose one of reference, claude-code, codex, direct, openclaw"),
        (["--judge", "gpt-judge"], {}, "unknown judge 'gpt-judge'"),
        (["--capability", "telepathy"], {}, "unknown capability 'telepathy'"),
        (["--budget", "steps=9"], {}, "budget item 'steps=9' is not KEY=VALUE"),
        (["--budget", "attempts=0"], {}, "budget 'attempts=0' is out of range"),
        (["--executor", "k8s"], {}, "unknown executor 'k8s'"),
        (["--provider-tools", "open"], {}, "provider-tools policy 'open' is not one of allow, deny, denylist"),
        (["--model", "openai/gpt-5"], {"OPENAI_API_KEY": None}, "needs its key in $OPENAI_API_KEY"),
        (["--judge", "openai/gpt-5-mini"], {"OMNIDR_JUDGE_API_KEY": None, "OPENAI_API_KEY": None},
         "the judge endpoint https://api.openai.com/v1 needs its key in $OPENAI_API_KEY"),
        (["--model", "m@http://10.9.9.9:8000/v1"], {"OMNIDR_MODEL_API_KEY": None}, "needs its key in $OMNIDR_MODEL_API_KEY"),
        (["--model", "m@ftp://host/v1"], {}, "is not an http(s) URL"),
        (["--harness", "openclaw"], {}, "the scripted model does not drive the openclaw harness"),
        (["--harness", "claude-code", "--model", "scripted-openai", "--provider-tools", "allow"], {},
         "claude-code-full-scripted-openai: provider-side tools (allow) cannot "
         "cross the gateway's anthropic-messages->openai-chat translation"),
        (["--model", "m@gemini+http://127.0.0.1:9/v1"], {}, "unknown API 'gemini' before '+'"),
        (["--snapshot", "/no/such/snapshot"], {}, "snapshot folder /no/such/snapshot does not exist"),
        ([], {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}, "cannot reach the Docker engine"),
        ([], {"OMNIDR_MIN_FREE_GB": "1000000"}, "an evaluation needs at least 1e+06 GiB"),
        (["--tracking-uri", "http://127.0.0.1:9/"], {}, "the MLflow tracking server http://127.0.0.1:9/ does not answer"),
        (["--web", "live", "--search-door", "brave@https://api.search.brave.com"], {"BRAVE_SEARCH_API_KEY": None},
         "environment variable BRAVE_SEARCH_API_KEY (the brave search door's key) is not set"),
        (["--search-door", "google@https://www.google.com"], {}, "give searxng@URL or brave@URL"),
        pytest.param(["--web", "live", "--outside-network", "omnidr-no-such-network"], {},
                     "Docker network omnidr-no-such-network does not exist; create it",
                     marks=pytest.mark.docker),  # asks the Docker engine for the network
    ],
)
def test_bad_request_exits_2_with_one_line_and_writes_nothing(tmp_path, args, env, message):
    snapshot = [] if "--snapshot" in args else ["--snapshot", str(DEMO)]
    r = run_cli("eval", *snapshot, *args, "--runs-root", tmp_path / "runs", env=env, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = said(r.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert message in lines[0]
    assert "Traceback" not in r.stdout + r.stderr
    assert not (tmp_path / "runs").exists()


def test_a_snapshot_without_a_web_is_not_replayed(tmp_path, demo_copy):
    import shutil

    shutil.rmtree(demo_copy / "web")
    r = run_cli("eval", "--snapshot", demo_copy, "--runs-root", tmp_path / "runs", timeout=120)
    assert r.returncode == 2 and r.stderr.strip() == (
        f"error: {demo_copy} has no web corpus (web/corpus.json) to replay; give --web live or --web record, or add "
        "a recorded one with `omnidr snapshot add-web`"), r.stderr
    assert not (tmp_path / "runs").exists()


def test_the_web_modes_are_proxy_modes_with_their_provider_tools_defaults():
    """replay is the snapshot's corpus (provider-side tools denied, so the run stays offline); live is the web
    through the intercepting proxy (the denylist applies, also to provider-side tools); record saves it."""
    from omnidr.harness import SystemConfig, SystemSpec, WebPolicy
    from omnidr.pipeline._eval import EvalRequest

    def request_on(web: str) -> EvalRequest:
        config = SystemConfig(agent=SystemSpec(harness="reference"), web=WebPolicy(mode=web),
                              judge=parse_judge("offline-baseline"))
        return EvalRequest(snapshot=DEMO, configs=[config])

    request = request_on("replay")
    assert (request.proxy_mode, str(request.tools_policy)) == ("replay", "deny")
    live = request_on("live")
    assert (live.proxy_mode, str(live.tools_policy)) == ("intercept", "denylist")
    record = request_on("record")
    assert (record.proxy_mode, str(record.tools_policy)) == ("record", "denylist")


def test_model_and_judge_spellings():
    assert parse_model("scripted").offline and parse_model("").offline
    m = parse_model("qwen3@http://127.0.0.1:8000/v1/")
    assert (m.name, m.base_url, m.key_env, m.family) == ("qwen3", "http://127.0.0.1:8000/v1", "OMNIDR_MODEL_API_KEY", "openai")
    a = parse_model("anthropic/claude-opus-5")
    assert (a.base_url, a.key_env, a.family) == ("https://api.anthropic.com/v1", "ANTHROPIC_API_KEY", "anthropic")
    assert parse_model("openai/gpt-5", key_env="MY_KEY").key_env == "MY_KEY"
    assert parse_judge("offline-baseline").offline
    assert parse_judge("j@https://judge.example/v1").key_env == "OMNIDR_JUDGE_API_KEY"
    with pytest.raises(UserError, match="unknown judge 'anthropic/x'"):
        parse_judge("anthropic/x")  # the judge client speaks the OpenAI API only


def test_an_endpoints_api_is_spelled_with_the_url_and_names_the_translation():
    claude_on_vllm = make_system("claude-code", "full", parse_model("Qwen/Qwen3-8B@http://127.0.0.1:8000/v1"))
    assert claude_on_vllm.model.name == "Qwen/Qwen3-8B"  # a slash in a model name is the name's
    assert claude_on_vllm.translation == "anthropic-messages->openai-chat"
    codex_on_claude = make_system("codex", "full", parse_model("anthropic/claude-opus-5"))
    assert codex_on_claude.translation == "openai-responses->anthropic-messages"
    gateway_claude = parse_model("claude-x@anthropic+http://127.0.0.1:9/v1")
    assert (gateway_claude.family, gateway_claude.base_url) == ("anthropic", "http://127.0.0.1:9/v1")
    assert make_system("claude-code", "full", gateway_claude).translation is None
    chat_only = parse_model("m@openai-chat+http://127.0.0.1:9/v1")
    assert make_system("codex", "full", chat_only).translation == "openai-responses->openai-chat"
    assert make_system("codex", "full", parse_model("m@http://127.0.0.1:9/v1")).translation is None
    # the scripted model as one kind of server: same model name, different systems
    on_openai = make_system("claude-code", "full", parse_model("scripted-openai"))
    on_anthropic = make_system("claude-code", "full", parse_model("scripted-anthropic"))
    assert on_openai.model.name == on_anthropic.model.name == "scripted-demo"
    assert (on_openai.label, on_openai.translation) == ("claude-code-full-scripted-openai", "anthropic-messages->openai-chat")
    assert on_anthropic.translation is None and make_system("claude-code", "full", parse_model("scripted")).translation is None
    with pytest.raises(UserError, match="unknown API 'gemini' before"):
        parse_model("m@gemini+http://127.0.0.1:9/v1")


def test_system_labels_and_budgets():
    default = parse_model("scripted")
    assert make_system("reference", "full", default).label == "reference-full-scripted"
    assert parse_system("reference:video", default).label == "reference-video-scripted"
    s = parse_system("reference@Qwen3 VL@http://127.0.0.1:9/v1", default)
    assert (s.capability, s.model.name, s.label) == ("full", "Qwen3 VL", "reference-full-qwen3-vl")
    # the ladder is a choice of installed skills on every harness that gets them (paper App. F.5)
    assert parse_system("codex:video@m@http://127.0.0.1:9/v1", default).label == "codex-video-m"
    with pytest.raises(UserError, match="the openclaw harness runs at full only"):
        parse_system("openclaw:video@m@http://127.0.0.1:9/v1", default)
    label, budget = parse_budget("iterations=50,wall_time=900,attempts=2,total_tokens=200000")
    assert label == "iterations=50,wall_time=900,attempts=2,total_tokens=200000"
    assert (budget.max_iterations, budget.wall_time_s, budget.attempts_per_task, budget.max_total_tokens) == (50, 900.0, 2, 200000)
    assert parse_budget("default")[1] == parse_budget(None)[1]
    assert parse_budget("cost=0.75,attempts=1")[1].max_cost_usd == 0.75  # US dollars per attempt
    with pytest.raises(UserError, match="budget 'cost=-1' is out of range"):
        parse_budget("cost=-1")


def test_dollar_options_that_cannot_hold_stop_eval_in_one_line(tmp_path):
    """Before any image or container: a `--max-cost` without a per-attempt dollar budget, a bad price file, and a
    dollar budget for a model nobody priced."""
    prices = tmp_path / "prices.json"
    prices.write_text('{"scripted-demo": {"output_per_mtok": 1}}')
    cases = [
        (("--max-cost", "5"), "error: --max-cost needs a dollar budget per attempt"),
        (("--prices", prices), "lacks input_per_mtok"),
        (("--prices", tmp_path / "missing.json"), "--prices " + str(tmp_path / "missing.json") + ": cannot read it"),
        (("--budget", "cost=1"), "error: no price is known for the model 'scripted-demo'"),
    ]
    no_docker = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}  # each is said before the engine is asked
    for extra, message in cases:
        r = run_cli("eval", "--snapshot", DEMO, *extra, "--runs-root", tmp_path / "runs", env=no_docker, timeout=300)
        assert r.returncode == 2, (extra, r.stdout[-1500:], r.stderr)
        assert message in r.stderr and len(said(r.stderr)) == 1, (extra, r.stderr)


@pytest.mark.docker
@pytest.mark.browser
def test_a_harness_image_that_cannot_be_built_stops_the_run_before_any_attempt(tmp_path):
    from omnidr.images._build import npm_reachable

    if npm_reachable():  # the product's own probe; with npm the image builds and the run would go outside
        pytest.skip("the npm registry is reachable here, so the openclaw image can be built")
    r = run_cli("eval", "--snapshot", DEMO, "--harness", "openclaw", "--model", "openai/gpt-5", "--runs-root",
                tmp_path / "runs", env={"OPENAI_API_KEY": "sk-test"}, timeout=600)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr
    assert said(r.stderr) == [
        "error: the openclaw image cannot be built here: needs the npm registry, which this machine cannot reach; "
        "build it where registry.npmjs.org is reachable"]
    assert not (tmp_path / "runs").exists()


def test_systems_with_the_same_label_are_told_apart_by_their_folders(tmp_path):
    from omnidr.pipeline._results import ScoredSystem, distinct_labels
    from omnidr.scoring import SystemDecisions, SystemKey

    key = SystemKey(model="m", harness="reference", capability="full", budget="default")
    same = SystemDecisions(system=key, decisions=[])
    other = SystemDecisions(system=SystemKey(model="x", harness="y"), decisions=[])
    found = [ScoredSystem(key.label, tmp_path / "a", same), ScoredSystem(key.label, tmp_path / "b", same),
             ScoredSystem("x / y", tmp_path / "c", other)]
    out = distinct_labels(found)
    assert [f.label for f in out] == ["m (a) / reference / full / default", "m (b) / reference / full / default", "x / y"]
    assert [f.decisions.system.label for f in out] == [f.label for f in out]


def test_a_subset_run_does_not_displace_the_systems_evaluated_on_every_task(tmp_path):
    from omnidr.pipeline._results import EvalConfig, primary_task_set
    from omnidr.pipeline._specs import parse_judge, parse_model, parse_system
    from sandbox.models import Budget

    def system_folder(name: str, tasks: list[str]) -> None:
        config = EvalConfig(system=parse_system("reference:full", parse_model("scripted")),
                            judge=parse_judge("offline-baseline"), budget_label="default", budget=Budget(),
                            tasks=tasks, snapshot_id="demo-x")
        (tmp_path / name).mkdir()
        (tmp_path / name / "eval.json").write_text(config.model_dump_json())

    full = ["nd-filter-waterfall", "pendant-lamp-safety", "sky-blue-rayleigh"]
    system_folder("a-full", full)
    system_folder("b-full", full)
    system_folder("c-quick", ["sky-blue-rayleigh"])
    assert primary_task_set(tmp_path, ["sky-blue-rayleigh"]) == full  # the quick run ranks nobody out
    assert primary_task_set(tmp_path, full) == full


def test_rows_run_under_different_web_policies_are_marked(tmp_path):
    import json
    from datetime import UTC, datetime

    from omnidr.pipeline._results import EvalConfig, Results, _notes, web_policy_note
    from omnidr.pipeline._specs import parse_judge, parse_model, parse_system
    from omnidr.scoring import Leaderboard
    from sandbox.models import Budget, ProviderToolsPolicy, SearchDoor

    replayed = EvalConfig(system=parse_system("reference:full", parse_model("scripted")),
                          judge=parse_judge("offline-baseline"), budget_label="default", budget=Budget(),
                          tasks=["sky-blue-rayleigh"], snapshot_id="demo-x")
    # an eval.json from before the setting reads as what it ran with: replay, provider-side tools denied
    older = json.loads(replayed.model_dump_json())
    for setting in ("provider_tools", "web", "search_door"):
        del older[setting]
    assert EvalConfig.model_validate(older) == replayed
    opened = replayed.model_copy(update={"provider_tools": ProviderToolsPolicy.parse("web_search=allow",
                                                                                     replayed.provider_tools)})
    live = replayed.model_copy(update={"web": "live", "search_door": SearchDoor(
        provider="brave", base_url="https://api.search.brave.com", key_env="BRAVE_SEARCH_API_KEY")})
    assert web_policy_note({"a": replayed.web_policy, "b": replayed.web_policy}) is None
    policies = {"a": replayed.web_policy, "b": opened.web_policy, "c": live.web_policy}
    results = Results(snapshot_id="demo-x", judge="j", generated_at=datetime.now(UTC), systems={},
                      leaderboard=Leaderboard(task_ids=[], replicates=0, seed=0, confidence=0.95,
                                              settings=None, rows=[]), web_policies=policies)
    [note] = _notes(results)
    assert "different web policies" in note
    assert "a: replayed corpus, offline search index, provider-side tools deny" in note
    assert ("b: replayed corpus, offline search index, provider-side tools web_search=allow,web_fetch=deny,hosted=deny"
            in note)
    assert "c: live web, search door brave@https://api.search.brave.com, provider-side tools deny" in note


def test_a_comparison_of_many_systems_gets_a_file_name_the_file_system_takes():
    from omnidr.pipeline._compare import MAX_NAME, comparison_name

    assert comparison_name(["reference-full-scripted", "reference-video-scripted"]) == (
        "reference-full-scripted-vs-reference-video-scripted")
    ladder = [f"{h}-{level}-scripted" for h in ("reference", "claude-code")
              for level in ("interface_only", "video", "text_web", "multimodal", "full")]
    name = comparison_name(ladder)
    assert len((name + ".json.tmp").encode()) < 255 and len(name.encode()) <= MAX_NAME
    assert name.startswith("reference-interface_only-scripted-vs-") and "-vs-and-5-more-" in name
    assert name == comparison_name(ladder) != comparison_name(ladder[::-1])


def test_the_judge_key_known_before_scoring_is_the_one_the_judges_evaluations_carry():
    """A resumed run finds the evaluations of the same judge by this key: it must be the judge's own identity."""
    from omnidr.evaluation import BaselineJudge, OpenAIJudge
    from omnidr.pipeline._eval import judge_key, judge_settings

    model_judge = parse_judge("gpt-judge@http://127.0.0.1:9/v1")
    assert judge_key(model_judge) == OpenAIJudge(judge_settings(model_judge)).identity.key
    assert judge_key(parse_judge("offline-baseline")) == BaselineJudge().identity.key
