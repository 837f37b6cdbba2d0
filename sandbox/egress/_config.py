"""What one egress proxy process is told to do (from its command line), checked before mitmproxy starts."""

from ipaddress import IPv4Network, IPv6Network
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sandbox.models import ProxyMode

CA_FILE = "egress-ca.pem"
"""Name of the exported CA certificate (PEM, no key) inside the `--ca-out` folder."""

DEFAULT_PORT = 3128

AGENT_CA_PATH = "/etc/omnidr/egress-ca.pem"
"""Where the sandbox mounts the exported CA certificate (read-only) in the agent container."""


def agent_ca_environment(ca_path: str = AGENT_CA_PATH) -> dict[str, str]:
    """Environment variables that make the usual HTTP clients in an agent container trust the run's CA
    (needed when the proxy intercepts HTTPS: `intercept`, `record`, and `replay` of https:// pages).

    The file holds only the run's CA: every HTTPS connection of the agent goes through the proxy, which
    presents certificates signed by it, so no other root is needed (and none is trusted)."""
    return {
        "SSL_CERT_FILE": ca_path,  # OpenSSL's default: Python ssl/urllib/httpx/aiohttp, curl, wget, Ruby, ...
        "REQUESTS_CA_BUNDLE": ca_path,  # Python requests (otherwise certifi's bundle)
        "CURL_CA_BUNDLE": ca_path,  # curl and pycurl
        "NODE_EXTRA_CA_CERTS": ca_path,  # Node.js adds it to its built-in roots (Claude Code, Codex JS, OpenClaw)
        "GIT_SSL_CAINFO": ca_path,  # git over https
        "PIP_CERT": ca_path,  # pip
        "DENO_CERT": ca_path,  # Deno
    }


class EgressConfig(BaseModel):
    """Everything one proxy process needs for one attempt. Frozen: it does not change while the agent runs."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    mode: ProxyMode = Field(description="How traffic is treated: log, intercept, record, replay or deny.")
    listen_host: str = Field("0.0.0.0", description="Address to listen on; all interfaces so the agent can reach it.")
    listen_port: int = Field(DEFAULT_PORT, ge=1, le=65535, description="TCP port agents use as HTTP(S)_PROXY.")
    log_path: Path = Field(description="network.jsonl: one `NetworkEvent` per line, appended and flushed.")
    denylist: tuple[str, ...] = Field((), description="Denied hosts or host/path prefixes (see `Denylist`).")
    replay_dir: Path | None = Field(None, description="`replay`: corpus folder served (corpus.json + page files).")
    record_dir: Path | None = Field(None, description="`record`: corpus folder written (created if missing).")
    ca_out: Path | None = Field(
        None, description=f"Folder the run's CA certificate is written to as `{CA_FILE}` before the proxy listens."
    )
    confdir: Path = Field(
        Path("/tmp/omnidr-egress"),
        description="mitmproxy's own folder: the run's CA with its private key; a fresh CA is made if it has none.",
    )
    upstream_ca: tuple[Path, ...] = Field(
        (), description="PEM files of extra CAs trusted for upstream servers (added to the public ones)."
    )
    inject: tuple[tuple[str, str, str], ...] = Field(
        (), description="(host, header, environment variable): the proxy sets the header on every request to the "
        "host from its own environment (the search door's key), so the key never enters the agent's container.")
    admin_token_env: str | None = Field(
        None, description="Environment variable of the proxy holding the host's admin token for control requests "
        "(see `_control.py`); None: no control requests, the control host is an ordinary host.")
    refuse_nets: tuple[IPv4Network | IPv6Network, ...] = Field(
        (), description="Networks the proxy never connects to (the project's own Docker networks): in log, "
        "intercept and record a destination in one of them, or a name resolving into one, is answered 403, "
        "whatever `allow_nets` says.")
    allow_nets: tuple[IPv4Network | IPv6Network, ...] = Field(
        (), description="Ranges off the public internet the operator opens on purpose (an internal mirror); every "
        "other such address (loopback, link-local, private, shared, multicast, ...) is refused with 403.")
    agent_address: str | None = Field(
        None, description="The only client address whose requests are served (the attempt's agent); any other client "
        "gets 403 `not_the_agent`. None: any client (a standalone proxy). Control requests are checked by token.")
    allow_endpoints: tuple[tuple[str, int], ...] = Field(
        (), description="(host name, port) pairs reachable wherever the name resolves (the search door): that "
        "name and port only, not other ports of its address nor other names of it.")

    @model_validator(mode="after")
    def _check(self) -> "EgressConfig":
        if self.mode == "replay" and self.replay_dir is None:
            raise ValueError("--mode replay needs --replay-dir DIR (a folder with corpus.json)")
        if self.mode == "record" and self.record_dir is None:
            raise ValueError("--mode record needs --record-dir DIR (where the corpus is written)")
        if self.replay_dir is not None and self.mode != "replay":
            raise ValueError("--replay-dir is only used with --mode replay")
        if self.record_dir is not None and self.mode != "record":
            raise ValueError("--record-dir is only used with --mode record")
        if self.inject and self.mode == "log":
            raise ValueError("--inject-header needs a mode that reads requests (intercept, record or replay), not log")
        return self

    @property
    def intercepts_tls(self) -> bool:
        """Whether HTTPS is decrypted with the run's CA (so the agent must trust it for HTTPS to work)."""
        return self.mode in ("intercept", "record", "replay")

    @property
    def offline(self) -> bool:
        """Whether the proxy never opens a connection to the web."""
        return self.mode in ("replay", "deny")
