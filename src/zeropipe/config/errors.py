"""The configuration error: what was wrong, where, and what to do, one line per problem.

Runs in: any.
"""

from __future__ import annotations


class ConfigError(Exception):
    """A configuration that cannot be used.

    The message is one line per problem, each naming where it came from (the YAML file or the
    `--set` item), the key and the fix; a file with five bad keys gives five lines at once.
    """

    @property
    def lines(self) -> list[str]:
        """The problems, one per line."""
        return str(self).splitlines() or [""]
