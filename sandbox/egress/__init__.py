"""The egress proxy: the agent's only way to the web, built on mitmproxy.

It logs every request to network.jsonl (one `sandbox.models.NetworkEvent` per line) and runs in one of five modes:
`log`, `intercept`, `record`, `replay`, `deny`; a denylist answers 403 in every mode. A reused proxy serves one
attempt after another ("generations", each with its own log and CA) on the host's control requests (`_control`). Run it with
`python -m sandbox.egress --mode MODE ...` (see README.md in this folder). This package imports mitmproxy
only in `_addon` and `_run`, so the host can read the models and corpora without it.
"""

from sandbox.egress._config import AGENT_CA_PATH, CA_FILE, DEFAULT_PORT, EgressConfig, agent_ca_environment
from sandbox.egress._control import (
    CONTROL_HOST,
    ControlState,
    GenerationOpened,
    GenerationSealed,
    OpenGeneration,
)
from sandbox.egress._corpus import CorpusError, CorpusRecorder, ReplayCorpus, page_path, url_key
from sandbox.egress._denylist import Denylist, DenylistError, DenyRule, parse_entry
from sandbox.egress._networks import parse_network

__all__ = [
    "AGENT_CA_PATH",
    "CA_FILE",
    "CONTROL_HOST",
    "ControlState",
    "DEFAULT_PORT",
    "CorpusError",
    "CorpusRecorder",
    "Denylist",
    "DenylistError",
    "DenyRule",
    "EgressConfig",
    "GenerationOpened",
    "GenerationSealed",
    "OpenGeneration",
    "ReplayCorpus",
    "agent_ca_environment",
    "page_path",
    "parse_entry",
    "parse_network",
    "url_key",
]
