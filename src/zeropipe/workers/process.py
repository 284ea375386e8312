"""The collector / evaluator worker process: entry point, request loop and process setup.

Runs in: collector | evaluator (``worker_main``, ``serve``); driver (``WorkerSpec``,
``worker_environment``).

The driver starts ``worker_main(conn, spec)`` with the ``spawn`` start method (DESIGN §4) and owns
everything around it. The protocol, as the worker sees it::

    worker → Hello                        (protocol version, pid)
    driver → SnapshotLayout               (once; anything else is a ProtocolError)
    loop:
      driver → CollectRequest | EvalRequest  → worker: load the named snapshot if its version is
                                               not the loaded one, run, → CollectResult | EvalResult
      driver → Shutdown                       → worker: Bye, close, exit 0
      driver closes the pipe (DriverGone)     → worker: close, exit 0 quietly
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
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, Literal

from zeropipe.transport import (
    Bye,
    CollectRequest,
    CollectResult,
    DriverGone,
    EvalRequest,
    EvalResult,
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
from zeropipe.workers.wire import segment_to_wire

if TYPE_CHECKING:
    from zeropipe.config import ExperimentConfig
    from zeropipe.workers.collector import Collector
    from zeropipe.workers.evaluator import Evaluator

Role = Literal["collector", "evaluator"]
ROLES: tuple[Role, ...] = ("collector", "evaluator")
_REQUEST_TYPES: dict[Role, type[Message]] = {"collector": CollectRequest, "evaluator": EvalRequest}

# Thread-pool sizes read once, when the library loads (numpy's BLAS, OpenMP, MKL, numba).
_THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "NUMBA_NUM_THREADS",
)


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker process needs, as plain picklable data (the ``spawn`` argument).

    Attributes:
        role: ``"collector"`` or ``"evaluator"``.
        worker_id: Index of the worker within its role; also its actor id (seeds).
        config: The experiment config as ``cfg.model_dump(mode="json")``.
        num_threads: Torch intra-op threads of the worker.
    """

    role: Role
    worker_id: int
    config: dict[str, Any]
    num_threads: int

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"WorkerSpec.role must be one of {ROLES}, got {self.role!r}")
        if self.num_threads < 1:
            raise ValueError(f"WorkerSpec.num_threads must be >= 1, got {self.num_threads}")

    @classmethod
    def from_config(cls, cfg: ExperimentConfig, role: Role, worker_id: int) -> WorkerSpec:
        """The spec of worker ``worker_id`` of ``role``, with threads from ``async_pipeline``."""
        pipeline = cfg.policy.async_pipeline
        threads = (
            pipeline.collector_num_cpus if role == "collector" else pipeline.evaluator_num_cpus
        )
        return cls(role, worker_id, cfg.model_dump(mode="json"), threads)

    @property
    def name(self) -> str:
        """``"<role>-<worker_id>"``, the name used in logs and errors."""
        return f"{self.role}-{self.worker_id}"


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


def needs_reload(loaded_version: int | None, ref: SnapshotRef) -> bool:
    """Whether a request naming ``ref`` must load weights first (None: nothing loaded yet)."""
    return loaded_version is None or loaded_version != ref.version


