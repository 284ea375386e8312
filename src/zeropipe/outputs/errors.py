"""Domain errors of a run's outputs: its directory, lock, checkpoints and logs.

Runs in: driver.
"""

from zeropipe.config import ConfigError


class CheckpointError(Exception):
    """A checkpoint could not be written or read; the message names the file."""


class CheckpointDiskFull(CheckpointError):
    """A checkpoint could not be written because its disk is full: the run stops on it (as on a
    full disk under the logs), rather than train on with nothing saved."""


class RunDirExists(ConfigError):
    """A new run was pointed at a directory that already holds a run (see RunDir)."""


class CheckpointRefused(CheckpointError):
    """A checkpoint file would run code to load (it needs more than tensors and plain data)."""


class RunDirLocked(ConfigError):
    """The run directory is held by another live zeropipe process (see run_lock.py)."""


class DiskFull(Exception):
    """A run's log file (`log/metrics.jsonl`, `log/train.log`) could not be written: no space
    left on its device. The message names the file; the run stops, its final checkpoint written
    if there is room for it."""


def disk_full(path: object) -> DiskFull:
    """The error of a write to `path` that found its device full."""
    return DiskFull(f"no space left on device writing {path}: free space, then resume the run")
