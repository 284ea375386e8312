"""An `env.register_envs` function that fills the disk under one of the run's log files: after
`ZEROPIPE_TEST_FULL_DISK` = `NAME:N` (e.g. `metrics.jsonl:30`), the N+1-th write to the file named
NAME raises ENOSPC, and so does every write after it. Runs in: tests (named by a config,
`tests.cli.full_disk_hook:fill_disk`), in the CLI's processes."""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path
from typing import Any

from zeropipe.outputs import metrics_log

VARIABLE = "ZEROPIPE_TEST_FULL_DISK"
HOOK = "tests.cli.full_disk_hook:fill_disk"


class _FillingFile:
    """A file whose writes fail with ENOSPC once `room` writes were made."""

    def __init__(self, file: Any, room: int) -> None:
        self._file = file
        self._room = room

    def write(self, data: str) -> int:
        if self._room <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        self._room -= 1
        return self._file.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


def fill_disk() -> None:
    """Wrap the opening of the named log file (metrics_log's and logging's `open`)."""
    spec = os.environ.get(VARIABLE)
    if not spec:
        return
    name, room = spec.split(":")

    def opener(real):
        def open_filling(path, *args, **kwargs):
            file = real(path, *args, **kwargs)
            return _FillingFile(file, int(room)) if Path(path).name == name else file

        return open_filling

    # a module's global shadows the builtin (logging.FileHandler takes `open` from its module)
    metrics_log.open = opener(open)
    logging.open = opener(open)
