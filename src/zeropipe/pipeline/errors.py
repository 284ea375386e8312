"""Domain errors of the pipelines.

Runs in: driver.
"""


class WorkerFailed(Exception):
    """A worker reported an error or died too often; the message names the worker."""
