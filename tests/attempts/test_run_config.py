"""run.json and the provider-side tools policy: an older run folder keeps its id and resumes, a replay run
that opens provider-side search is not offline and is a different run."""

import json

import pytest

from omnidr.attempts import RunConfig, default_provider_tools, parse_provider_tools
from sandbox.models import ProviderToolsPolicy

# run.json as the release before the provider_tools setting wrote it, and the run id that release gave it
OLD_RUN_JSON = (
    '{"snapshot":"/work/snapshots/demo","tasks":["pendant-lamp-safety"],"harness":"reference",'
    '"agent_image":"omnidr/reference:abc","command":["reference"],"model":"scripted-demo","upstreams":'
    '[{"family":"openai","base_url":"http://scripted:9000/v1","key_env":null}],"budget":{"max_iterations":500,'
    '"max_output_tokens":64000,"max_total_tokens":null,"max_tool_calls":null,"wall_time_s":36000.0,'
    '"upstream_retries":5,"attempts_per_task":3},"limits":{"cpus":2.0,"memory_mb":4096,"pids":512,"tmpfs_mb":512,'
    '"output_mb":2048},"retry":{"retry_on":["no_report","invalid_report","timeout","agent_error","budget_exhausted"],'
    '"max_infra_retries":2},"proxy_mode":"replay","denylist":["github.com/marinero4972/OmniDR-Bench"],'
    '"gateway_image":"omnidr/gateway:1","egress_image":"omnidr/egress:1","outside_network":"bridge",'
    '"evidence_brief":false}'
)
OLD_RUN_ID = "01cf7ca8282454a7"


def test_an_older_run_json_reads_with_replays_default_and_keeps_its_run_id():
    old = RunConfig.model_validate_json(OLD_RUN_JSON)
    assert old.provider_tools == ProviderToolsPolicy.every("deny") and old.offline
    assert old.run_id() == OLD_RUN_ID
    # rewritten today it states the policy, and is still the same run
    again = RunConfig.model_validate_json(old.model_dump_json())
    assert json.loads(old.model_dump_json())["provider_tools"]["web_search"] == "deny"
    assert again == old and again.run_id() == OLD_RUN_ID


def test_opening_provider_search_in_a_replay_run_makes_another_run_that_is_not_offline():
    old = RunConfig.model_validate_json(OLD_RUN_JSON)
    opened = old.model_copy(update={"provider_tools": ProviderToolsPolicy.every("allow")})
    assert not opened.offline and opened.run_id() != OLD_RUN_ID


def test_the_live_web_defaults_to_the_denylist_policy():
    assert default_provider_tools("log") == ProviderToolsPolicy.every("denylist")
    assert default_provider_tools("deny") == ProviderToolsPolicy.every("deny")
    live = json.loads(OLD_RUN_JSON) | {"proxy_mode": "intercept"}
    assert RunConfig.model_validate(live).provider_tools == ProviderToolsPolicy.every("denylist")
    assert parse_provider_tools("default", "log") is None
    mixed = parse_provider_tools("web_search=allow", "log")
    assert (mixed.web_search, mixed.web_fetch) == ("allow", "denylist")


@pytest.mark.parametrize("value, reuse", [(None, True), ("0", True), ("no", True), ("1", False), ("TRUE", False)])
def test_helper_pairs_are_reused_unless_fresh_helpers_is_set(monkeypatch, value, reuse):
    from omnidr.attempts._helpers import reuse_helpers

    if value is None:
        monkeypatch.delenv("OMNIDR_FRESH_HELPERS", raising=False)
    else:
        monkeypatch.setenv("OMNIDR_FRESH_HELPERS", value)
    assert reuse_helpers() is reuse


def test_a_bad_fresh_helpers_value_is_one_line_that_says_what_to_set(monkeypatch):
    from omnidr.attempts._helpers import reuse_helpers
    from omnidr.errors import UserError

    monkeypatch.setenv("OMNIDR_FRESH_HELPERS", "maybe")
    with pytest.raises(UserError) as caught:
        reuse_helpers()
    message = str(caught.value)
    assert "OMNIDR_FRESH_HELPERS='maybe'" in message and "set it to 1" in message and "\n" not in message
