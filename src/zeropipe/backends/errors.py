"""Domain errors of the pipelines' workers (those of the run directory, checkpoints and logs
are outputs/errors.py's).

Runs in: driver.
"""


class WorkerFailed(Exception):
    """A worker reported an error or died too often; the message names the worker."""


class WorkerStartFailed(Exception):
    """A replacement worker did not complete its handshake; counted as one more death."""
