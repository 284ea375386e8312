"""The sync segment pipeline: collect → push → train the budget → evaluate, in one process.

Runs in: driver. It is the semantic reference for the async pipeline: the same Collector,
Evaluator, Trainer and schedules, one stage after another, and the same runner core (runner.py:
setup, learner step and `train` line, end of the run).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import torch

from zeropipe.config import ExperimentConfig
from zeropipe.outputs.progress import ProgressLine
from zeropipe.pipeline.build import build_collector, build_evaluator
from zeropipe.pipeline.run_state import RunState, RunSummary, clone_state
from zeropipe.pipeline.runner import close_run, finish_training, learner_step, open_run
from zeropipe.pipeline.schedule import collect_params, needs_final_eval, should_eval
from zeropipe.workers.collector import Collector
from zeropipe.workers.evaluator import Evaluator

log = logging.getLogger("zeropipe.driver")


def train_sync(
    cfg: ExperimentConfig,
    resume: bool = False,
    init_weights: Mapping[str, torch.Tensor] | None = None,
    show_progress: bool = True,
) -> RunSummary:
    """Train with the sync pipeline until a stop rule fires.

    Args:
        cfg: the experiment config.
        resume: continue from `<exp_name>/ckpt/ckpt_latest.pth.tar`.
        init_weights: a new run's network starts from these weights (`--init-from`).
        show_progress: draw the progress line on stderr.

    Returns:
        How the run ended. KeyboardInterrupt propagates after the final checkpoint is written
        (where that write failed, the CheckpointError does instead).

    Raises:
        RunDirExists: a new run was pointed at an existing run's directory.
        CheckpointError: the final checkpoint could not be written (after the `stop` line is
            logged and everything is closed), or `resume` found no readable checkpoint.
    """
    state, (collector, evaluator) = open_run(
        cfg,
        resume,
        build_actors=lambda: (build_collector(cfg), build_evaluator(cfg)),
        init_weights=init_weights,
    )
    _continue_collector(state, collector)
    progress = ProgressLine(
        cfg.max_env_step, enabled=show_progress, best_eval=state.evals.best_reward
    )
    try:
        _loop(cfg, state, collector, evaluator, progress)
        _final_eval(state, evaluator, progress)
    except Exception as exc:  # not a Ctrl-C: that one saves
        state.fail(exc)
        raise
    finally:
        ckpt_error = finish_training(state)
        summary = close_run(state, progress)
        collector.close()
        evaluator.close()
        if (
            ckpt_error is not None
        ):  # after a Ctrl-C too: the interrupt is its context, not its cover
            raise ckpt_error
    return summary


def _continue_collector(state: RunState, collector: Collector) -> None:
    """Checkpoint the collector with the run; on resume, continue its episodes where they were
    (envs whose state cannot be captured start new ones, as before this was saved)."""
    state.collectors.capture = collector.state_dict
    if state.collectors.restored is not None:
        collector.load_state_dict(state.collectors.restored)
        state.collectors.restored = None
    elif state.train_iter or state.envstep:
        log.info("resumed without the collector's episodes: the envs start new ones")


def _loop(cfg, state: RunState, collector: Collector, evaluator: Evaluator, progress) -> None:
    learner = state.trainer.learner
    if state.trainer.budgets:  # owed by the checkpoint resumed (a stop inside a budget)
        _train_budgets(state, evaluator, progress)  # first, as the run never stopped did
        state.check_limits()
    while not state.stop_reason:
        if should_eval(state.train_iter, state.evals.last_eval_iter, cfg.policy.eval_freq):
            _evaluate(state, evaluator, progress)
            if state.stop_reason:
                break
        params = collect_params(cfg, state.train_iter, state.envstep)
        with state.phases.timing("collect"):
            collector.load_weights(learner.network.state_dict(), state.train_iter)
            outcome = collector.collect(params.temperature, params.epsilon)
        state.absorb_collect(outcome)
        _train_budgets(state, evaluator, progress)
        state.check_limits()
        state.maybe_checkpoint()
        progress.update(state.envstep, state.train_iter, losses=state.trainer.stats.recent)


def _train_budgets(state: RunState, evaluator: Evaluator, progress: ProgressLine) -> None:
    """Every learner step owed (up to `max_train_iter`); runner.learner_step logs them.

    eval_grid 'learner_step': an eval as soon as one is due, inside the budget, unless the
    env steps are spent (the budgets owed then are trained without evals, as on 'budget_end'
    and async; the final eval scores the last weights). The gate still moves past each eval not
    run, but one of the last weights: a run resumed from the stop evaluates where the run never
    stopped does (that one at once, before it collects, at the same env steps)."""
    cfg = state.cfg
    on_grid = cfg.policy.eval_grid == "learner_step"
    spent = state.envstep >= cfg.max_env_step
    skipped = None  # the last version due an eval that was not run (env steps spent)
    while state.trainer.budgets and state.train_iter < cfg.max_train_iter:
        learner_step(state)
        progress.update(state.envstep, state.train_iter, losses=state.trainer.stats.recent)
        gate = state.evals.last_eval_iter if skipped is None else skipped
        if not (on_grid and should_eval(state.train_iter, gate, cfg.policy.eval_freq)):
            continue
        if spent:  # the checkpointed gate lags one skipped eval, until the last weights
            state.evals.last_eval_iter, skipped = gate, state.train_iter
            continue
        _evaluate(state, evaluator, progress)
        if state.stop_reason:
            return
    if skipped is not None and skipped < state.train_iter:
        state.evals.last_eval_iter = skipped


def _evaluate(
    state: RunState, evaluator: Evaluator, progress: ProgressLine, gate: bool = True
) -> None:
    """Score the current weights; `gate`: a scheduled eval, which the eval schedule counts."""
    with state.phases.timing("eval"):
        state.trainer.learner.check_weights()  # never score (or save as best) non-finite weights
        snapshot = clone_state(state.trainer.learner.network)
        evaluator.load_weights(snapshot, state.train_iter)
        result = evaluator.evaluate(progress=progress.eval_progress)
    if gate:
        state.evals.last_eval_iter = state.train_iter
    state.record_eval(result, snapshot, final=not gate)
    progress.eval_done(result.reward_mean)
    log.info("eval at iter %d: reward_mean %.2f", state.train_iter, result.reward_mean)


def _final_eval(state: RunState, evaluator: Evaluator, progress: ProgressLine) -> None:
    """Score the final weights unless they were scored already (schedule.needs_final_eval)."""
    if needs_final_eval(state.stop_reason, state.evals.last_eval_version, state.train_iter):
        # not counted by the schedule: a run resumed from here evaluates when the same run
        # without the stop would have (resume is the same run)
        _evaluate(state, evaluator, progress, gate=False)
