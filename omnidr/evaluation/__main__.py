"""`python -m omnidr.evaluation score|probe ...`: the evaluator image's entry point (no Docker SDK needed)."""

import sys

import click

from omnidr._console import make_console
from omnidr.errors import UserError

from ._cli import probe, score


@click.group()
def main() -> None:
    """OmniDR evaluator: browser probes, the atomic judge and scoring of run folders."""


main.add_command(score)
main.add_command(probe)

if __name__ == "__main__":
    try:
        main(standalone_mode=True)
    except UserError as exc:
        make_console(stderr=True).print(f"error: {exc}", soft_wrap=True, markup=False)
        sys.exit(exc.exit_code)
