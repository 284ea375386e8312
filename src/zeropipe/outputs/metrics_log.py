"""A run's metrics: one JSON line per event (events.py) in `log/metrics.jsonl`, the same event's
curves in every scalar sink (TensorBoard, and wandb when enabled: scalar_sinks.py), and the event
itself to every listener.

Runs in: driver.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from zeropipe.outputs.errors import DiskFull, disk_full
from zeropipe.outputs.events import RunEvent
from zeropipe.outputs.scalar_sinks import ScalarSink, curve_scalars

log = logging.getLogger("zeropipe.driver")
E = TypeVar("E", bound=RunEvent)


class MetricsLog:
    """Appends one JSON object per event to metrics.jsonl and mirrors its curves to the sinks.

    Each event is then handed to every callable in `listeners` (the status board and the async
    driver's event bus), on the thread that emitted it.

    Args:
        log_dir: the run's `log/` directory.
    """

    def __init__(self, log_dir: Path) -> None:
        self.start = time.monotonic()
        self.time_offset_s = 0.0  # a resumed run's time_s continues from its checkpoint's
        path = log_dir / "metrics.jsonl"
        _drop_a_half_written_line(path)
        # a resumed run's records go on after every record already there (its final stop line
        # comes after its checkpoint's time_s)
        self.last_time_s = _last_time_s(path)
        self.path = path
        self._file = open(path, "a", buffering=1)  # noqa: SIM115
        # A full disk stops the writes (what is left of the line is dropped on resume): the
        # driver reads this between steps and ends the run on it (RunDir.check_writes).
        self.write_error: DiskFull | None = None
        self._sinks: list[ScalarSink] = []
        self.listeners: list[Callable[[RunEvent], None]] = []

    def add_sink(self, sink: ScalarSink) -> None:
        """Also send each event's curves to `sink` (closed with this log)."""
        self._sinks.append(sink)

    def elapsed_s(self) -> float:
        """The run's time so far: this process's, plus that of the runs it resumes."""
        return self.time_offset_s + time.monotonic() - self.start

    def emit(self, event: E) -> E:
        """Write one event's line (its `time_s` stamped now), send its curves to the sinks as
        `event/field`, and hand it to every listener.

        Returns:
            The stamped event, the object every listener got.
        """
        event = dataclasses.replace(event, time_s=round(self.elapsed_s(), 3))
        record = event.record
        self._write(json.dumps(dict(record)) + "\n")
        scalars = curve_scalars(record)
        if scalars:
            for sink in self._sinks:
                sink.add_scalars(scalars, event.envstep)
        for listener in self.listeners:
            listener(event)
        return event

    def _write(self, line: str) -> None:
        if self.write_error is not None:
            return
        try:
            self._file.write(line)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
            self.write_error = disk_full(self.path)

    def close(self) -> None:
        """Flush and close the file and every sink (once)."""
        sinks, self._sinks = self._sinks, []
        for sink in sinks:
            sink.close()
        if not self._file.closed:
            # after a full disk, the flush of the line that did not fit fails again
            with contextlib.suppress(OSError) if self.write_error else contextlib.nullcontext():
                self._file.close()


def _last_time_s(path: Path) -> float:
    """time_s of the file's last whole record; 0 for no file or no readable last line."""
    if not path.exists():
        return 0.0
    with open(path, "rb") as f:
        f.seek(max(0, f.seek(0, os.SEEK_END) - (1 << 16)))
        lines = f.read().splitlines()
    try:
        return float(json.loads(lines[-1])["time_s"]) if lines else 0.0
    except (ValueError, KeyError, TypeError):
        return 0.0


def _drop_a_half_written_line(path: Path) -> None:
    """Cut a resumed run's log back to its last whole line.

    A run killed mid-write, or stopped by a full disk, can leave the first part of a record with
    no newline; appending to it would glue the next record onto it and make one unreadable line.
    The piece is not a record (readers skip it: cli/curves.py), so it is dropped, and said.
    """
    if not path.exists():
        return
    with open(path, "rb+") as f:
        size = f.seek(0, os.SEEK_END)
        tail = b""
        while len(tail) < size and b"\n" not in tail:  # back from the end, 64 KiB at a time
            start = max(0, size - len(tail) - (1 << 16))
            f.seek(start)
            tail = f.read(size - len(tail) - start) + tail
        if not tail or tail.endswith(b"\n"):
            return
        keep = size - len(tail) + tail.rfind(b"\n") + 1
        f.truncate(keep)
    log.warning("%s: dropped a half-written last line (%d bytes)", path, size - keep)
