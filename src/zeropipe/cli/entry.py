"""The `zeropipe` console script's entry point (and `python -m zeropipe`'s).

Runs in: the CLI's process, before anything else of the package. Importing the CLI (numpy,
pydantic, yaml, the config models) takes most of a second on a small machine; a Ctrl-C in that
time raised KeyboardInterrupt inside some module's import and Python printed the import's
traceback. Here the import runs under the same rule as the command itself: a Ctrl-C is the
"interrupted" line and exit status 130, never a traceback. This module imports only `sys`.
(The command's first import of torch holds a Ctrl-C instead: cli/held_import.py.)
"""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130  # the CLI's (cli/main.py), kept here so that this module stays light


def main() -> int:
    """Import the CLI and run it; a Ctrl-C during the import exits as the CLI's own would."""
    try:
        from zeropipe.cli.main import main as cli_main
    except KeyboardInterrupt:
        print("\nzeropipe: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return cli_main()
