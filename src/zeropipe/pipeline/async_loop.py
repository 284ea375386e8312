"""The async driver's loop: message handling, chunked training, faults, stop rules.

Runs in: driver (event-loop thread). The heavy work — learner steps (sample, targets, step,
priority and reanalysis write-back), segment decode and push, evals' best checkpoints, periodic and
`ckpt_latest` checkpoints — runs on the driver's one heavy thread (heavy_thread.py), one job at a
time, each awaited: the loop yields between the learner steps of a chunk, and the buffer and
learner are touched only by the driver (on that thread while a job runs, here between jobs).
Launches, snapshots and the requests in flight: the run's `Launcher` (async_launch.py). Workers
and weights are reached through the backend seam (backends/base.py), so these rules hold for every
backend.

Faults: a worker that dies (or whose request cannot be sent) loses its request at once — its
snapshot lease is released, an eval it was running is forgotten and the eval gate re-opens — and
is replaced without blocking the loop (the learner keeps training while the replacement starts).
A worker whose request runs past its deadline (deadline.py) is hung: it is killed and replaced
the same way, its request lost, and the `restart` event says `cause: hung`.
Restarts are limited per worker within `restart_window_s`. The final eval follows the rule both
pipelines share (schedule.needs_final_eval) whenever an evaluator exists: after a limit stop the
run ends only once an eval of version == `train_iter` was recorded.
"""

from __future__ import annotations

import asyncio
import logging
import pickle
from typing import Any

import torch

from zeropipe.backends.base import RestartWindow, WeightStore, WorkerBackend, WorkerHandle
from zeropipe.backends.errors import WorkerFailed, WorkerStartFailed
from zeropipe.config import ExperimentConfig
from zeropipe.outputs.events import BufferEvent, RestartEvent, StopReason
from zeropipe.outputs.progress import ProgressLine
from zeropipe.pipeline.async_launch import Launcher
from zeropipe.pipeline.deadline import WorkerHung
from zeropipe.pipeline.heavy_thread import HeavyThread
from zeropipe.pipeline.run_state import RunState
from zeropipe.pipeline.runner import learner_step
from zeropipe.pipeline.schedule import learner_threads, needs_final_eval
from zeropipe.transport import (
    Bye,
    CollectorState,
    CollectorStateRequest,
    CollectResult,
    EvalResult,
    Message,
    TransportError,
    WorkerError,
)
from zeropipe.workers.collector import CollectOutcome
from zeropipe.workers.evaluator import EvalOutcome
from zeropipe.workers.wire import segments_from_wire

log = logging.getLogger("zeropipe.driver")


def _decoded(worker: str, msg: CollectResult) -> CollectOutcome:
    """A collect reply's outcome, its segments decoded (heavy thread)."""
    return CollectOutcome(
        segments=segments_from_wire(msg.segments, f"collect_result {msg.request_id} from {worker}"),
        envstep_delta=msg.envstep_delta,
        policy_version=msg.policy_version,
        episode_returns=list(msg.episode_returns),
        duration_s=msg.duration_s,
    )


