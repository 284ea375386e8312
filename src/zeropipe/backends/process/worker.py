"""The collector / evaluator worker process: entry point, request loop and process setup.

Runs in: collector | evaluator (``worker_main``, ``serve``); driver (``worker_environment``).
The spec, the actor and the answers are ``request_server.py``'s, shared with the Ray backend.

The driver starts ``worker_main(conn, spec)`` with the ``spawn`` start method (docs/design.md,
"Transport") and owns everything around it. The protocol, as the worker sees it::

    worker → Hello                        (protocol version, pid); then it builds its actor
    driver → SnapshotLayout               (once; anything else is a ProtocolError)
    loop:
      driver → CollectRequest | EvalRequest  → worker: load the named snapshot if its version is
                                               not the loaded one, run, → CollectResult | EvalResult
      driver → CollectorStateRequest          → collector: CollectorState (its state, pickled;
                                               asked at a stop; a resumed run's first
                                               CollectRequest carries it back, loaded first)
      driver → Shutdown                       → worker: Bye, close, exit 0
      driver closes the pipe (DriverGone)     → worker: close, exit 0 quietly
      driver dies, even mid-request           → worker: killed (parent_watch.py)
      any exception                           → worker: WorkerError (best effort), close, exit 1

Weights are loaded only between requests, so every result has exactly one ``policy_version``: the
version of the snapshot its request named. The worker never creates or unlinks shared memory; it
only maps snapshot blocks read-only (``SnapshotReader``) and unmaps them on exit.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import traceback
from collections.abc import Iterator, Mapping
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from zeropipe.envs.spec import NonFiniteEnvOutput
from zeropipe.transport import (
    Bye,
    DriverGone,
    Hello,
    Message,
    ParamLayout,
    ProtocolError,
    Shutdown,
    SnapshotLayout,
    SnapshotReader,
    SnapshotRef,
    WorkerEndpoint,
    WorkerError,
)
from zeropipe.workers.parent_watch import die_with_parent
from zeropipe.workers.request_server import (
    REQUEST_TYPES,
    ROLES,
    RequestServer,
    Role,
    WorkerSpec,
    limit_torch_threads,
    needs_reload,
)

__all__ = [
    "ROLES",
    "Role",
    "WorkerSpec",
    "applied_environment",
    "needs_reload",
    "serve",
    "sigint_blocked",
    "worker_environment",
    "worker_main",
]

# Thread-pool sizes read once, when the library loads (numpy's BLAS, OpenMP, MKL, numba).
_THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "NUMBA_NUM_THREADS",
)


def worker_environment(num_threads: int) -> dict[str, str]:
    """Environment variables that cap a worker's native thread pools at ``num_threads``.

    With ``spawn`` the child inherits ``os.environ`` as it is at ``Process.start()``, and numpy's
    BLAS (OpenBLAS/MKL) and OpenMP size their pools from these variables once, when they load —
    which in a spawned child happens while unpickling, before ``worker_main`` runs. So the driver
    must apply them around the start (see :func:`applied_environment`); the worker then also calls
    ``torch.set_num_threads``. Without this, every worker starts one BLAS thread per core and N
    workers oversubscribe the machine.

    Args:
        num_threads: Threads per worker (``async_pipeline.collector_num_cpus`` etc.).

    Returns:
        Variable name → value, to set in ``os.environ`` before ``Process.start()``.
    """
    return {name: str(num_threads) for name in _THREAD_ENV_VARS}


@contextlib.contextmanager
def applied_environment(variables: dict[str, str]) -> Iterator[None]:
    """Sets ``variables`` in ``os.environ`` for the block, then restores the previous values.

    Use it around ``Process.start()`` only: the environment is process-wide, and the driver's own
    thread pools were sized long before.
    """
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def sigint_blocked() -> Iterator[None]:
    """Blocks SIGINT in the calling thread for the block: wrap ``Process.start()`` in it.

    A terminal's Ctrl-C reaches the whole process group, and a spawned worker spends its first
    second importing numpy and torch before ``worker_main`` can ignore SIGINT: a Ctrl-C then
    ended it with a KeyboardInterrupt traceback. A child inherits its parent thread's signal
    mask through ``exec``, so it starts with SIGINT blocked; ``worker_main`` ignores it and
    unblocks it (as multiprocessing's resource tracker does). A SIGINT that reaches the driver
    meanwhile is delivered when the block ends, or to one of its other threads: none is lost.
    """
    if not hasattr(signal, "pthread_sigmask"):  # no signal masks here (Windows)
        yield
        return
    from multiprocessing import resource_tracker

    # Started by the first spawn otherwise, and its start unblocks SIGINT in this thread.
    resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)  # blocks nest


def worker_main(conn: Connection, spec: WorkerSpec) -> None:
    """Process target of a collector or evaluator worker (start method ``spawn``).

    Dies with the driver (parent_watch.py: even inside an env step that never returns), ignores
    SIGINT (the driver coordinates shutdown: a Ctrl-C reaches the whole process group; it was
    blocked from the spawn on, see `sigint_blocked`), lowers its priority by
    ``async_pipeline.worker_niceness`` (a collector by ``collector_niceness`` more; the kernel
    caps a niceness at 19), caps torch threads, then runs :func:`serve`.

    Args:
        conn: The worker's end of ``multiprocessing.Pipe(duplex=True)``.
        spec: What to build.

    Ends the process (no return): exit code 1 after any failure (a ``WorkerError`` was sent, best
    effort), 0 after ``Shutdown`` or when the driver closed the pipe.
    """
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # blocked since the spawn (`sigint_blocked`)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a pending one is dropped
    pipeline = spec.config["policy"]["async_pipeline"]
    os.nice(pipeline["worker_niceness"] + _own_niceness(spec.role, pipeline))
    limit_torch_threads(spec.num_threads, logging.getLogger(f"zeropipe.{spec.role}"))
    _exit_now(0 if serve(WorkerEndpoint(conn), spec) else 1)


def _own_niceness(role: str, pipeline: dict) -> int:
    """What a worker of `role` adds to ``worker_niceness``: a collector gives way to the
    evaluator and the learner (``collector_niceness``), an evaluator adds nothing."""
    return pipeline["collector_niceness"] if role == "collector" else 0


def _exit_now(code: int) -> None:
    """End the process without the interpreter's teardown.

    Everything the worker owns (envs, snapshot mappings, its pipe) is closed by `serve`; what is
    left is unloading torch, numba and the rest, a few hundred milliseconds that the driver spends
    waiting for the worker to exit at the end of every run.
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def serve(endpoint: WorkerEndpoint, spec: WorkerSpec) -> bool:
    """Runs the worker protocol (module docstring) on ``endpoint`` until shutdown or failure.

    Process-agnostic (no signals, no exit): tests run it on a thread.

    Returns:
        True after ``Shutdown`` or when the driver is gone; False after a failure, which was
        reported to the driver as a ``WorkerError`` when the pipe allowed. The endpoint, the
        snapshot reader and the envs are closed either way.
    """
    logger = logging.getLogger(f"zeropipe.{spec.role}")
    with contextlib.ExitStack() as cleanup:  # released in reverse: envs, reader, pipe
        cleanup.callback(_close_quietly, endpoint, spec, logger)
        try:
            endpoint.send(Hello.for_this_process(spec.worker_id, spec.role))
            # The actor is built before the layout is read (the driver sends it once it has built
            # its learner): its network and envs get ready meanwhile.
            weights = _LayoutLater()
            server = RequestServer(spec, weights.read, logger)
            cleanup.callback(_close_quietly, server, spec, logger)
            weights.reader = SnapshotReader(_expect_layout(endpoint.recv(), spec))
            cleanup.callback(_close_quietly, weights.reader, spec, logger)
            logger.info("%s ready (pid %d)", spec.name, os.getpid())
            _serve_requests(endpoint, server)
        except DriverGone:
            logger.info("%s: the driver closed the pipe; exiting", spec.name)
        except Exception as exc:
            logger.error("%s failed: %s: %s", spec.name, type(exc).__name__, exc)
            _report_failure(endpoint, spec, exc)
            return False
    return True


class _LayoutLater:
    """Reads snapshots through the reader set once the driver's layout has arrived."""

    reader: SnapshotReader | None = None

    def read(self, ref: SnapshotRef) -> Mapping[str, np.ndarray]:
        assert self.reader is not None, "requests come after the layout"
        return self.reader.read(ref)


def _close_quietly(resource: Any, spec: WorkerSpec, logger: logging.Logger) -> None:
    """Closes ``resource``; a failure to close is logged, not raised (we are exiting anyway)."""
    try:
        resource.close()
    except Exception as exc:
        logger.warning("%s: closing %s failed: %s", spec.name, type(resource).__name__, exc)


def _serve_requests(endpoint: WorkerEndpoint, server: RequestServer) -> None:
    """Answers requests until ``Shutdown`` (replies ``Bye``); errors propagate."""
    spec = server.spec
    while True:
        msg = endpoint.recv()
        if isinstance(msg, Shutdown):
            endpoint.send(Bye(spec.worker_id))
            server.logger.info("%s: shutdown requested; exiting", spec.name)
            return
        expected = REQUEST_TYPES[spec.role]
        if not isinstance(msg, expected):
            raise ProtocolError(
                f"{spec.name} got a {msg.TYPE!r} message; {spec.role} workers "
                f"serve {', '.join(repr(t.TYPE) for t in expected)} and 'shutdown' only"
            )
        endpoint.send(server.answer(msg))  # type: ignore[arg-type]


def _expect_layout(msg: Message, spec: WorkerSpec) -> ParamLayout:
    if not isinstance(msg, SnapshotLayout):
        raise ProtocolError(
            f"{spec.name}: the driver's first message must be 'snapshot_layout', got {msg.TYPE!r}"
        )
    return msg.layout


def _report_failure(endpoint: WorkerEndpoint, spec: WorkerSpec, exc: BaseException) -> None:
    """Sends a WorkerError for ``exc``; a pipe that is gone too is not a second failure.

    An env's non-finite output goes without a traceback: its message names the env, the step
    and the field, and where in the worker it was caught says nothing more.
    """
    error = WorkerError(
        worker_id=spec.worker_id,
        role=spec.role,
        message=f"{type(exc).__name__}: {exc}",
        traceback=""
        if isinstance(exc, NonFiniteEnvOutput)
        else "".join(traceback.format_exception(exc)),
    )
    with contextlib.suppress(Exception):
        endpoint.send(error)
