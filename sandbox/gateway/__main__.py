"""`python -m sandbox.gateway --config PATH`: run the model gateway until SIGTERM/SIGINT.

The config path may also come from the environment variable OMNIDR_GATEWAY_CONFIG. A bad config,
an unset key variable or a port already in use ends with exit code 2 and one line on stderr.
"""

import argparse
import asyncio
import os
import sys
from pathlib import Path

from sandbox.gateway._app import serve
from sandbox.gateway._config import ConfigError, load_config

CONFIG_ENV = "OMNIDR_GATEWAY_CONFIG"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.gateway", description="OmniDR model gateway")
    parser.add_argument(
        "--config", type=Path, default=os.environ.get(CONFIG_ENV), help=f"JSON GatewayConfig (default: ${CONFIG_ENV})"
    )
    args = parser.parse_args(argv)
    if args.config is None:
        print(f"error: no gateway config: pass --config PATH or set {CONFIG_ENV}", file=sys.stderr)
        return 2
    try:
        config = load_config(Path(args.config))
        asyncio.run(serve(config))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. the port is taken, or the log folder is not writable
        print(f"error: the gateway cannot start: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
