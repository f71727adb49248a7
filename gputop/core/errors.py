"""Errors that reach the user as one clear line (never a traceback)."""


class GputopError(Exception):
    """A failure the user can act on; the CLI prints ``gputop: <message>`` and exits non-zero."""

    exit_code = 1


class UsageError(GputopError):
    exit_code = 2
