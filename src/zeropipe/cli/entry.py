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


EXIT_TERMINATED = 143


def main() -> int:
    """Import the CLI and run it; a Ctrl-C during the import exits as the CLI's own would.

    A run stopped by Ctrl-C or SIGTERM has been cleaned up when the CLI returns; another one
    while the process exits is ignored. Left to Python, the interpreter's teardown resets SIGINT
    to the system default, and a second Ctrl-C landing there killed the process by signal
    instead of letting it exit 130 (or 143). The CLI's `main` itself leaves the handlers as it
    found them, for callers in the same process."""
    try:
        from zeropipe.cli.main import main as cli_main

        status = cli_main()
    except KeyboardInterrupt:
        print("\nzeropipe: interrupted", file=sys.stderr)
        status = EXIT_INTERRUPTED
    if status in (EXIT_INTERRUPTED, EXIT_TERMINATED):
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return status
