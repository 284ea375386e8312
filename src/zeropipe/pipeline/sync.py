"""The sync segment pipeline: collect → push → train the budget → evaluate, in one process.

Runs in: driver. It is the semantic reference for the async pipeline: the same Collector,
Evaluator, Trainer and schedules, one stage after another.
"""

from __future__ import annotations

import logging
import time

import torch

from zeropipe.config import ExperimentConfig
from zeropipe.pipeline.build import build_collector, build_driver, build_evaluator
from zeropipe.pipeline.progress import ProgressLine
from zeropipe.pipeline.run_dir import RunDir, check_run_dir, load_latest
from zeropipe.pipeline.run_state import RunState, RunSummary, clone_state
from zeropipe.pipeline.schedule import collect_params, needs_final_eval, should_eval
from zeropipe.pipeline.training import Trainer
from zeropipe.workers.collector import Collector
from zeropipe.workers.evaluator import Evaluator

log = logging.getLogger("zeropipe.driver")


def train_sync(cfg: ExperimentConfig, resume: bool = False) -> RunSummary:
    """Train with the sync pipeline until a stop rule fires.

    Args:
        cfg: the experiment config.
        resume: continue from `<exp_name>/ckpt/ckpt_latest.pth.tar`.

    Returns:
        How the run ended. KeyboardInterrupt propagates after the final checkpoint is written.

    Raises:
        RunDirExists: a new run was pointed at an existing run's directory.
        CheckpointError: the final checkpoint could not be written (after the `stop` line is
            logged and everything is closed), or `resume` found no readable checkpoint.
    """
    check_run_dir(cfg, resume)  # fail before anything is written
    loaded = load_latest(cfg.exp_name) if resume else None
    start = time.monotonic()
    if cfg.policy.learner_num_threads is not None:
        torch.set_num_threads(cfg.policy.learner_num_threads)
    comps = build_driver(cfg)
    trainer = Trainer(comps.learner, comps.buffer, cfg.policy)
    collector = build_collector(cfg)
    evaluator = build_evaluator(cfg)
    run = RunDir(cfg, resume=resume)
    state = RunState(cfg, run, trainer)
    if loaded is not None:
        state.restore_latest(loaded)
        del loaded  # the buffer copy in the payload is not needed any more
    progress = ProgressLine(cfg.max_env_step)
    try:
        _loop(cfg, state, collector, evaluator, progress)
        _final_eval(state, evaluator, progress)
    finally:
        ckpt_error = state.final_checkpoint()
        progress.update(state.envstep, state.train_iter, force=True)
        progress.close()
        summary = state.summary(time.monotonic() - start)
        run.metrics.log("stop", state.envstep, state.train_iter, reason=summary.stop_reason)
        run.close()
        collector.close()
        evaluator.close()
    if ckpt_error is not None:
        raise ckpt_error
    return summary


def _loop(cfg, state: RunState, collector: Collector, evaluator: Evaluator, progress) -> None:
    trainer = state.trainer
    learner = trainer.learner
    while not state.stop_reason:
        if should_eval(state.train_iter, state.last_eval_iter, cfg.policy.eval_freq):
            _evaluate(state, evaluator, progress)
            if state.stop_reason:
                break
        collector.load_weights(learner.network.state_dict(), state.train_iter)
        params = collect_params(cfg, state.train_iter, state.envstep)
        result = collector.collect(params.temperature, params.epsilon)
        state.absorb_collect(
            result.segments,
            result.envstep_delta,
            result.policy_version,
            result.duration_s,
            result.episode_returns,
        )
        _train_budgets(state, progress)
        state.check_limits()
        state.maybe_checkpoint()
        progress.update(state.envstep, state.train_iter)


def _train_budgets(state: RunState, progress: ProgressLine) -> None:
    trainer = state.trainer
    start_iter = state.train_iter
    while trainer.budgets and state.train_iter < state.cfg.max_train_iter:
        trainer.step()
        state.save_periodic()
        progress.update(state.envstep, state.train_iter)
    if state.train_iter > start_iter:
        state.run.metrics.log(
            "train",
            state.envstep,
            state.train_iter,
            **trainer.stats.flush(),
            buffer_transitions=trainer.buffer.num_transitions,
            buffer_bytes_per_transition=trainer.buffer.nbytes() / trainer.buffer.num_transitions,
        )


def _evaluate(state: RunState, evaluator: Evaluator, progress: ProgressLine) -> None:
    snapshot = clone_state(state.trainer.learner.network)
    evaluator.load_weights(snapshot, state.train_iter)
    result = evaluator.evaluate()
    state.last_eval_iter = state.train_iter
    state.record_eval(result, snapshot)
    progress.eval_done(result.reward_mean)
    log.info("eval at iter %d: reward_mean %.2f", state.train_iter, result.reward_mean)


def _final_eval(state: RunState, evaluator: Evaluator, progress: ProgressLine) -> None:
    """Score the final weights unless they were scored already (schedule.needs_final_eval)."""
    if needs_final_eval(state.stop_reason, state.last_eval_version, state.train_iter):
        _evaluate(state, evaluator, progress)
