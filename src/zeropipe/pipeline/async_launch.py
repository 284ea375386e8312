"""The async driver's launch rules: collects under backpressure, evals by the gate, snapshots.

Runs in: driver (event-loop thread; copying weights into a snapshot runs on the driver's heavy
thread, awaited). `AsyncRun` (async_loop.py) holds one `Launcher`: what to launch, when, and which
snapshot it gets (weight sync, backpressure, eval: docs/async.md), and the bookkeeping of the
requests in flight, which a reply, a worker's death or its request's deadline (deadline.py) settles.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import pickle
import statistics
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from zeropipe.backends.errors import WorkerFailed
from zeropipe.outputs.events import PublishEvent, StopReason
from zeropipe.pipeline.collect_parts import CollectInParts
from zeropipe.pipeline.deadline import DEADLINE_HISTORY, RequestDeadlines, WorkerHung
from zeropipe.pipeline.run_state import clone_state
from zeropipe.pipeline.schedule import collect_params, should_eval, should_publish
from zeropipe.transport import CollectRequest, EvalRequest, SnapshotRef, TransportError
from zeropipe.workers.collector import CollectOutcome
from zeropipe.workers.request_server import Role

if TYPE_CHECKING:
    from zeropipe.backends.base import WeightStore, WorkerBackend, WorkerHandle
    from zeropipe.config import ExperimentConfig
    from zeropipe.pipeline.heavy_thread import HeavyThread
    from zeropipe.pipeline.run_state import RunState

log = logging.getLogger("zeropipe.driver")
# stops after which no later collect part would be trained on
ENDING_STOPS = (StopReason.STOP_VALUE, StopReason.MAX_TRAIN_ITER, StopReason.ERROR)


@dataclass(frozen=True)
class PendingEval:
    """An eval in flight: the exact weights it scores and the gate state before its launch."""

    snapshot: dict[str, torch.Tensor]
    previous_eval_iter: int  # restored if the eval is lost, so the gate opens again
    envstep: int  # env steps collected when the snapshot was taken: what its eval line is at
    owed_steps: int  # learner steps queued then (budgets not yet trained): the learner's lag
    version: int  # the train_iter of the weights
    final: bool = False  # the final eval (schedule.needs_final_eval): outside the eval gate


class Launcher:
    """Launches of collect and eval requests, the snapshots they name, and their bookkeeping.

    Args:
        cfg: the experiment config.
        state: the run's counters (read; `last_eval_iter` is the eval gate it moves).
        pool: the worker backend requests are submitted to.
        publisher: the weight store snapshots are published to and leased from.
        heavy: the driver's heavy thread (snapshots are copied there).
        on_send_failed: called with the worker and the error when a request cannot be sent
            (the request is forgotten first); the driver restarts the worker.
    """

    def __init__(
        self,
        cfg: ExperimentConfig,
        state: RunState,
        pool: WorkerBackend,
        publisher: WeightStore,
        heavy: HeavyThread,
        on_send_failed: Callable[[WorkerHandle, Exception], None],
    ) -> None:
        self.cfg = cfg
        self.ap = cfg.policy.async_pipeline
        self.state = state
        self.pool = pool
        self.publisher = publisher
        self.heavy = heavy
        self.on_send_failed = on_send_failed
        self.request_ids = itertools.count()
        self.last_published: int | None = None
        self.pending_evals: dict[int, PendingEval] = {}  # request_id -> evaluated weights
        # the grid sync uses too (policy.eval_grid): a due eval's snapshot waits for an evaluator
        self.eval_at_budget_ends = cfg.policy.eval_grid == "budget_end"
        # due evals waiting for an evaluator, each snapshot leased
        self.queued_evals: deque[tuple[SnapshotRef, PendingEval]] = deque()
        self.budgets_seen = state.trainer.completed_budgets
        self.collects: dict[str, CollectInParts] = {}  # collector name -> its collect in flight
        self.collect_s: deque[float] = deque(maxlen=DEADLINE_HISTORY)  # whole collects' walls
        self.publish_s = 0.0  # seconds spent publishing snapshots
        self.deadlines = RequestDeadlines(self.ap)
        self.refresh_steps = self.ap.refresh_steps(cfg.policy.game_segment_length)

    def inflight(self, role: Role) -> int:
        """Requests in flight on the workers of `role`."""
        return sum(1 for w in self.pool.of_role(role) if w.request is not None)

    # ------------------------------------------------------------- launches
    async def launch_collects(self) -> None:
        """Send collect requests to idle collectors while the caps and backpressure allow."""
        state = self.state
        if state.stop_reason or state.envstep >= self.cfg.max_env_step:
            return
        trainer = state.trainer
        cap = self.ap.resolved_max_train_budget_queue_size
        for handle in self.pool.of_role("collector"):
            inflight = self.inflight("collector")
            if inflight >= self.ap.resolved_max_collect_inflight:
                return
            # Backpressure, only once training can consume the budgets. A collect in flight
            # will bring one more budget, so it counts: the queue then never exceeds its cap.
            if len(trainer.budgets) + inflight >= cap and trainer.trainable(state.envstep):
                return
            if self._hold_for_eval_or_freshness():
                return
            if handle.idle and not await self._launch_collect(handle):
                return  # the worker is gone; the next turn tries again

    def _hold_for_eval_or_freshness(self) -> bool:
        """A new collect waits until it is due just in time (`_due_just_in_time`) under
        `collect_freshness: just_in_time`, and under every freshness while an eval runs: then
        the evaluator and the learner get the cores (on a machine with as many cores as they
        are, a collector beside them slowed both, and an eval's result is when a run learns it
        has reached its goal), and the learner still has its owed steps to work through."""
        if self.ap.collect_freshness != "just_in_time" and not self.inflight("evaluator"):
            return False
        return not self._due_just_in_time()

    def _due_just_in_time(self) -> bool:
        """`collect_freshness: just_in_time`: the learner steps still owed would run out within one
        collect (the median of the collectors' recent request durations against the average
        learner step). Due whenever either is not measured yet, or nothing is owed."""
        owed = self.state.trainer.owed_steps()
        step_s = self.state.trainer.stats.step_s
        if not owed or step_s is None or not self.collect_s:
            return True
        return owed * step_s <= statistics.median(self.collect_s)

    async def _launch_collect(self, handle: WorkerHandle) -> bool:
        # the snapshot first: the collect's params and launch are read at its counters
        ref = await self._snapshot_for_collect()
        state = self.state
        params = collect_params(self.cfg, state.train_iter, state.envstep)
        self.collects[handle.name] = CollectInParts(
            state.train_iter, params.temperature, params.epsilon, self.cfg.num_segments
        )
        return await self._send_part(handle, ref)

    async def continue_collect(self, handle: WorkerHandle) -> bool:
        """Send `handle`'s collect on (`collect_part` returned None) with the newest snapshot
        the weight-sync rule allows."""
        return await self._send_part(handle, await self._snapshot_for_collect())

    async def _send_part(self, handle: WorkerHandle, ref: SnapshotRef) -> bool:
        request = self._collect_request(ref, self.collects[handle.name])
        saved = self.state.collectors.restored_workers.pop(handle.name, None)
        if saved is not None:  # its first collect since the resume: on from where it stopped
            request = dataclasses.replace(request, state=pickle.dumps(saved))
        return await self._send(handle, request)

    def _collect_request(self, ref: SnapshotRef, collect: CollectInParts) -> CollectRequest:
        state = self.state
        return CollectRequest(
            next(self.request_ids),
            ref,
            state.train_iter,
            state.envstep,
            collect.temperature,
            collect.epsilon,
            num_segments=collect.segments_left,
            max_steps=self.refresh_steps or 0,
        )

    async def launch_eval(self, final: bool = False) -> None:
        """Launch an eval when the gate says so on the eval grid (or, `final`, of the last
        weights).

        A due eval's snapshot is taken when it is due even while every evaluator is busy (it
        waits in `queued_evals`); the oldest waiting one goes to an idle evaluator. So the
        versions scored are the grid's, as in sync (`policy.eval_grid`).
        """
        if not final:
            await self._queue_due_eval()
            await self._send_queued_eval()
            return
        idle = self._idle_evaluator()
        if idle is not None:
            ref, pending = await self._take_eval(final)
            await self._send_eval(idle, ref, pending)

    def _gate_open(self) -> bool:
        state = self.state
        return should_eval(state.train_iter, state.evals.last_eval_iter, self.cfg.policy.eval_freq)

    def _idle_evaluator(self) -> WorkerHandle | None:
        if self.inflight("evaluator") >= self.ap.max_eval_inflight:
            return None
        return next((w for w in self.pool.of_role("evaluator") if w.idle), None)

    async def _take_eval(self, final: bool) -> tuple[SnapshotRef, PendingEval]:
        """The current weights, cloned and published, to score; a scheduled eval moves the gate."""
        state = self.state
        weights = await self.heavy.run(self._clone_weights)
        owed = state.trainer.owed_steps()
        previous = state.evals.last_eval_iter
        pending = PendingEval(weights, previous, state.envstep, owed, state.train_iter, final)
        if not final:  # as in sync, the final eval does not move the gate
            state.evals.last_eval_iter = state.train_iter
        return await self._publish(force=True, reason="eval"), pending

    async def _send_eval(self, handle: WorkerHandle, ref: SnapshotRef, pending: PendingEval):
        request = EvalRequest(next(self.request_ids), ref, pending.version, pending.envstep)
        self.pending_evals[request.request_id] = pending
        await self._send(handle, request)

    async def _queue_due_eval(self) -> None:
        """Where the gate is due on the grid (any learner step; 'budget_end': a budget end, or
        before any training, as sync's first check), hold the weights' snapshot until an
        evaluator is idle."""
        state = self.state
        on_grid = True
        if self.eval_at_budget_ends:
            completed = state.trainer.completed_budgets
            on_grid = completed != self.budgets_seen or state.train_iter == 0
            self.budgets_seen = completed
        if not on_grid or state.stop_reason or not self._gate_open():
            return
        if len(self.queued_evals) >= self.ap.max_queued_evals:
            log.info("eval due at iter %d waits: the eval queue is full", state.train_iter)
            return  # the gate stays open: the next budget end is due
        ref, pending = await self._take_eval(final=False)
        self.publisher.acquire(ref)  # the queue's lease, returned once sent
        self.queued_evals.append((ref, pending))

    async def _send_queued_eval(self) -> None:
        if self.queued_evals and self.state.stop_reason == StopReason.STOP_VALUE:
            self._drop_queued_evals()  # a version already passed: later ones decide nothing
        if not self.queued_evals:
            return
        idle = self._idle_evaluator()
        if idle is None:
            return
        ref, pending = self.queued_evals.popleft()
        await self._send_eval(idle, ref, pending)
        self.publisher.release(ref)

    def _drop_queued_evals(self) -> None:
        """Forget the evals waiting for an evaluator and return their snapshots' leases."""
        while self.queued_evals:
            self.publisher.release(self.queued_evals.popleft()[0])

    async def _send(self, handle: WorkerHandle, request: CollectRequest | EvalRequest) -> bool:
        """Send a registered request; on failure, forget it and report the worker gone.

        Returns:
            Whether it was sent (False: the worker is being replaced).
        """
        self.publisher.acquire(request.snapshot)
        handle.request = (request.request_id, request.snapshot)
        self.deadlines.start(handle, request.request_id)
        try:
            await self.pool.submit(handle, request)
        except TransportError as exc:
            self.on_send_failed(handle, exc)
            return False
        return True

    # ------------------------------------------------------------- replies
    def finish(self, handle: WorkerHandle, request_id: int) -> None:
        """The worker answered `request_id`: return its lease, the worker is free again.

        Raises:
            WorkerFailed: the worker was not given that request.
        """
        if handle.request is None or handle.request[0] != request_id:
            raise WorkerFailed(f"{handle.name} answered request {request_id} it was not given")
        self.publisher.release(handle.request[1])
        self.deadlines.finish(handle)
        handle.request = None

    def collect_part(
        self, handle: WorkerHandle, part: CollectOutcome
    ) -> tuple[CollectOutcome, dict[str, Any]] | None:
        """A collect request of `handle` came back with `part`.

        Returns:
            The whole collect and its `collect` line's fields, once its segments are done (or
            the run stops learning, so no later part would be trained on); None while the
            collect goes on (call `continue_collect`).
        """
        collect = self.collects[handle.name]
        collect.parts.append(part)
        ending = self.state.stop_reason in ENDING_STOPS
        if collect.segments_left > 0 and not ending:
            return None
        del self.collects[handle.name]
        self.collect_s.append(time.monotonic() - collect.started)
        in_parts = self.refresh_steps is not None
        return collect.merged(), collect.line_fields(in_parts)

    def eval_done(self, request_id: int) -> PendingEval:
        """What a finished eval scored: its exact weights, and whether it was the final eval."""
        return self.pending_evals.pop(request_id)

    def forget(self, handle: WorkerHandle) -> None:
        """The worker is gone: drop its request; a lost eval re-opens the eval gate."""
        if handle.request is None:
            return
        request_id, ref = handle.request
        self.publisher.release(ref)
        self.deadlines.drop(handle)
        self.collects.pop(handle.name, None)  # a collect in parts loses its parts too
        lost = self.pending_evals.pop(request_id, None)
        if lost is not None and self.state.evals.last_eval_iter == lost.version:
            self.state.evals.last_eval_iter = lost.previous_eval_iter  # evaluate again
        handle.request = None

    def hung(self) -> list[tuple[WorkerHandle, WorkerHung]]:
        """The workers whose request ran past its deadline (the driver replaces them)."""
        return self.deadlines.overdue()

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

    def _clone_weights(self) -> dict[str, torch.Tensor]:
        """The learner's weights, copied for an eval (heavy thread)."""
        with self.state.phases.timing("driver"):
            self.state.trainer.learner.check_weights()  # never score non-finite weights
            return clone_state(self.state.trainer.learner.network)

    def _publish_now(self, version: int, reason: str) -> SnapshotRef:
        """Copy the learner's weights into a new snapshot (heavy thread)."""
        start = time.perf_counter()
        ref = self.publisher.publish(version, self.state.trainer.learner.network.state_dict())
        elapsed = time.perf_counter() - start
        self.state.phases.add("driver", elapsed)
        self.publish_s += elapsed
        self.last_published = version
        self.state.run.metrics.emit(
            PublishEvent(
                envstep=self.state.envstep,
                train_iter=version,
                policy_version=version,
                publish_s=elapsed,
                reason=reason,
            )
        )
        return ref
