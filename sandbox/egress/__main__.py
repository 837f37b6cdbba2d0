"""`python -m sandbox.egress --mode MODE ...`: run the egress proxy until SIGTERM/SIGINT.

A bad argument, an unusable corpus or denylist, or a port already in use ends with exit code 2 and one
line on stderr. Run with `--help` for the options; `sandbox/egress/README.md` explains the wiring.
"""

import argparse
import ipaddress
import os
import sys
from pathlib import Path

from pydantic import ValidationError

from sandbox.egress._config import CA_FILE, DEFAULT_PORT, EgressConfig
from sandbox.egress._corpus import CorpusError
from sandbox.egress._denylist import Denylist, DenylistError
from sandbox.egress._networks import parse_network

MODES = ("log", "intercept", "record", "replay", "deny")


def _listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "0.0.0.0", value
    try:
        return host.strip("[]") or "0.0.0.0", int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT or PORT, got {value!r}") from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sandbox.egress", description="OmniDR egress proxy (mitmproxy)")
    p.add_argument("--mode", required=True, choices=MODES,
                   help="log: log requests and CONNECT tunnels, no TLS interception; intercept: decrypt HTTPS with "
                        "the run's CA and log full URLs; record: intercept and save answers as a corpus; replay: "
                        "serve a corpus offline, 404 for the rest; deny: refuse everything with 403")
    p.add_argument("--listen", type=_listen, default=("0.0.0.0", DEFAULT_PORT), metavar="HOST:PORT",
                   help=f"where agents reach the proxy (default 0.0.0.0:{DEFAULT_PORT})")
    p.add_argument("--log", type=Path, default=Path("/logs/network.jsonl"), metavar="PATH",
                   help="network.jsonl to append to (default /logs/network.jsonl)")
    p.add_argument("--denylist", action="append", default=[], metavar="ENTRIES",
                   help="comma-separated hosts (subdomains included) or host/path prefixes answered 403; repeatable")
    p.add_argument("--denylist-file", action="append", type=Path, default=[], metavar="PATH",
                   help="file with one denylist entry per line (# starts a comment); repeatable")
    p.add_argument("--inject-header", action="append", default=[], metavar="HOST=HEADER:ENV",
                   help="set HEADER on every request to HOST from environment variable ENV (a search door's key)")
    p.add_argument("--replay-dir", type=Path, metavar="DIR", help="replay: corpus folder (corpus.json + files)")
    p.add_argument("--record-dir", type=Path, metavar="DIR", help="record: corpus folder to write")
    p.add_argument("--ca-out", type=Path, metavar="DIR",
                   help=f"write the run's CA certificate to DIR/{CA_FILE} before listening (for the agent's "
                        "trust store)")
    p.add_argument("--confdir", type=Path, default=Path("/tmp/omnidr-egress"), metavar="DIR",
                   help="mitmproxy's folder with the run's CA and key; a new CA is made if empty "
                        "(default /tmp/omnidr-egress)")
    p.add_argument("--upstream-ca", action="append", type=Path, default=[], metavar="PEM",
                   help="extra CA certificates trusted for upstream HTTPS servers (intercept/record); repeatable")
    p.add_argument("--refuse-net", action="append", default=[], metavar="CIDR",
                   help="never connect to this network (the project's own Docker networks): in log, intercept and "
                        "record, a destination in it, or a name resolving into it, is answered 403; repeatable")
    p.add_argument("--allow-net", action="append", default=[], metavar="CIDR",
                   help="open a range off the public internet on purpose (an internal mirror); without it, loopback, "
                        "link-local, private, shared and multicast destinations are answered 403; repeatable")
    p.add_argument("--allow-endpoint", action="append", default=[], metavar="HOST:PORT",
                   help="reach this host name on this port wherever it resolves (the search door), nothing else of "
                        "its address; repeatable")
    p.add_argument("--agent-address", metavar="IP",
                   help="serve only requests from this client address (the attempt's agent); others get 403")
    p.add_argument("--admin-token-env", metavar="NAME",
                   help="environment variable holding the host's admin token: enables control requests to "
                        "http://omnidr-egress.control (new log and CA per attempt, see README.md)")
    return p


def _client_address(text: str) -> str:
    try:
        return str(ipaddress.ip_address(text.strip()))
    except ValueError:
        raise ValueError(f"--agent-address {text!r}: give an IP address, e.g. 198.18.0.14") from None


def _endpoint(text: str) -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--allow-endpoint {text!r}: give HOST:PORT, e.g. search:8080")
    return host.strip("[]").lower().rstrip("."), int(port)


def _inject(text: str) -> tuple[str, str, str]:
    host, sep, rest = text.partition("=")
    header, sep2, env = rest.partition(":")
    if not (sep and sep2 and host and header and env):
        raise ValueError(f"--inject-header {text!r}: give HOST=HEADER:ENV")
    if not os.environ.get(env):
        raise ValueError(f"--inject-header: environment variable {env} (the value of {header} for {host}) is not set")
    return host.lower(), header, env


def config_from_args(argv: list[str] | None = None) -> EgressConfig:
    """Parse the command line into a checked `EgressConfig`; a problem raises ValueError with one line."""
    args = build_parser().parse_args(argv)
    for path in args.denylist_file + args.upstream_ca:
        if not path.is_file():
            raise ValueError(f"{path} does not exist")
    denylist = Denylist.from_sources(args.denylist, args.denylist_file)
    inject = tuple(_inject(text) for text in args.inject_header)
    refuse_nets = tuple(parse_network(text, "--refuse-net") for text in args.refuse_net)
    allow_nets = tuple(parse_network(text, "--allow-net") for text in args.allow_net)
    allow_endpoints = tuple(_endpoint(text) for text in args.allow_endpoint)
    agent_address = _client_address(args.agent_address) if args.agent_address else None
    if args.admin_token_env is not None and not os.environ.get(args.admin_token_env):
        raise ValueError(f"--admin-token-env: environment variable {args.admin_token_env} (the admin token) is not set")
    try:
        return EgressConfig(
            mode=args.mode, listen_host=args.listen[0], listen_port=args.listen[1], log_path=args.log,
            denylist=tuple(str(rule) for rule in denylist.rules), replay_dir=args.replay_dir,
            record_dir=args.record_dir, ca_out=args.ca_out, confdir=args.confdir, upstream_ca=tuple(args.upstream_ca),
            inject=inject, admin_token_env=args.admin_token_env, refuse_nets=refuse_nets,
            allow_nets=allow_nets, allow_endpoints=allow_endpoints, agent_address=agent_address,
        )
    except ValidationError as exc:
        raise ValueError(exc.errors()[0]["msg"].removeprefix("Value error, ")) from None


def main(argv: list[str] | None = None) -> int:
    try:
        config = config_from_args(argv)
    except (ValueError, DenylistError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from sandbox.egress._run import StartupError, run_proxy  # mitmproxy is imported only here

    try:
        run_proxy(config)
    except (CorpusError, StartupError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. the log or CA folder is not writable
        print(f"error: the egress proxy cannot start: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
