"""The scoring stage's user error."""

from omnidr.errors import UserError


class ScoringInputError(UserError, ValueError):
    """Scoring input that does not fit together (unknown atoms or directions, bad parameters, bad files).

    A UserError, so the CLI prints the one-line message and exits with code 2.
    """
