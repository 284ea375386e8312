"""An `env.register_envs` function that only leaves a mark: the file `register_envs_ran` in the
working directory. Runs in: tests (named by a config, `tests.cli.marker_hook:leave_mark`)."""

from __future__ import annotations

import os
from pathlib import Path

MARKER = "register_envs_ran"


def leave_mark() -> None:
    """Append this process's pid to the marker file (the driver and every worker call it)."""
    with Path(MARKER).open("a") as f:
        f.write(f"{os.getpid()}\n")
