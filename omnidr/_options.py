"""Command-line options and spellings that several stages' commands share: the judge, the snapshot, the output
format, and the notice an old spelling prints. Light (click and the standard library only), so that a command's
module loads no stage it does not run."""

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import click

from omnidr.errors import UserError

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


# --- the judge, one spelling for every command ------------------------------------------------------------------

OFFLINE_JUDGE = "offline-baseline"
"""The offline lexical judge (no endpoint, no key): every command's default."""
JUDGE_KEY_ENV = "OMNIDR_JUDGE_API_KEY"
"""Where a NAME@BASE_URL judge's key is read unless --judge-key-env names another variable."""
OPENAI_BASE_URL = "https://api.openai.com/v1"
OPENAI_KEY_ENV = "OPENAI_API_KEY"
JUDGE_SPELLINGS = f"{OFFLINE_JUDGE}, openai/NAME, or NAME@BASE_URL"


@dataclass(frozen=True)
class JudgeSpec:
    """A judge endpoint as spelled on the command line (`--judge`, `--judge-key-env`)."""

    name: str
    base_url: str
    key_env: str


def check_url(url: str, what: str) -> str:
    """An http(s) base URL without its trailing slash, or a UserError naming `what`."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"{what} endpoint {url!r} is not an http(s) URL; write NAME@http://HOST:PORT/v1")
    return url.rstrip("/")


def parse_judge_spec(text: str | None, key_env: str | None = None) -> JudgeSpec | None:
    """`--judge`: None for the offline baseline, else the endpoint (OpenAI-compatible) and where its key is."""
    text = (text or "").strip()
    if text in ("", OFFLINE_JUDGE):
        return None
    if "@" in text:
        name, url = text.split("@", 1)
        if not name:
            raise UserError(f"judge {text!r} has no model name before '@'; write NAME@BASE_URL")
        family, plus, _ = url.partition("+")
        if plus and not url.startswith(("http://", "https://")):
            raise UserError(f"judge endpoint {url!r}: unknown API {family!r} before '+'; use none for a judge")
        return JudgeSpec(name, check_url(url, "judge"), key_env or JUDGE_KEY_ENV)
    provider, _, name = text.partition("/")
    if provider == "openai" and name:
        return JudgeSpec(name, OPENAI_BASE_URL, key_env or OPENAI_KEY_ENV)
    raise UserError(f"unknown judge {text!r}; use {JUDGE_SPELLINGS}")


JUDGE_OPTION = click.option("--judge", default=OFFLINE_JUDGE, show_default=True, envvar="OMNIDR_JUDGE",
                            help=f"The judge: {JUDGE_SPELLINGS} (OpenAI-compatible).")
JUDGE_KEY_ENV_OPTION = click.option("--judge-key-env", default=None, metavar="VAR",
                                    help=f"Variable holding the judge key (default: {JUDGE_KEY_ENV}; {OPENAI_KEY_ENV} "
                                         "for openai/NAME).")


# --- old spellings, kept for one release ------------------------------------------------------------------------

def deprecated(old: str, new: str) -> None:
    """The one-line notice on stderr that an old spelling still works, and what replaces it."""
    click.echo(f"warning: {old} is deprecated and goes in the next release; use {new}", err=True)


def snapshot_given(option, positional, command: str):
    """`--snapshot`, the one spelling of the snapshot for every command that takes one besides its subject; the
    positional SNAPSHOT that `eval` and `calibrate` took before is kept for one release with a notice."""
    if positional is None:
        return option
    if option is not None and option != positional:
        raise UserError(f"two snapshots given ({positional} and --snapshot {option}); pass one, with --snapshot")
    deprecated(f"the positional SNAPSHOT of `omnidr {command}`", f"--snapshot {positional}")
    return positional


TABLE_FORMATS = ("terminal", "markdown", "json")
"""How a command prints its tables: fitted to the terminal, as Markdown, or as JSON."""


def format_option(what: str = "the tables", note: str = "", legacy_json: bool = False) -> Callable:
    """`--format terminal|markdown|json` (the command receives `fmt`). With `legacy_json`, also the `--json` flag the
    command had, kept for one release (hidden, with a notice): the command receives `as_json` too, and
    `output_format(fmt, as_json)` reconciles them."""
    def decorate(f):
        if legacy_json:
            f = click.option("--json", "as_json", is_flag=True, hidden=True, help="Deprecated: --format json.")(f)
        return click.option("--format", "fmt", type=click.Choice(TABLE_FORMATS), default="terminal", show_default=True,
                            help=f"How {what} print: fitted to the terminal, Markdown, or JSON"
                                 + (f"; {note}" if note else "") + ".")(f)
    return decorate


def output_format(fmt: str, as_json: bool) -> str:
    if as_json:
        deprecated("--json", "--format json")
        return "json"
    return fmt
