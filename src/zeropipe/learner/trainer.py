"""The trainer: the queue of train budgets and the learner steps they owe, shared by the sync and
async drivers.

Runs in: driver. One collect earns one `TrainBudget` (budget.py); `Trainer.step()` runs one
learner step from the head budget: sample → learner step → priority and reanalysis write-back,
with buffer reanalysis scheduled as in the reference but without its epoch-0 storm (reanalysis
needs at least one completed budget when scheduled by period) and without its off-by-one period.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Protocol

from zeropipe.algos.targets import PolicyWriteback
from zeropipe.buffer import ReplayBuffer
from zeropipe.config import PolicyConfig
from zeropipe.learner.budget import TrainBudget, is_trainable, reanalyze_interval, reanalyze_period
from zeropipe.learner.learner import Learner, StepResult


class PhaseTimer(Protocol):
    """Where the trainer's seconds are counted (the run's `outputs.phases.PhaseClock`)."""

    def timing(self, phase: str) -> AbstractContextManager[None]:
        """Count the seconds of the `with` block to `phase` ("train" or "driver")."""
        ...


class _Untimed:
    """A timer that counts nothing (a trainer outside a run: tests, benchmarks)."""

    def timing(self, phase: str) -> AbstractContextManager[None]:
        return nullcontext()


RECENT_WEIGHT = 0.1  # of the newest step in TrainStats.recent (about the last 10 steps)


@dataclass
class TrainStats:
    """Running means of learner metrics between two log lines."""

    sums: dict[str, float] = field(default_factory=dict)
    count: int = 0
    busy_s: float = 0.0
    # exponential moving averages of every metric (the console's view; not reset by flush)
    recent: dict[str, float] = field(default_factory=dict)
    step_s: float | None = None  # the same average of a learner step's seconds

    def add(self, metrics: dict[str, float], seconds: float) -> None:
        """Accumulate one step."""
        for key, value in metrics.items():
            self.sums[key] = self.sums.get(key, 0.0) + value
            self.recent[key] = _ema(self.recent.get(key), value)
        self.count += 1
        self.busy_s += seconds
        self.step_s = _ema(self.step_s, seconds)

    def flush(self) -> tuple[dict[str, float], int, float]:
        """The means since the last flush, how many steps they are over, and learner steps per
        busy second; then reset."""
        means = {key: value / max(self.count, 1) for key, value in self.sums.items()}
        per_busy_s = self.count / self.busy_s if self.busy_s > 0 else 0.0
        out = (means, self.count, per_busy_s)
        self.sums, self.count, self.busy_s = {}, 0, 0.0
        return out


def _ema(before: float | None, value: float) -> float:
    """The running average `recent` keeps, after `value` (the first value starts it)."""
    return value if before is None else before + RECENT_WEIGHT * (value - before)


class Trainer:
    """Owns the budget queue and runs learner steps against the buffer.

    Args:
        learner: the learner.
        buffer: the replay buffer (mutated only from here and by pushes, on one thread).
        cfg: policy settings.
        phases: the run's phase clock; a learner step counts to `train`, the sampling, write-back
            and reanalysis around it to `driver`.
    """

    def __init__(
        self,
        learner: Learner,
        buffer: ReplayBuffer,
        cfg: PolicyConfig,
        phases: PhaseTimer | None = None,
    ) -> None:
        self.phases = phases if phases is not None else _Untimed()
        self.learner = learner
        self.buffer = buffer
        self.cfg = cfg
        self.budgets: deque[TrainBudget] = deque()
        self.completed_budgets = 0
        self.reanalyses = 0
        self.stats = TrainStats()
        # Called after each completed budget. The equivalent of UniZero's
        # recompute_pos_emb_diff_and_clear_cache(): caches computed with the old weights go.
        self.budget_hooks: list[Callable[[], None]] = [
            learner.network.clear_caches,
            learner.target_network.clear_caches,
        ]

    def add_budget(self, steps: int, envstep: int) -> bool:
        """Queue the budget earned by one collect, pushed at `envstep` collected env steps.

        A collect after which the buffer is still not trainable earns nothing (the reference's
        sync rule, applied in both pipelines so that they train the same number of steps).
        """
        if steps <= 0 or not self.trainable(envstep):
            return False
        interval = reanalyze_interval(steps, self.cfg.buffer_reanalyze_freq)
        self.budgets.append(TrainBudget(steps=steps, reanalyze_interval=interval))
        return True

    def owed_steps(self) -> int:
        """Learner steps the queued budgets still owe: how far training trails collecting."""
        return sum(budget.steps - budget.progress for budget in self.budgets)

    def trainable(self, envstep: int) -> bool:
        """Enough data and env steps to sample a batch."""
        cfg = self.cfg
        return is_trainable(
            envstep, self.buffer.num_transitions, cfg.train_start_after_envsteps, cfg.batch_size
        )

    def step(self) -> StepResult:
        """One learner step from the head budget; the caller checks there is one."""
        budget = self.budgets[0]
        phases = self.phases
        if budget.reanalyze_interval and budget.progress % budget.reanalyze_interval == 0:
            with phases.timing("driver"):
                self.reanalyze_buffer()
        start = time.perf_counter()
        with phases.timing("driver"):
            batch = self.buffer.sample(self.cfg.batch_size)
        with phases.timing("train"):
            result = self.learner.step(batch)
        with phases.timing("driver"):
            if self.cfg.use_priority:
                self.buffer.update_priorities(batch.indices, result.priorities, batch.make_time)
            if result.writeback is not None and result.writeback.indices.size:
                self._write_back(result.writeback)
        self.stats.add(result.metrics, time.perf_counter() - start)
        budget.progress += 1
        if budget.done:
            self.budgets.popleft()
            self.completed_budgets += 1
            with phases.timing("driver"):
                self._after_budget()
        return result

    def _after_budget(self) -> None:
        for hook in self.budget_hooks:
            hook()
        period = reanalyze_period(self.cfg.buffer_reanalyze_freq)
        if period is not None and self.completed_budgets % period == 0:
            self.reanalyze_buffer()

    def reanalyze_buffer(self) -> bool:
        """Refresh stored policy targets of the oldest segments; False if too little data."""
        cfg = self.cfg
        needed = int(cfg.reanalyze_batch_size / cfg.reanalyze_partition)
        if self.buffer.num_transitions // cfg.num_unroll_steps <= needed:
            return False
        roots = self.buffer.sample_reanalysis(cfg.reanalyze_batch_size, cfg.reanalyze_partition)
        self._write_back(self.learner.targets.reanalyze(roots))
        self.reanalyses += 1
        return True

    def _write_back(self, wb: PolicyWriteback) -> None:
        """Reanalysed targets into the buffer, with the root sampled actions a sampled search
        re-sampled (the targets are over those actions; None for other searches)."""
        self.buffer.write_policy_targets(wb.indices, wb.visits, wb.make_time, wb.sampled_actions)
