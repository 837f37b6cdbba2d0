"""The harness registry makes every adapter under the run's provider-tools policy: Claude Code and Codex offer
their built-in web search only when the gateway lets provider-side search through."""

import pytest

from omnidr.attempts import AgentContext
from omnidr.harness import HARNESSES

CTX = AgentContext(instruction_path="/input/instruction.txt", video_path="/input/video.mp4", contract_dir="/contract",
                   output_dir="/output", report_dir="/output/report", gateway_url="http://gateway:8080",
                   proxy_url="http://proxy:3128", token="dummy-token", model="test-model",
                   logs_dir="/output/harness-logs")


@pytest.mark.parametrize("name", [n for n, h in HARNESSES.items() if h.make])
def test_every_adapter_is_made_with_or_without_provider_search(name):
    for provider_search in (False, True):
        adapter = HARNESSES[name].make(f"omnidr/{name}:any", "full", [], None, provider_search=provider_search)
        assert adapter.command(CTX)


def test_claude_code_and_codex_offer_their_search_only_when_it_is_let_through():
    def script(name: str, provider_search: bool) -> str:
        adapter = HARNESSES[name].make(f"omnidr/{name}:any", "full", [], None, provider_search=provider_search)
        return adapter.command(CTX)[-1]

    assert "--disallowedTools WebSearch" in script("claude-code", False)
    assert "--disallowedTools" not in script("claude-code", True)
    assert 'web_search="disabled"' in script("codex", False)
    assert 'web_search="live"' in script("codex", True)
