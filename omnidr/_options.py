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


def host_options(f):
    """`--max-starts` and `--stall-timeout`, on every command that takes `--parallel` (see omnidr.attempts'
    admission control): the host's start slots and the stall timeout, per invocation."""
    f = click.option("--stall-timeout", "stall_timeout_s", type=click.FloatRange(min=0.1), default=900.0,
                     show_default=True, help="Seconds without a model request, a proxy request or a change under "
                     "/output after which an attempt is ended as stalled (retried like a timeout).")(f)
    return click.option("--max-starts", type=click.IntRange(min=1), default=None,
                        help="Attempts that start their sandbox at once (default: 2 per core); the others wait for "
                             "a slot, so any --parallel is safe.")(f)
