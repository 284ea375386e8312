"""The async driver's launch rules: collects under backpressure, evals by the gate, snapshots.

Runs in: driver (event-loop thread; copying weights into a snapshot runs on the driver's heavy
thread, awaited). A mixin of `AsyncRun` (async_loop.py), split out by concept: what to launch,
when, and which snapshot it gets (DESIGN §5: weight sync, backpressure, eval).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from zeropipe.pipeline.backend import WorkerHandle
from zeropipe.pipeline.run_state import clone_state
from zeropipe.pipeline.schedule import should_eval, should_publish
from zeropipe.pipeline.sync import collect_kwargs
from zeropipe.transport import CollectRequest, EvalRequest, SnapshotRef, TransportError

if TYPE_CHECKING:
    from zeropipe.config import AsyncPipelineConfig, ExperimentConfig
    from zeropipe.pipeline.backend import WeightStore, WorkerBackend
    from zeropipe.pipeline.heavy_thread import HeavyThread
    from zeropipe.pipeline.run_state import RunState
    from zeropipe.pipeline.training import Trainer


@dataclass(frozen=True)
class PendingEval:
    """An eval in flight: the exact weights it scores and the gate state before its launch."""

    snapshot: dict[str, torch.Tensor]
    previous_eval_iter: int  # restored if the eval is lost, so the gate opens again


class LaunchRules:
    """Launches of collect and eval requests, and the snapshots they name."""

    cfg: ExperimentConfig
    ap: AsyncPipelineConfig
    state: RunState
    trainer: Trainer
    pool: WorkerBackend
    publisher: WeightStore
    heavy: HeavyThread
    request_ids: itertools.count
    last_published: int | None
    pending_evals: dict[int, PendingEval]
    collect_launch_iter: dict[int, int]
    publish_s: float

    _on_worker_gone: Callable[[WorkerHandle, Exception], None]  # AsyncRun's fault handling

    def _inflight(self, role: str) -> int:
        return sum(1 for w in self.pool.of_role(role) if w.request is not None)

    async def _maybe_launch_collects(self) -> None:
        state = self.state
        if state.stop_reason or state.envstep >= self.cfg.max_env_step:
            return
        cap = self.ap.resolved_max_train_budget_queue_size
        for handle in self.pool.of_role("collector"):
            inflight = self._inflight("collector")
            if inflight >= self.ap.resolved_max_collect_inflight:
                return
            # Backpressure, only once training can consume the budgets. A collect in flight
            # will bring one more budget, so it counts: the queue then never exceeds its cap.
            if len(self.trainer.budgets) + inflight >= cap and self.trainer.trainable(
                state.envstep
            ):
                return
            if handle.idle:
                ref = await self._snapshot_for_collect()
                kwargs = collect_kwargs(self.cfg, state.train_iter, state.envstep)
                rid = await self._send(
                    handle,
                    ref,
                    lambda rid, ref=ref, kw=kwargs: CollectRequest(
                        rid, ref, state.train_iter, state.envstep, kw["temperature"], kw["epsilon"]
                    ),
                    on_register=lambda rid: self.collect_launch_iter.__setitem__(
                        rid, state.train_iter
                    ),
                )
                if rid is None:
                    return  # the worker is gone; the next turn tries again

    async def _maybe_launch_eval(self, final: bool = False) -> None:
        """Launch an eval when the gate says so (or, `final`, of the last weights)."""
        state = self.state
        if self._inflight("evaluator") >= self.ap.max_eval_inflight:
            return
        if not final and (
            state.stop_reason
            or not should_eval(state.train_iter, state.last_eval_iter, self.cfg.policy.eval_freq)
        ):
            return
        idle = [w for w in self.pool.of_role("evaluator") if w.idle]
        if not idle:
            return
        weights = await self.heavy.run(clone_state, self.trainer.learner.network)
        pending = PendingEval(weights, state.last_eval_iter)
        state.last_eval_iter = state.train_iter
        ref = await self._publish(force=True, reason="eval")
        await self._send(
            idle[0],
            ref,
            lambda rid: EvalRequest(rid, ref, state.train_iter, state.envstep),
            on_register=lambda rid: self.pending_evals.__setitem__(rid, pending),
        )

    async def _send(self, handle: WorkerHandle, ref: SnapshotRef, make, on_register) -> int | None:
        """Send a request; all its state is registered first so a failure can undo all of it.

        Returns:
            The request id, or None when the send failed (the worker is being replaced).
        """
        request_id = next(self.request_ids)
        self.publisher.acquire(ref)
        handle.request = (request_id, ref)
        on_register(request_id)
        try:
            await self.pool.submit(handle, make(request_id))
        except TransportError as exc:
            self._on_worker_gone(handle, exc)
            return None
        return request_id

    # ------------------------------------------------------------- snapshots
    async def _snapshot_for_collect(self) -> SnapshotRef:
        ap = self.ap
        due = should_publish(
            self.state.train_iter, self.last_published, ap.weight_sync_interval, ap.max_policy_lag
        )
        return await self._publish(force=due, reason="collect")

    async def _publish(self, force: bool, reason: str) -> SnapshotRef:
        version = self.state.train_iter
        latest = self.publisher.latest
        if latest is not None and (latest.version == version or not force):
            return latest
        return await self.heavy.run(self._publish_now, version, reason)

    def _publish_now(self, version: int, reason: str) -> SnapshotRef:
        """Copy the learner's weights into a new snapshot (heavy thread)."""
        start = time.perf_counter()
        ref = self.publisher.publish(version, self.trainer.learner.network.state_dict())
        elapsed = time.perf_counter() - start
        self.publish_s += elapsed
        self.last_published = version
        self.state.run.metrics.log(
            "publish",
            self.state.envstep,
            version,
            policy_version=version,
            publish_s=elapsed,
            reason=reason,
        )
        return ref
