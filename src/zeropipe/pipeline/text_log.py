"""The run's plain-text log, `log/train.log`: the driver's log records, as the console shows them.

Runs in: driver. A handler on the `zeropipe` logger is attached when the run directory is opened
and detached when it is closed, so the file holds this run's records only (a resumed run appends
to it). It takes INFO and above, in the console's format; it lowers no logger's level, so it gets
what the `zeropipe` logger passes: INFO under the CLI (`--quiet` too: the CLI silences its console
handler, not the logger), and what an embedding application configured otherwise. Worker
processes log to their own stderr, not here; their failures reach the driver, which logs them.
"""

from __future__ import annotations

import logging
from pathlib import Path

FORMAT = "%(asctime)s %(name)s %(levelname)s: %(message)s"
LOGGER = "zeropipe"


class TextLog:
    """`log_dir/train.log` attached to the `zeropipe` logger until `close`.

    Args:
        log_dir: the run's `log/` directory.
    """

    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / "train.log"
        self._handler: logging.Handler | None = logging.FileHandler(self.path, encoding="utf-8")
        self._handler.setLevel(logging.INFO)
        self._handler.setFormatter(logging.Formatter(FORMAT))
        logging.getLogger(LOGGER).addHandler(self._handler)

    def close(self) -> None:
        """Detach and close the file (once; later calls do nothing)."""
        if self._handler is None:
            return
        logging.getLogger(LOGGER).removeHandler(self._handler)
        self._handler.close()
        self._handler = None
