"""Domain errors of the pipelines.

Runs in: driver.
"""

from zeropipe.config import ConfigError


class WorkerFailed(Exception):
    """A worker reported an error or died too often; the message names the worker."""


class WorkerStartFailed(Exception):
    """A replacement worker did not complete its handshake; counted as one more death."""


class CheckpointError(Exception):
    """A checkpoint could not be written or read; the message names the file."""


class RunDirExists(ConfigError):
    """A new run was pointed at a directory that already holds a run (see RunDir)."""


class CheckpointRefused(CheckpointError):
    """A checkpoint file would run code to load (it needs more than tensors and plain data)."""


class RunDirLocked(ConfigError):
    """The run directory is held by another live zeropipe process (see run_lock.py)."""