def worker_main(conn: Connection, spec: WorkerSpec) -> None:
    """Process target of a collector or evaluator worker (start method ``spawn``).

    Ignores SIGINT (the driver coordinates shutdown: a Ctrl-C reaches the whole process group),
    caps torch threads, then runs :func:`serve`.

    Args:
        conn: The worker's end of ``multiprocessing.Pipe(duplex=True)``.
        spec: What to build.

    Raises:
        SystemExit: With code 1 after any failure (a ``WorkerError`` was sent, best effort).
            Returns normally (exit code 0) after ``Shutdown`` or when the driver closed the pipe.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _limit_torch_threads(spec.num_threads, logging.getLogger(f"zeropipe.{spec.role}"))
    if not serve(WorkerEndpoint(conn), spec):
        raise SystemExit(1)


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
            reader = SnapshotReader(_expect_layout(endpoint.recv(), spec))
            cleanup.callback(_close_quietly, reader, spec, logger)
            server = _RequestServer(spec, reader, logger)
            cleanup.callback(_close_quietly, server, spec, logger)
            logger.info("%s ready (pid %d)", spec.name, os.getpid())
            server.serve(endpoint)
        except DriverGone:
            logger.info("%s: the driver closed the pipe; exiting", spec.name)
        except Exception as exc:
            logger.error("%s failed: %s: %s", spec.name, type(exc).__name__, exc)
            _report_failure(endpoint, spec, exc)
            return False
    return True


def _close_quietly(resource: Any, spec: WorkerSpec, logger: logging.Logger) -> None:
    """Closes ``resource``; a failure to close is logged, not raised (we are exiting anyway)."""
    try:
        resource.close()
    except Exception as exc:
        logger.warning("%s: closing %s failed: %s", spec.name, type(resource).__name__, exc)


class _RequestServer:
    """Owns the role's Collector or Evaluator and answers requests with it."""

    def __init__(self, spec: WorkerSpec, reader: SnapshotReader, logger: logging.Logger) -> None:
        self.spec = spec
        self.reader = reader
        self.logger = logger
        self.loaded_version: int | None = None
        self.actor: Collector | Evaluator = _build_actor(spec)

    def serve(self, endpoint: WorkerEndpoint) -> None:
        """Answers requests until ``Shutdown`` (replies ``Bye``); errors propagate."""
        while True:
            msg = endpoint.recv()
            if isinstance(msg, Shutdown):
                endpoint.send(Bye(self.spec.worker_id))
                self.logger.info("%s: shutdown requested; exiting", self.spec.name)
                return
            expected = _REQUEST_TYPES[self.spec.role]
            if not isinstance(msg, expected):
                raise ProtocolError(
                    f"{self.spec.name} got a {msg.TYPE!r} message; {self.spec.role} workers "
                    f"serve {expected.TYPE!r} and 'shutdown' only"
                )
            endpoint.send(self._answer(msg))

    def _answer(self, request: CollectRequest | EvalRequest) -> CollectResult | EvalResult:
        start = time.perf_counter()
        self._load(request.snapshot)
        if isinstance(request, CollectRequest):
            reply: CollectResult | EvalResult = self._collect(request, start)
        else:
            reply = self._evaluate(request)
        elapsed_s = time.perf_counter() - start
        self.logger.debug(
            "%s: %s %d took %.3f s", self.spec.name, request.TYPE, request.request_id, elapsed_s
        )
        return reply

    def _collect(self, request: CollectRequest, start: float) -> CollectResult:
        result = self.actor.collect(request.temperature, request.epsilon)
        return CollectResult(
            request_id=request.request_id,
            worker_id=self.spec.worker_id,
            policy_version=int(result.policy_version),  # the version _load just loaded
            segments=[segment_to_wire(seg) for seg in result.segments],
            envstep_delta=int(result.envstep_delta),
            episode_returns=[float(r) for r in result.episode_returns],
            duration_s=float(result.duration_s),
            busy_s=time.perf_counter() - start,  # weight load (if any) + collect
        )

    def _evaluate(self, request: EvalRequest) -> EvalResult:
        result = self.actor.evaluate()
        return EvalResult(
            request_id=request.request_id,
            worker_id=self.spec.worker_id,
            policy_version=int(result.policy_version),  # the version _load just loaded
            reward_mean=float(result.reward_mean),
            episode_returns=[float(r) for r in result.episode_returns],
            duration_s=float(result.duration_s),
        )

    def _load(self, ref: SnapshotRef) -> None:
        """Loads snapshot ``ref`` unless it is already loaded: only here, between requests."""
        if not needs_reload(self.loaded_version, ref):
            return
        import torch

        arrays = self.reader.read(ref)  # fresh writable arrays: from_numpy needs no copy
        self.actor.load_weights({k: torch.from_numpy(a) for k, a in arrays.items()}, ref.version)
        self.loaded_version = ref.version
        self.logger.debug("%s loaded snapshot version %d", self.spec.name, ref.version)

    def close(self) -> None:
        """Closes the envs."""
        self.actor.close()


def _build_actor(spec: WorkerSpec) -> Collector | Evaluator:
    # Deferred: the driver imports this module for WorkerSpec without building anything, and
    # pipeline.build imports the learner, which workers only need for its network builder.
    from zeropipe.config import ExperimentConfig
    from zeropipe.pipeline.build import build_collector, build_evaluator

    cfg = ExperimentConfig.model_validate(spec.config)
    build = build_collector if spec.role == "collector" else build_evaluator
    return build(cfg, spec.worker_id, in_worker=True)


def _expect_layout(msg: Message, spec: WorkerSpec) -> ParamLayout:
    if not isinstance(msg, SnapshotLayout):
        raise ProtocolError(
            f"{spec.name}: the driver's first message must be 'snapshot_layout', got {msg.TYPE!r}"
        )
    return msg.layout


def _limit_torch_threads(num_threads: int, logger: logging.Logger) -> None:
    import torch

    torch.set_num_threads(num_threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set, or parallel work already ran in this process
        logger.debug("torch inter-op threads were already fixed; keeping them")


def _report_failure(endpoint: WorkerEndpoint, spec: WorkerSpec, exc: BaseException) -> None:
    """Sends a WorkerError for ``exc``; a pipe that is gone too is not a second failure."""
    error = WorkerError(
        worker_id=spec.worker_id,
        role=spec.role,
        message=f"{type(exc).__name__}: {exc}",
        traceback="".join(traceback.format_exception(exc)),
    )
    with contextlib.suppress(Exception):
        endpoint.send(error)
