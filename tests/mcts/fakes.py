"""Hand-checkable models for search tests: a one-step bandit and a two-step trap MDP.

Runs in: any (tests and benchmarks). Each fake is an exact model whose latent is a [B, 1] float
tensor holding the state id, so the best action and the optimal value can be worked out by hand.
"""

from __future__ import annotations

import numpy as np
import torch

from zeropipe.mcts import SearchRoots, StepOutput


def make_roots(
    batch_size: int,
    num_actions: int,
    logits: np.ndarray | None = None,
    action_mask: np.ndarray | None = None,
    value: float = 0.0,
) -> SearchRoots:
    """B identical roots in state 0 with the given [A] logits (uniform if None) and [A] mask."""
    row_logits = np.zeros(num_actions) if logits is None else np.asarray(logits)
    row_mask = np.ones(num_actions, dtype=bool) if action_mask is None else np.asarray(action_mask)
    return SearchRoots(
        latent=torch.zeros(batch_size, 1),
        value=np.full(batch_size, value, dtype=np.float32),
        policy_logits=np.tile(row_logits.astype(np.float32), (batch_size, 1)),
        action_mask=np.tile(row_mask, (batch_size, 1)),
    )


class BanditModel:
    """One-step bandit: from state 0, arm a pays payoffs[a]; every later step is worth 0.

    States: 0 = before the pull, 1 = absorbing afterwards. Values and logits are 0 everywhere.
    """

    def __init__(self, payoffs: list[float]) -> None:
        self.payoffs = np.asarray(payoffs, dtype=np.float32)  # [A]
        self.calls = 0

    def __call__(self, latent: torch.Tensor, actions: np.ndarray) -> StepOutput:
        """Recurrent step: [B, 1] state ids and [B] int64 actions → next states and rewards."""
        self.calls += 1
        first_step = latent[:, 0].numpy() == 0.0  # [B]
        reward = np.where(first_step, self.payoffs[actions], 0.0).astype(np.float32)
        batch_size = actions.shape[0]
        return StepOutput(
            latent=torch.ones(batch_size, 1),
            reward=reward,
            value=np.zeros(batch_size, dtype=np.float32),
            policy_logits=np.zeros((batch_size, self.payoffs.shape[0]), dtype=np.float32),
        )


class TrapModel:
    """Two-step MDP with two actions whose greedy first reward is a trap.

    State 0 (root): action 0 → state 1 with reward 1; action 1 → state 2 with reward 0.
    State 1: any action → state 3 with reward 0. State 2: action 0 → state 3 with reward 3,
    action 1 → state 3 with reward 0. State 3 is absorbing with reward 0. Values are 0.
    With γ, V*(0) = max(1, γ·3): action 1 is optimal for γ > 1/3.
    """

    # [state, action] → next state and reward
    NEXT_STATE = np.array([[1, 2], [3, 3], [3, 3], [3, 3]], dtype=np.int64)
    REWARD = np.array([[1.0, 0.0], [0.0, 0.0], [3.0, 0.0], [0.0, 0.0]], dtype=np.float32)

    def __call__(self, latent: torch.Tensor, actions: np.ndarray) -> StepOutput:
        """Recurrent step: [B, 1] state ids and [B] int64 actions → next states and rewards."""
        states = latent[:, 0].numpy().astype(np.int64)  # [B]
        batch_size = actions.shape[0]
        return StepOutput(
            latent=torch.from_numpy(self.NEXT_STATE[states, actions].astype(np.float32))[:, None],
            reward=self.REWARD[states, actions],
            value=np.zeros(batch_size, dtype=np.float32),
            policy_logits=np.zeros((batch_size, 2), dtype=np.float32),
        )

    @staticmethod
    def optimal_value(discount: float) -> float:
        """V*(state 0)."""
        return max(1.0, discount * 3.0)
