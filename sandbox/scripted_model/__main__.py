"""`python -m sandbox.scripted_model --port 9000 [--scripts DIR]`."""

import argparse
from pathlib import Path

from ._server import SCRIPTS_DIR, serve

if __name__ == "__main__":
    p = argparse.ArgumentParser(prog="python -m sandbox.scripted_model")
    p.add_argument("--port", type=int, default=9000)
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--scripts", type=Path, default=SCRIPTS_DIR, help="folder of <task>.json scripts")
    args = p.parse_args()
    serve(args.port, args.scripts, args.host)
