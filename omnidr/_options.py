"""Command-line options that several stages' commands share (light: click only, so that a command's module loads
no stage it does not run)."""

import click

EVALUATORS = ("docker", "host")
"""Where scores are computed: the evaluator image (default) or this machine (development)."""

EVALUATOR_OPTION = click.option(
    "--evaluator", type=click.Choice(EVALUATORS), envvar="OMNIDR_EVALUATOR", default="docker", show_default=True,
    help="Where scores are computed: docker, the evaluator image (the report's JavaScript in a container with no "
         "network and no judge key, the judge in another); host, this machine (for development; recorded in "
         "evaluation.json).")