class AsyncRun:
    """State and rules of one async run (docs/async.md)."""

    def __init__(
        self,
        cfg: ExperimentConfig,
        state: RunState,
        pool: WorkerBackend,
        publisher: WeightStore,
        inbox: asyncio.Queue,
        progress: ProgressLine | None,
        heavy: HeavyThread,
    ) -> None:
        self.cfg = cfg
        self.ap = cfg.policy.async_pipeline
        self.state = state
        self.trainer = state.trainer
        self.pool = pool
        self.inbox = inbox
        self.progress = progress
        self.heavy = heavy
        self.launcher = Launcher(cfg, state, pool, publisher, heavy, self._on_worker_gone)
        self.restart_windows = {
            w.name: RestartWindow(self.ap.max_restarts_per_window, self.ap.restart_window_s)
            for w in pool.workers
        }
        if self.ap.eval_at_start:
            state.evals.last_eval_iter = -cfg.policy.eval_freq

    # ----------------------------------------------------------------- loop
    async def loop(self) -> None:
        """Run until a stop rule fires."""
        while True:
            await self._handle_messages(timeout_s=0.0)
            for handle, exc in self.launcher.hung():  # after the replies that did arrive
                self._on_worker_gone(handle, exc)
            await self.launcher.launch_eval()
            await self.launcher.launch_collects()
            trained = await self._train_chunk()
            self.state.check_limits()
            await self.heavy.run(self.state.maybe_checkpoint)
            if self._drained() and await self._final_eval_done():
                return
            if self.progress is not None:
                stats = self.trainer.stats
                self.progress.update(self.state.envstep, self.state.train_iter, losses=stats.recent)
            if trained == 0:
                await self._handle_messages(timeout_s=self.ap.poll_interval_s)
            else:
                await asyncio.sleep(0)  # let the pipe readers run between chunks

    async def keep_collector_states(self) -> None:
        """At a stop, the state of every collector with no collect in flight (its envs and the
        steps it holds for its next segments) into `state.collectors.workers` for the final
        checkpoint: a resumed run goes on with them and loses none of those steps.

        A collector with a collect in flight (a Ctrl-C or SIGTERM mid-collect, a stop value) is
        not asked, and its collect is not waited for: that collect's steps are dropped, it
        starts new episodes on resume, and a warning names it. So is one that does not answer
        within `shutdown_timeout_s`. A cancellation of the wait (a second Ctrl-C) ends it at
        once, keeping the states that arrived."""
        asked = await self._ask_states()
        try:
            async with asyncio.timeout(self.ap.shutdown_timeout_s):
                while asked:
                    await self._take_state(asked, *(await self.inbox.get()))
        except TimeoutError:
            names = sorted(h.name for h in asked.values())
            log.warning("no state from %s: they start new episodes on resume", ", ".join(names))

    async def _ask_states(self) -> dict[int, WorkerHandle]:
        """Ask each collector that can answer now for its state; the requests sent, by id."""
        asked: dict[int, WorkerHandle] = {}
        for handle in self.pool.of_role("collector"):
            restored = self.state.collectors.restored_workers.get(handle.name)
            if restored is not None:  # never collected since the resume: it is still that
                self.state.collectors.workers[handle.name] = restored
                continue
            if handle.name in self.launcher.collects:  # sent, or its reply not yet absorbed
                log.warning(
                    "%s was collecting at the stop: that collect's steps are dropped and it "
                    "starts new episodes on resume",
                    handle.name,
                )
                continue
            if not handle.idle:  # being replaced: nothing to ask
                continue
            request = CollectorStateRequest(next(self.launcher.request_ids))
            try:
                await self.pool.submit(handle, request)
            except TransportError:
                continue
            asked[request.request_id] = handle
        return asked

    async def _take_state(
        self, asked: dict[int, WorkerHandle], handle: WorkerHandle, generation: int, msg: Any
    ) -> None:
        """One inbox item while the states are asked for; what is not an answer is dropped
        (the run is over: no collect or eval is in flight)."""
        if generation != handle.generation or all(h is not handle for h in asked.values()):
            return
        if isinstance(msg, CollectorState) and asked.get(msg.request_id) is handle:
            del asked[msg.request_id]
            if msg.state is not None:  # None: an env whose state cannot be captured
                self.state.collectors.workers[handle.name] = pickle.loads(msg.state)
        elif isinstance(msg, WorkerError | Exception):  # failed or gone: no state from it
            text = msg.message if isinstance(msg, WorkerError) else str(msg)
            log.warning(
                "no state from %s (%s): it starts new episodes on resume", handle.name, text
            )
            for request_id in [k for k, h in asked.items() if h is handle]:
                del asked[request_id]

    def _drained(self) -> bool:
        """No more learning will happen: a stop rule fired and the owed budgets are done."""
        state = self.state
        if state.stop_reason in (StopReason.STOP_VALUE, StopReason.MAX_TRAIN_ITER):
            return True
        if state.envstep < self.cfg.max_env_step:
            return False
        # Env steps are spent: finish the owed budgets (as sync does), then stop.
        if self.launcher.inflight("collector"):
            return False
        can_train = self.trainer.budgets and self.trainer.trainable(state.envstep)
        return not can_train

    async def _final_eval_done(self) -> bool:
        """The final eval (schedule.needs_final_eval, as in sync) is done; launch it if due."""
        state = self.state
        if state.stop_reason == StopReason.STOP_VALUE or not self.pool.of_role("evaluator"):
            return True  # nothing left to score, or nothing to score it with
        if self.launcher.pending_evals or self.launcher.queued_evals:
            return False  # wait for the evals due or in flight: one may be of the last weights
        if not needs_final_eval(state.stop_reason, state.evals.last_eval_version, state.train_iter):
            return True
        await self.launcher.launch_eval(final=True)
        return False

    async def _train_chunk(self) -> int:
        trained = 0
        trainer = self.trainer
        while (
            trained < self.ap.max_train_chunk_steps
            and trainer.budgets
            and self.state.train_iter < self.cfg.max_train_iter
            and self.state.stop_reason != StopReason.STOP_VALUE
        ):
            threads = learner_threads(self.cfg, self._busy_cpus(), self.state.threads.threads)
            await self.heavy.run(self._learner_step, threads)
            trained += 1
            await self._handle_messages(timeout_s=0.0)
            await self.launcher.launch_eval()
        return trained

    def _busy_cpus(self) -> int:
        """Threads of the workers that have a request in flight (they compete for the cores)."""
        ap = self.ap
        collecting = self.launcher.inflight("collector") * ap.collector_num_cpus
        return collecting + self.launcher.inflight("evaluator") * ap.evaluator_num_cpus

    def _learner_step(self, threads: int) -> None:
        """One learner step on `threads` torch threads (runner.learner_step: periodic save,
        train line) and the buffer line when due (heavy)."""
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        learner_step(self.state)
        if self.state.train_iter % self.ap.buffer_stats_interval == 0:
            self._log_buffer()

    # ------------------------------------------------------------- messages
    async def _handle_messages(self, timeout_s: float) -> None:
        """Handle every queued message; wait up to `timeout_s` for the first one."""
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancellation that
        # arrives while the inner get() completes, and the driver must always be cancellable.
        try:
            if timeout_s <= 0:
                item = self.inbox.get_nowait()
            else:
                with self.state.phases.timing("wait"):
                    async with asyncio.timeout(timeout_s):
                        item = await self.inbox.get()
        except (asyncio.QueueEmpty, TimeoutError):
            return
        while True:
            await self._dispatch(*item)
            try:
                item = self.inbox.get_nowait()
            except asyncio.QueueEmpty:
                return

    async def _dispatch(
        self, handle: WorkerHandle, generation: int, msg: Message | Exception
    ) -> None:
        if generation != handle.generation:
            log.debug("dropping %s from a replaced %s", type(msg).__name__, handle.name)
            return  # left behind by a process that was already replaced
        if isinstance(msg, CollectResult):
            await self._on_collect(handle, msg)
        elif isinstance(msg, EvalResult):
            await self._on_eval(handle, msg)
        elif isinstance(msg, WorkerError):
            raise WorkerFailed(f"{handle.name} failed: {msg.message}\n{msg.traceback}")
        elif isinstance(msg, TransportError | WorkerStartFailed):
            self._on_worker_gone(handle, msg)
        elif not isinstance(msg, Bye):
            raise WorkerFailed(f"{handle.name} sent an unexpected {type(msg).__name__}")

    async def _on_collect(self, handle: WorkerHandle, msg: CollectResult) -> None:
        self.launcher.finish(handle, msg.request_id)
        handle.busy_s += msg.busy_s
        self.state.phases.add("collect", msg.busy_s)
        part = await self.heavy.run(self._decode, handle.name, msg)
        whole = self.launcher.collect_part(handle, part)
        if whole is None:  # collect_freshness refresh: on with the newest weights
            await self.launcher.continue_collect(handle)
            return
        outcome, fields = whole
        await self.heavy.run(self._absorb, handle.name, handle.busy_s, outcome, fields)

    def _decode(self, worker: str, msg: CollectResult) -> CollectOutcome:
        with self.state.phases.timing("driver"):
            return _decoded(worker, msg)

    def _absorb(
        self, worker: str, busy_s: float, outcome: CollectOutcome, fields: dict[str, Any]
    ) -> None:
        """Push a whole collect and queue its budget (heavy thread)."""
        state = self.state
        busy = busy_s / state.wall_s()
        state.absorb_collect(outcome, worker=worker, worker_busy_fraction=busy, **fields)

    async def _on_eval(self, handle: WorkerHandle, msg: EvalResult) -> None:
        self.launcher.finish(handle, msg.request_id)
        self.state.phases.add("eval", msg.duration_s)
        pending = self.launcher.eval_done(msg.request_id)
        outcome = EvalOutcome(
            reward_mean=msg.reward_mean,
            episode_returns=list(msg.episode_returns),
            policy_version=msg.policy_version,
            stop=msg.reward_mean >= self.cfg.env.stop_value,
            envsteps=0,
            duration_s=msg.duration_s,
        )
        # may save a best; the line is at the snapshot's counters (RunState.record_eval)
        trained_at = (pending.envstep, pending.owed_steps)
        await self.heavy.run(
            self.state.record_eval, outcome, pending.snapshot, pending.final, trained_at
        )
        if self.progress is not None:
            self.progress.eval_done(msg.reward_mean)
        log.info("eval of version %d: reward_mean %.2f", msg.policy_version, msg.reward_mean)

    def _on_worker_gone(self, handle: WorkerHandle, exc: Exception) -> None:
        """Forget the worker's request, then start a replacement (without waiting for it).

        A hung worker (`WorkerHung`) is still running: the backend's restart kills it.

        Raises:
            WorkerFailed: the worker used up its restarts within `restart_window_s`.
        """
        cause = "hung" if isinstance(exc, WorkerHung) else "died"
        self.launcher.forget(handle)
        window = self.restart_windows[handle.name]
        if not window.allow():
            raise WorkerFailed(
                f"{handle.name} died or hung {window.max_restarts + 1} times within "
                f"{window.window_s:.0f}s (policy.async_pipeline.restart_window_s); last: {exc}"
            )
        log.error("%s %s (%s); restarting it", handle.name, cause, exc)
        self.pool.restart(handle)
        self.state.run.metrics.emit(
            RestartEvent(
                envstep=self.state.envstep,
                train_iter=self.state.train_iter,
                worker=handle.name,
                generation=handle.generation,
                seed=handle.seed,
                cause=cause,
                error=str(exc),
            )
        )

    def _log_buffer(self) -> None:
        buffer = self.trainer.buffer
        self.state.run.metrics.emit(
            BufferEvent(
                envstep=self.state.envstep,
                train_iter=self.state.train_iter,
                transitions=buffer.num_transitions,
                segments=buffer.num_segments,
                nbytes=buffer.nbytes(),
                snapshot_publish_s_total=self.launcher.publish_s,
            )
        )
