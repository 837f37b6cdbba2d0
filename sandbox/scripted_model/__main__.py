"""`python -m sandbox.scripted_model --port 9000 [--scripts DIR] [--api all|openai|openai-chat|anthropic]`."""

import argparse
from pathlib import Path

from ._server import API_ROUTES, SCRIPTS_DIR, serve

if __name__ == "__main__":
    p = argparse.ArgumentParser(prog="python -m sandbox.scripted_model")
    p.add_argument("--port", type=int, default=9000)
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--scripts", type=Path, default=SCRIPTS_DIR, help="folder of <task>.json scripts")
    p.add_argument("--api", choices=sorted(API_ROUTES), default="all",
                   help="the APIs it speaks: an OpenAI-compatible server (openai; openai-chat without /responses), "
                        "an Anthropic-compatible one, or all three")
    args = p.parse_args()
    serve(args.port, args.scripts, args.host, args.api)
