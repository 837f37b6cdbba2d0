"""Messages a newcomer meets: each mistake ends with one line that names the real problem and a fix that works."""

import json
import shutil

import pytest
from testkit import DEMO, ROOT, run_cli, said


def one_line_error(r) -> str:
    assert r.returncode == 2, r.stdout + r.stderr
    lines = said(r.stderr)
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def test_probe_of_a_missing_folder_is_an_error(tmp_path):
    line = one_line_error(run_cli("probe", tmp_path / "nonexistent", "--probe", "page_loads"))
    assert "no such report folder" in line


def test_compare_names_the_folder_that_is_wrong(tmp_path):
    good = tmp_path / "good"
    good.mkdir()
    (good / "eval.json").write_text("{}")
    line = one_line_error(run_cli("compare", good, tmp_path / "typo"))
    assert f"{tmp_path / 'typo'}: no such folder" in line and str(good) + ":" not in line


def test_audit_of_a_run_root_says_which_folder_to_pass(tmp_path):
    root = tmp_path / "runs" / "demo-x"
    (root / "reference-full-scripted").mkdir(parents=True)
    (root / "reference-full-scripted" / "run.json").write_text(json.dumps({"harness": "reference"}))
    line = one_line_error(run_cli("audit", root))
    assert "is a run root" in line and f"omnidr audit {root / 'reference-full-scripted'}" in line


def test_a_broken_manifest_is_not_fixed_by_freezing_again(demo_copy):
    (demo_copy / "MANIFEST.json").write_text("{ not json")
    line = one_line_error(run_cli("snapshot", "verify", demo_copy))
    assert "restore MANIFEST.json" in line and "freeze" not in line.split("(freezing")[0]


@pytest.mark.browser  # `snapshot validate` renders the demo's reports in Chromium (the empty-report check)
def test_a_missing_demo_video_points_at_the_demo_media_script(tmp_path):
    snapshots = tmp_path / "snapshots"
    shutil.copytree(DEMO, snapshots / "demo")
    shutil.copy2(ROOT / "snapshots" / "make_demo_media.py", snapshots / "make_demo_media.py")
    (snapshots / "demo" / "tasks" / "sky-blue-rayleigh" / "video.mp4").unlink()
    r = run_cli("snapshot", "validate", snapshots / "demo")
    assert r.returncode == 1
    assert f"python3 {snapshots / 'make_demo_media.py'}" in r.stdout + r.stderr
    assert "fetch-videos" not in r.stdout + r.stderr


def test_run_checks_the_upstream_key_before_any_attempt(tmp_path):
    r = run_cli("run", "--snapshot", DEMO, "--image", "omnidr/base:any", "--run-dir", tmp_path / "run",
                "--openai-base-url", "http://upstream:9000/v1", "--openai-key-env", "OMNIDR_TEST_UNSET_KEY", "--",
                "true", env={"OMNIDR_TEST_UNSET_KEY": None})
    line = one_line_error(r)
    assert "OMNIDR_TEST_UNSET_KEY is not set" in line
    assert not (tmp_path / "run" / "attempts").exists()


@pytest.mark.docker  # the endpoint is probed from the gateway's outside network, a Docker network
@pytest.mark.images("codex")
def test_a_harness_takes_one_model_endpoint_of_either_api(tmp_path):
    line = one_line_error(run_cli("run", "--harness", "claude-code", "--run-dir", tmp_path / "run", "--model", "m",
                                  "--openai-base-url", "http://127.0.0.1:9/v1",
                                  "--anthropic-base-url", "http://127.0.0.1:9/v1"))
    assert line == ("error: the claude-code harness runs on one model endpoint; give --openai-base-url or "
                    "--anthropic-base-url, not both (the gateway translates between their APIs)")
    # the other API's endpoint is taken (translated); this one does not answer, which is said before any attempt
    line = one_line_error(run_cli("run", "--harness", "codex", "--run-dir", tmp_path / "run",
                                  "--anthropic-base-url", "http://127.0.0.1:9/v1", "--model", "m"))
    assert "http://127.0.0.1:9/v1 does not answer" in line and "--anthropic-base-url" in line
    assert not (tmp_path / "run" / "attempts").exists()


@pytest.mark.docker
@pytest.mark.images("reference", "claude-code")
def test_run_stops_before_any_attempt_when_the_model_endpoint_does_not_answer(tmp_path):
    """Probed from the gateway's outside network, through the relay a loopback URL gets."""
    from testkit import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    for harness, flag in (("reference", "--openai-base-url"), ("claude-code", "--anthropic-base-url")):
        line = one_line_error(run_cli("run", "--snapshot", DEMO, "--run-dir", tmp_path / "run", "--harness", harness,
                                      flag, url, "--model", "m", timeout=900))
        assert line.startswith(f"error: the model endpoint {url} does not answer") and f"fix {flag}" in line, line
        assert not (tmp_path / "run").exists()


def test_a_bad_search_door_is_one_line(tmp_path):
    line = one_line_error(run_cli("run", "--harness", "reference", "--run-dir", tmp_path / "run",
                                  "--search-door", "google@https://www.google.com"))
    assert line == ("error: --search-door 'google@https://www.google.com': give searxng@URL or brave@URL, e.g. "
                    "brave@https://api.search.brave.com")
    line = one_line_error(run_cli("run", "--harness", "reference", "--run-dir", tmp_path / "run", "--proxy-mode",
                                  "intercept", "--search-door", "brave@https://api.search.brave.com",
                                  env={"BRAVE_SEARCH_API_KEY": ""}))
    assert line == ("error: environment variable BRAVE_SEARCH_API_KEY (the brave search door's key) is not set; set it "
                    "or name another with --search-key-env")
    assert not (tmp_path / "run").exists()
