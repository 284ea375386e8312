"""The run's plain-text log, `log/train.log`: the driver's log records, as the console shows them.

Runs in: driver. A handler on the `zeropipe` logger is attached when the run directory is opened
and detached when it is closed, so the file holds this run's records only (a resumed run appends
to it). It takes INFO and above, in the console's format; it lowers no logger's level, so it gets
what the `zeropipe` logger passes: INFO under the CLI (`--quiet` too: the CLI silences its console
handler, not the logger), and what an embedding application configured otherwise. Worker
processes log to their own stderr, not here; their failures reach the driver, which logs them.
Each process's records begin with a `start:` line (what runs: new or resumed, type, env,
pipeline, stop rules, pid) and end with a `stop:` line (where, after how long, and why), both
written by the driver (pipeline/runner.py).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import sys
from pathlib import Path

from zeropipe.outputs.errors import DiskFull, disk_full

FORMAT = "%(asctime)s %(name)s %(levelname)s: %(message)s"
# `extra` of the INFO records a console shows under `--quiet` too (what a run continues from)
SHOWN_QUIET = {"shown_quiet": True}
LOGGER = "zeropipe"


class TextLog:
    """`log_dir/train.log` attached to the `zeropipe` logger until `close`.

    Args:
        log_dir: the run's `log/` directory.
    """

    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / "train.log"
        self._handler: _FileHandler | None = _FileHandler(self.path, encoding="utf-8")
        self._handler.setLevel(logging.INFO)
        self._handler.setFormatter(logging.Formatter(FORMAT))
        logging.getLogger(LOGGER).addHandler(self._handler)

    @property
    def write_error(self) -> DiskFull | None:
        """The full disk that stopped the file's writes, if one did."""
        return None if self._handler is None else self._handler.write_error

    def close(self) -> None:
        """Detach and close the file (once; later calls do nothing)."""
        if self._handler is None:
            return
        logging.getLogger(LOGGER).removeHandler(self._handler)
        self._handler.close()
        self._handler = None


class _FileHandler(logging.FileHandler):
    """A FileHandler that a full disk stops quietly (no "--- Logging error ---" traceback per
    record): the first ENOSPC is kept as `write_error`, and the records after it are dropped."""

    write_error: DiskFull | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.write_error is None:
            super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            self.write_error = disk_full(self.baseFilename)
            return
        super().handleError(record)

    def close(self) -> None:
        # after a full disk, the flush of the record that did not fit fails again
        with contextlib.suppress(OSError) if self.write_error else contextlib.nullcontext():
            super().close()
