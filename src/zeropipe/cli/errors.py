"""The CLI's input error: a missing or unusable file named on the command line.

Runs in: driver (the CLI process). Configuration mistakes stay `ConfigError`; both exit with 2.
"""

from __future__ import annotations


class InputError(Exception):
    """A path or file given to a command cannot be used (missing, empty, wrong kind).

    The message says which path, what was wrong with it and what to pass instead.
    """
