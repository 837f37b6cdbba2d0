"""Errors that end a command with a one-line message instead of a traceback."""


class UserError(Exception):
    """A mistake in the user's input (missing file, bad snapshot, wrong option).

    The CLI prints the message alone and exits with code 2; the message says what is
    wrong and what to do about it.
    """

    exit_code = 2
