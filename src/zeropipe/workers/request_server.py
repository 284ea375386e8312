"""What every worker runs, whatever carries its messages: the spec, the actor, the answers.

Runs in: collector | evaluator (a worker process, or a Ray actor); driver (``WorkerSpec``).

A ``RequestServer`` owns one role's Collector or Evaluator and answers one request at a time with
it: load the named weights version if it is not the loaded one (only here, between two requests,
so every result has exactly one ``policy_version``), run, and build the reply message. Where the
weights come from is the backend's business: the process backend reads a shared-memory snapshot,
the Ray backend fetches an object from Ray's object store; both hand over name → numpy array.
"""

from __future__ import annotations

import logging
import pickle
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from zeropipe.mcts.compiled import prepare_compiled_search
from zeropipe.transport import (
    CollectorState,
    CollectorStateRequest,
    CollectRequest,
    CollectResult,
    EvalRequest,
    EvalResult,
    Message,
    SnapshotRef,
)
from zeropipe.workers.wire import segment_to_wire

if TYPE_CHECKING:
    from zeropipe.config import AsyncPipelineConfig, ExperimentConfig
    from zeropipe.workers.collector import Collector
    from zeropipe.workers.evaluator import Evaluator

Role = Literal["collector", "evaluator"]
ROLES: tuple[Role, ...] = ("collector", "evaluator")
REQUEST_TYPES: dict[Role, tuple[type[Message], ...]] = {
    "collector": (CollectRequest, CollectorStateRequest),
    "evaluator": (EvalRequest,),
}


def role_threads(pipeline: AsyncPipelineConfig, role: Role) -> int:
    """Torch threads of a worker of ``role`` (``collector_num_cpus`` / ``evaluator_num_cpus``)."""
    return pipeline.collector_num_cpus if role == "collector" else pipeline.evaluator_num_cpus


# Reads the arrays of the snapshot a request names (shared memory, or Ray's object store).
WeightsReader = Callable[[SnapshotRef], Mapping[str, np.ndarray]]


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker needs, as plain picklable data (the ``spawn`` / actor argument).

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
        threads = role_threads(cfg.policy.async_pipeline, role)
        return cls(role, worker_id, cfg.model_dump(mode="json"), threads)

    @property
    def name(self) -> str:
        """``"<role>-<worker_id>"``, the name used in logs and errors."""
        return f"{self.role}-{self.worker_id}"


def needs_reload(loaded_version: int | None, ref: SnapshotRef) -> bool:
    """Whether a request naming ``ref`` must load weights first (None: nothing loaded yet)."""
    return loaded_version is None or loaded_version != ref.version


class RequestServer:
    """Owns the role's Collector or Evaluator and answers requests with it.

    Args:
        spec: What to build.
        read_weights: Reads the arrays of a named snapshot (called only when it must be loaded).
        logger: The role's logger.
    """

    def __init__(
        self, spec: WorkerSpec, read_weights: WeightsReader, logger: logging.Logger
    ) -> None:
        self.spec = spec
        self.read_weights = read_weights
        self.logger = logger
        self.loaded_version: int | None = None
        self.actor: Collector | Evaluator = build_actor(spec)
        if spec.role == "evaluator":
            # off its first eval, which may be the one that ends the run (mcts/compiled.py). Not
            # a collector's: started with the driver (backends/process/early.py), its set-up
            # slowed the driver's own, and its first collect came no sooner (measured:
            # sampled_muzero)
            prepare_compiled_search()

    def answer(
        self, request: CollectRequest | EvalRequest | CollectorStateRequest
    ) -> CollectResult | EvalResult | CollectorState:
        """Loads the request's weights if needed, runs it, and returns the reply."""
        if isinstance(request, CollectorStateRequest):
            return self._state(request)
        start = time.perf_counter()
        if isinstance(request, CollectRequest) and request.state is not None:
            self._continue(request.state)  # before the weights, as the sync pipeline does
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

    def _state(self, request: CollectorStateRequest) -> CollectorState:
        """The collector's state between two collects, pickled (None: it cannot be captured)."""
        state = self.actor.state_dict()  # type: ignore[union-attr]
        data = None if state is None else pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
        return CollectorState(request.request_id, self.spec.worker_id, data)

    def _continue(self, state: bytes) -> None:
        """A resumed run's collector goes on where it stopped. The driver pickled `state` from
        a checkpoint's plain data (read without running code from it)."""
        self.actor.load_state_dict(pickle.loads(state))  # type: ignore[union-attr]
        self.logger.info("%s continues its episodes from the checkpoint", self.spec.name)

    def _collect(self, request: CollectRequest, start: float) -> CollectResult:
        result = self.actor.collect(
            request.temperature,
            request.epsilon,
            request.num_segments or None,
            request.max_steps or None,
        )
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

        arrays = self.read_weights(ref)
        tensors = {
            # from_numpy shares memory; a read-only array (Ray's zero-copy get) is copied first
            k: torch.from_numpy(a if a.flags.writeable else a.copy())
            for k, a in arrays.items()
        }
        self.actor.load_weights(tensors, ref.version)
        self.loaded_version = ref.version
        self.logger.debug("%s loaded snapshot version %d", self.spec.name, ref.version)

    def close(self) -> None:
        """Closes the envs."""
        self.actor.close()


def build_actor(spec: WorkerSpec) -> Collector | Evaluator:
    """The Collector or Evaluator of ``spec``, on the device its ``*_num_gpus`` share asks for."""
    # Deferred: the driver imports this module for WorkerSpec without building anything.
    from zeropipe.config import ExperimentConfig
    from zeropipe.workers.factory import build_collector, build_evaluator

    cfg = ExperimentConfig.model_validate(spec.config)
    build = build_collector if spec.role == "collector" else build_evaluator
    return build(cfg, spec.worker_id, in_worker=True)


def limit_torch_threads(num_threads: int, logger: logging.Logger) -> None:
    """Caps torch's intra-op threads at ``num_threads`` and inter-op threads at 1."""
    import torch

    torch.set_num_threads(num_threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set, or parallel work already ran in this process
        logger.debug("torch inter-op threads were already fixed; keeping them")
