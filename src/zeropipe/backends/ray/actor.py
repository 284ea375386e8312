"""The collector / evaluator as a Ray actor: the `ray` backend's worker side.

Runs in: collector | evaluator (a Ray worker process, on any node of the cluster). The driver side
is `backends/ray/driver.py`. This module imports nothing from Ray at load time: the backend wraps
``RayWorker`` with ``ray.remote`` and its resource options when it creates an actor.

Per request the driver calls ``answer(request, [weights])``: the weights of the version the request
names, as a Ray object reference wrapped in a list so that Ray does *not* fetch it before the call.
The actor fetches it only when that version is not the loaded one (``RequestServer`` decides), so a
collector that keeps one version for many collects reads it once, and on its own node the fetch
maps the object store's copy without copying it. Weights are loaded only between requests, so every
result has exactly one ``policy_version``, as in the process backend.

Failures: an exception while answering becomes a ``WorkerError`` reply (with its traceback), which
ends the run as in the process backend; the death of the actor's process is seen by the driver as
a failed call and the actor is replaced.
"""

from __future__ import annotations

import logging
import os
import signal
import traceback
from collections.abc import Mapping
from typing import Any

import numpy as np

from zeropipe.transport import (
    CollectorState,
    CollectorStateRequest,
    CollectRequest,
    CollectResult,
    EvalRequest,
    EvalResult,
    Hello,
    ProtocolError,
    SnapshotRef,
    WorkerError,
)
from zeropipe.workers.request_server import (
    REQUEST_TYPES,
    RequestServer,
    WorkerSpec,
    limit_torch_threads,
)


class RayWorker:
    """One collector or evaluator, answering the driver's requests one at a time.

    Args:
        spec: What to build (its config carries this start's seed).
    """

    def __init__(self, spec: WorkerSpec) -> None:
        # The driver coordinates shutdown; a Ctrl-C reaching this process must not kill a collect.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        self.spec = spec
        self.logger = logging.getLogger(f"zeropipe.{spec.role}")
        limit_torch_threads(spec.num_threads, self.logger)
        self._weights: list[Any] = []  # the object ref of the current request's version
        self.server = RequestServer(spec, self._read_weights, self.logger)
        self.logger.info("%s ready (pid %d)", spec.name, os.getpid())

    def hello(self) -> tuple[Hello, str]:
        """This worker's hello and the Ray node it runs on (its placement)."""
        import ray

        node_id = ray.get_runtime_context().get_node_id()
        return Hello.for_this_process(self.spec.worker_id, self.spec.role), node_id

    def answer(
        self, request: CollectRequest | EvalRequest | CollectorStateRequest, weights: list[Any]
    ) -> CollectResult | EvalResult | CollectorState | WorkerError:
        """Runs one request; any failure is reported as a ``WorkerError`` reply.

        Args:
            request: The collect, eval or collector-state request.
            weights: ``[object ref]`` of the weights version ``request.snapshot`` names (``[]``
                for a collector-state request, which names none).
        """
        try:
            expected = REQUEST_TYPES[self.spec.role]
            if not isinstance(request, expected):
                raise ProtocolError(
                    f"{self.spec.name} got a {request.TYPE!r} request; {self.spec.role} workers "
                    f"serve {', '.join(repr(t.TYPE) for t in expected)} only"
                )
            self._weights = weights
            return self.server.answer(request)
        except Exception as exc:
            self.logger.error("%s failed: %s: %s", self.spec.name, type(exc).__name__, exc)
            return WorkerError(
                worker_id=self.spec.worker_id,
                role=self.spec.role,
                message=f"{type(exc).__name__}: {exc}",
                traceback="".join(traceback.format_exception(exc)),
            )
        finally:
            self._weights = []  # hold no reference: the driver frees versions no request holds

    def close(self) -> None:
        """Closes the envs (the driver then ends the actor)."""
        self.server.close()

    def _read_weights(self, ref: SnapshotRef) -> Mapping[str, np.ndarray]:
        import ray

        (object_ref,) = self._weights
        arrays = ray.get(object_ref)
        if not isinstance(arrays, Mapping):
            raise ProtocolError(f"weights of {ref} are a {type(arrays).__name__}, not a mapping")
        return arrays
