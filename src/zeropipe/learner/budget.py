"""Train budgets: the learner steps one collect earns, and when they may run and reanalyse.

Runs in: driver. Pure rules of counters and config (the reference's `_run_async_driver` and its
`update_per_collect` / `replay_ratio`), shared by both pipelines through the `Trainer`, so that
they train the same steps; tests check them as tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from zeropipe.buffer.segment import GameSegment
from zeropipe.config import PolicyConfig


@dataclass
class TrainBudget:
    """Learner steps owed for one collect."""

    steps: int
    reanalyze_interval: int | None
    progress: int = 0

    @property
    def done(self) -> bool:
        """All steps taken."""
        return self.progress >= self.steps


def train_budget(cfg: PolicyConfig, segments: Sequence[GameSegment]) -> int:
    """Learner steps owed for one collect: `update_per_collect`, else replay_ratio × transitions."""
    if cfg.update_per_collect is not None:
        return cfg.update_per_collect
    collected = sum(min(seg.length, cfg.game_segment_length) for seg in segments)
    return int(collected * cfg.replay_ratio)


def reanalyze_interval(budget_steps: int, freq: float) -> int | None:
    """Learner steps between buffer reanalyses inside a budget (freq ≥ 1), never 0.

    Returns None when reanalysis is not scheduled per step (freq < 1 or 0).
    """
    if freq < 1:
        return None
    return max(1, int(budget_steps // freq))


def reanalyze_period(freq: float) -> int | None:
    """Completed budgets between buffer reanalyses for 0 < freq < 1 (None otherwise).

    Uses round(1/freq): the reference's float `1 // freq` is one short (1 // 0.1 == 9.0).
    """
    if not 0 < freq < 1:
        return None
    return max(1, round(1 / freq))


def is_trainable(
    envstep: int, num_transitions: int, train_start_after_envsteps: int, batch_size: int
) -> bool:
    """Training may start: strictly more env steps than the threshold and than a batch of data."""
    return envstep > train_start_after_envsteps and num_transitions > batch_size
