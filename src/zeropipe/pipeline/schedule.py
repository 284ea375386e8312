"""Schedules shared by both pipelines: eval gate, final eval, collect temperature and epsilon,
weight sync, learner threads (the train budgets' rules are learner/budget.py's).

Runs in: driver. Pure functions of counters, so the sync and async drivers apply the very same
rules (the reference's `_run_async_driver`) and tests can check them as tables.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from zeropipe.algos.collect_schedule import epsilon_at, visit_temperature
from zeropipe.config import ExperimentConfig
from zeropipe.outputs.events import LIMIT_STOPS, StopReason


@dataclass(frozen=True)
class CollectParams:
    """How the next collect acts (the reference's `_collect_kwargs`)."""

    temperature: float  # visit-count temperature of the action choice
    epsilon: float  # probability of a uniform legal action instead


def collect_params(cfg: ExperimentConfig, train_iter: int, envstep: int) -> CollectParams:
    """Temperature (by train_iter) and epsilon (by env step) of the next collect."""
    p = cfg.policy
    e = p.eps
    return CollectParams(
        temperature=visit_temperature(
            p.fixed_temperature_value,
            p.manual_temperature_decay,
            p.threshold_training_steps_for_final_temperature,
            train_iter,
        ),
        epsilon=epsilon_at(
            e.eps_greedy_exploration_in_collect, e.type, e.start, e.end, e.decay, envstep
        ),
    )


def should_eval(train_iter: int, last_eval_iter: int, eval_freq: int) -> bool:
    """Evaluate now? Never twice at one train_iter; else every `eval_freq` iterations.

    The reference gate: False if `train_iter == last_eval_iter`; False if fewer than `eval_freq`
    iterations passed and `train_iter != 0`; True otherwise.
    """
    if train_iter == last_eval_iter:
        return False
    return not (train_iter - last_eval_iter < eval_freq and train_iter != 0)


def needs_final_eval(
    stop_reason: StopReason | None, last_eval_version: int | None, train_iter: int
) -> bool:
    """Score the last weights before the run ends? (Both pipelines apply this one rule.)

    Yes when the run stopped by a limit (`max_env_step`, `max_train_iter`) and no eval of version
    `train_iter` was recorded. Not after `stop_value` (the eval that stopped the run is the last
    word) nor after a cancellation or an error (the run must end now).

    Why the recorded version and not the gate's `last_eval_iter`: the gate moves when an eval is
    *launched*, and in the async pipeline an eval can be lost with its worker; only a recorded
    eval of exactly these weights makes a new one redundant. `last_eval_version` is checkpointed,
    so a resumed run that stops at once does not score the same weights twice (the sync pipeline
    used to, as it keyed on `last_reward`, which a resume does not restore).
    """
    return stop_reason in LIMIT_STOPS and last_eval_version != train_iter


def should_publish(
    current: int, last_published: int | None, weight_sync_interval: int, max_policy_lag: int
) -> bool:
    """Publish a new snapshot of version `current`? (The reference's `_run_async_driver`.)

    Always when nothing was published; when the gap reaches `weight_sync_interval`; else only if
    the lag would exceed a non-negative `max_policy_lag` (a negative lag never forces).
    """
    if last_published is None:
        return True
    gap = current - last_published
    if gap >= max(weight_sync_interval, 1):
        return True
    if max_policy_lag < 0:
        return False
    return gap > max_policy_lag


def learner_threads(cfg: ExperimentConfig, busy_cpus: int | None, most: int | None = None) -> int:
    """Torch threads for the async learner: configured, else the cores the workers leave.

    On a small machine the workers and the learner compete for the same cores, and a learner that
    oversubscribes them slows everyone; but a collector held back by backpressure uses none. So
    with `learner_num_threads` unset the driver asks before every learner step, with `busy_cpus`
    the threads of the workers that have a request in flight (None: every worker's), and `most`
    the run's own choice (threads.choose_threads: one for a model without convolutions).
    """
    if cfg.policy.learner_num_threads is not None:
        return cfg.policy.learner_num_threads
    if busy_cpus is None:
        ap = cfg.policy.async_pipeline
        busy_cpus = ap.num_collector_actors * ap.collector_num_cpus
        busy_cpus += ap.num_evaluator_actors * ap.evaluator_num_cpus
    free = max(1, usable_cores() - busy_cpus)
    return free if most is None else min(free, most)


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
