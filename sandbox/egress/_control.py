"""The control protocol of a reused egress proxy: the host ends one attempt's "generation" (its network.jsonl and
its CA) and opens the next one, without restarting mitmproxy.

Control requests are plain HTTP requests sent through the proxy (as to any web server) to the reserved host
`CONTROL_HOST`, with `Authorization: Bearer <admin token>` (the token is in the proxy's environment variable
named by `--admin-token-env`). The proxy answers them itself, never forwards them, and does not log them; a
request to that host without the right token is answered 403 and logged as blocked (`block_reason:
"control"`). sandbox/egress/README.md describes the exchanges. This module has only the models (no mitmproxy),
so the host can use them.
"""

from pydantic import BaseModel, ConfigDict, Field

CONTROL_HOST = "omnidr-egress.control"
"""Reserved host name of the control requests (`.control` is no top-level domain, so it names no web server)."""

INITIAL_GENERATION = "initial"
"""Id of the generation the proxy starts with: its command line's `--log` and `--ca-out`."""


class OpenGeneration(BaseModel):
    """Body of `POST http://omnidr-egress.control/open`: start a generation (the previous one must be sealed)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    generation: str = Field(min_length=1, description="The host's id of the generation (e.g. the attempt's id).")
    log_path: str = Field(min_length=1, description="network.jsonl of the generation, as the proxy sees it "
                                                    "(folders are created); its `seq` starts again at 1.")
    ca_out: str | None = Field(None, description="Folder the generation's new CA certificate is written to as "
                                                 "egress-ca.pem (modes that intercept TLS); None: not exported.")
    agent_address: str | None = Field(None, description="The only client address served in this generation (the "
                                                        "attempt's agent); None: any client.")


class GenerationOpened(BaseModel):
    """Answer 200 to `open`."""

    generation: str = Field(description="Id of the generation now open.")
    log_path: str = Field(description="Its network.jsonl.")
    ca_sha256: str | None = Field(description="SHA-256 (hex) of the exported egress-ca.pem; None when not "
                                              "exported (no `ca_out`, or a mode that does not intercept TLS).")


class GenerationSealed(BaseModel):
    """Answer 200 to `POST http://omnidr-egress.control/seal`: the generation is over, its log closed."""

    generation: str = Field(description="Id of the generation just sealed.")
    events: int = Field(description="Lines written to its network.jsonl, all of them.")


class ControlState(BaseModel):
    """Answer 200 to `GET http://omnidr-egress.control/state`."""

    generation: str = Field(description="Id of the current (or last sealed) generation.")
    sealed: bool = Field(description="True between `seal` and the next `open`: agent requests are answered 503.")
    events: int = Field(description="Lines written to the generation's network.jsonl so far.")
    ca_sha256: str | None = Field(description="SHA-256 (hex) of the generation's exported CA certificate, if any.")
