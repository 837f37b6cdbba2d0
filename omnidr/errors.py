"""Errors that end a command with a one-line message instead of a traceback."""


class UserError(Exception):
    """A mistake in the user's input (missing file, bad snapshot, wrong option).

    The CLI prints the message alone and exits with code 2; the message says what is
    wrong and what to do about it.
    """

    exit_code = 2


class ValidationFailed(Exception):
    """Validation ran and found problems; the CLI prints them and exits with code 1."""

    exit_code = 1

    def __init__(self, lines: list[str]):
        super().__init__(f"{len(lines)} problem(s)")
        self.lines = lines
