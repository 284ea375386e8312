"""The async segment pipeline: one driver coroutine, collector and evaluator workers beside it.

Runs in: driver (one asyncio event loop; uvloop when the CLI picks it). The driver owns the learner
and the replay buffer and is their only mutator (docs/design.md, 'Processes and ownership'). Its
loop follows the reference driver rule by rule (LightZero's `_run_async_driver`; docs/async.md):
collect results → push + evict → one train budget per collect; learner steps in chunks of
`max_train_chunk_steps`, yielding to messages between steps; snapshots published by the weight-sync
rule; backpressure on the budget queue only once the buffer is trainable; evaluation of immutable
snapshots every `eval_freq` iterations. The workers and the published weights are the configured
backend's (backends/base.py: processes + shared memory, or Ray actors + Ray's object store).

`train_async(cfg)` is a plain coroutine: it runs inside any running loop, never calls
`asyncio.run`, never sets a loop policy, and on cancellation keeps its idle collectors' states
(as a limit stop does; at most `shutdown_timeout_s`, and a second Ctrl-C ends that wait), writes
the final checkpoint (before waiting for the workers, so a second Ctrl-C during that wait cannot
skip it), stops its workers and frees its published weights (shared memory, Ray objects) before
re-raising. Its heavy work runs on one dedicated thread that it awaits (heavy_thread.py), so the
loop it shares stays responsive; `zeropipe.start` (embed.py) wraps it with an event stream, a
status and an optional status endpoint.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

# tensorboardX and torch._dynamo are imported with this module, not at first use: building the
# learner imports torch._dynamo (the torch.optim constructor does, pulling sympy: ~2 s) and the run
# directory imports tensorboardX. On the heavy thread those imports held the GIL in stretches of
# 80-300 ms while the host's loop waited; here the embedder pays them at import time.
import tensorboardX  # noqa: F401
import torch
import torch._dynamo

from zeropipe.backends.base import WeightStore, WorkerBackend
from zeropipe.backends.factory import check_async_options, open_backend
from zeropipe.config import ExperimentConfig
from zeropipe.outputs.errors import CheckpointError
from zeropipe.outputs.events import StopReason
from zeropipe.outputs.progress import ProgressLine
from zeropipe.outputs.status import RunMonitor
from zeropipe.pipeline.async_loop import AsyncRun
from zeropipe.pipeline.heavy_thread import HeavyThread
from zeropipe.pipeline.run_state import RunState, RunSummary
from zeropipe.pipeline.runner import close_run, finish_training, open_run
from zeropipe.pipeline.schedule import learner_threads
from zeropipe.transport import ParamLayout

if TYPE_CHECKING:
    from zeropipe.backends.process.early import EarlyWorkers

__all__ = ["check_async_options", "run_labels", "train_async", "worker_states"]

log = logging.getLogger("zeropipe.driver")


async def train_async(
    cfg: ExperimentConfig,
    *,
    show_progress: bool = True,
    resume: bool = False,
    monitor: RunMonitor | None = None,
    init_weights: Mapping[str, torch.Tensor] | None = None,
    early_workers: EarlyWorkers | None = None,
) -> RunSummary:
    """Train with the async pipeline until a stop rule fires or the task is cancelled.

    Args:
        cfg: the experiment config (its `policy.async_pipeline` section is used).
        show_progress: draw the live progress line on stderr.
        resume: continue from `<exp_name>/ckpt/ckpt_latest.pth.tar`.
        monitor: receives every run event as it is written, and the worker states
            (`zeropipe.start` passes one; see embed.py).
        init_weights: a new run's network starts from these weights (`--init-from`).
        early_workers: worker processes started before this call (the CLI's,
            backends/process/early.py): the process backend adopts those it would have started;
            the caller kills the rest.

    Returns:
        How the run ended.

    Raises:
        ConfigError: async settings that cannot be honoured here (see check_async_options).
        WorkerFailed: a worker reported an error, or died more often than it may be restarted.
        RunDirExists: a new run was pointed at an existing run's directory.
        CheckpointError: the final checkpoint could not be written (raised after the `stop` line
            and a full cleanup, after a cancellation too), or `resume` found no readable
            checkpoint.
        asyncio.CancelledError: re-raised after a clean shutdown when the task was cancelled
            (and the final checkpoint was written).
    """
    check_async_options(cfg)
    if monitor is not None:
        monitor.board.info = run_labels(cfg, "async")
    threads = learner_threads(cfg, busy_cpus=None)
    torch.set_num_threads(threads)
    heavy = HeavyThread(threads)
    listeners = [monitor.bus.publish] if monitor is not None else []
    try:
        # Building the learner (and reading a checkpoint) is heavy work too.
        (state, _), cancelled = await heavy.settle(
            functools.partial(open_run, init_weights=init_weights, own_workers=_workers(cfg)),
            cfg,
            resume,
            listeners,
        )
        return await _drive(cfg, state, heavy, cancelled, show_progress, monitor, early_workers)
    finally:
        heavy.close()


async def _drive(
    cfg: ExperimentConfig,
    state: RunState,
    heavy: HeavyThread,
    cancelled: bool,
    show_progress: bool,
    monitor: RunMonitor | None,
    early: EarlyWorkers | None,
) -> RunSummary:
    """Start the workers, run the loop, and on any exit: final checkpoint, shutdown, stop line."""
    ap = cfg.policy.async_pipeline
    progress: ProgressLine | None = None
    if show_progress:
        progress = ProgressLine(cfg.max_env_step, best_eval=state.evals.best_reward)
    layout = ParamLayout.from_state_dict(state.trainer.learner.network.state_dict())
    inbox: asyncio.Queue = asyncio.Queue()
    pool, publisher = open_backend(cfg, layout, inbox, early)
    if monitor is not None:
        monitor.board.worker_states = lambda: worker_states(pool)
    driver = AsyncRun(cfg, state, pool, publisher, inbox, progress, heavy)
    patient = True  # False after a 2nd interrupt: the workers are then killed without a wait
    try:
        if cancelled:
            raise asyncio.CancelledError  # arrived while the run was being built
        await pool.start()
        await driver.loop()
        await driver.keep_collector_states()  # a stop rule ended the loop: no collect is lost
    except (asyncio.CancelledError, KeyboardInterrupt):
        # A Ctrl-C raised inside the driver's own code (a process started with SIGINT ignored
        # has no Runner handler, so Python's default raises it wherever the main thread is) is
        # the same stop as the cancellation the Runner would have made of it.
        cancelled = True
        patient = await _keep_states_unless_interrupted(driver)
        raise
    except Exception as exc:
        state.fail(exc)
        raise
    finally:
        # On the heavy thread, behind any job a cancellation abandoned (and after the collectors'
        # states arrived); a 2nd Ctrl-C cannot skip it.
        ckpt_error, late_cancel = await heavy.settle(_final_checkpoint, state, cancelled)
        try:
            await _shutdown(pool, publisher, ap.shutdown_timeout_s if patient else 0.0)
        finally:
            summary = close_run(state, progress)
        if ckpt_error is not None:  # after a cancellation too: the run ends on this error
            raise ckpt_error
    if late_cancel:
        raise asyncio.CancelledError
    return summary


def _workers(cfg: ExperimentConfig) -> int:
    """The run's collector and evaluator workers (on a Ray cluster some may run elsewhere;
    counting them all errs toward the learner's threads)."""
    ap = cfg.policy.async_pipeline
    return ap.num_collector_actors + ap.num_evaluator_actors


