"""What a run knows of its evals: the eval gate's position, the last version scored, the best
and last mean returns.

Runs in: driver. Both pipelines move the gate (`last_eval_iter`: the train_iter of the last
eval launched on the schedule) and read `last_eval_version` for the final-eval rule
(schedule.needs_final_eval); all four are checkpointed, so a resumed run keeps its gate, its best
and its final-eval rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class EvalRecords:
    """The run's eval bookkeeping (see the module docstring)."""

    last_eval_iter: int = 0
    last_eval_version: int | None = None  # policy_version of the last recorded eval
    best_reward: float | None = None
    last_reward: float | None = None  # not checkpointed: the resumed process has scored nothing

    def note(self, reward_mean: float, policy_version: int) -> bool:
        """Record a scored version; whether its mean return is a new best."""
        self.last_reward = reward_mean
        self.last_eval_version = policy_version
        improved = self.best_reward is None or reward_mean > self.best_reward
        if improved:
            self.best_reward = reward_mean
        return improved

    def payload(self) -> dict[str, Any]:
        """The checkpoint's fields."""
        return {
            "last_eval_iter": self.last_eval_iter,
            "last_eval_version": self.last_eval_version,
            "best_reward": self.best_reward,
        }

    def restore(self, payload: dict[str, Any]) -> None:
        """Take the fields a checkpoint saved."""
        self.last_eval_iter = int(payload["last_eval_iter"])
        self.last_eval_version = payload["last_eval_version"]
        self.best_reward = payload["best_reward"]