def run_labels(cfg: ExperimentConfig, pipeline: str) -> dict[str, str]:
    """The labels of the status endpoint's run-info metric (the installed package's version:
    the pipeline does not import the package's top: docs/design.md, 'Packages')."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("zeropipe")
    except PackageNotFoundError:  # run from a source tree that was never installed
        installed = "unknown"
    return {
        "type": cfg.policy.type,
        "env": cfg.env.env_id,
        "pipeline": pipeline,
        "version": installed,
    }


async def _keep_states_unless_interrupted(driver: AsyncRun) -> bool:
    """After a Ctrl-C or SIGTERM, the idle collectors' states for the final checkpoint, as a
    limit stop keeps them (`AsyncRun.keep_collector_states`: a collector caught mid-collect
    loses that collect and starts new episodes on resume). Another interrupt meanwhile ends
    the wait at once, keeping the states that arrived.

    Returns:
        False when another interrupt ended the wait (the caller then stops waiting for anything).
    """
    try:
        await driver.keep_collector_states()
    except (asyncio.CancelledError, KeyboardInterrupt):
        log.warning("interrupted again: the collectors' states not yet received are not kept")
        return False
    return True


def _final_checkpoint(state: RunState, cancelled: bool) -> CheckpointError | None:
    if cancelled:
        state.stop_reason = state.stop_reason or StopReason.CANCELLED
    return finish_training(state)


def worker_states(pool: WorkerBackend) -> dict[str, dict[str, Any]]:
    """Each worker's role, state (busy, idle, down), generation and restarts."""
    states = {}
    for w in pool.workers:
        state = "busy" if w.request is not None else "idle" if w.idle else "down"
        states[w.name] = {
            "role": w.role,
            "state": state,
            "generation": w.generation,
            "restarts": w.restarts,
        }
    return states


async def _shutdown(pool: WorkerBackend, publisher: WeightStore, timeout_s: float) -> None:
    """Stop the workers within `timeout_s`, then release every published weights version.

    A second cancellation while waiting falls through to the synchronous kill, so no worker and no
    block outlives the driver on any exit path.
    """
    try:
        await pool.shutdown(timeout_s)
    except BaseException:
        log.warning("shutdown interrupted; killing workers")
        raise
    finally:
        pool.kill_all()
        publisher.close()
