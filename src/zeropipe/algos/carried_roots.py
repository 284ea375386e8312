"""Roots that carry state from an env's previous root along the action actually taken.

Runs in: collector, evaluator (the `RootSource` of muzero_context and muzero_rnn_full_obs). Each
env keeps the latent of its previous root; at the next step its *carried child* is
`recurrent_inference(previous root latent, chosen action)` — the latent the chosen child of the
previous search had. LightZero's context model instead keeps whatever latent the search's last
`recurrent_inference` call wrote (the last simulated leaf, whichever branch that was;
`MuZeroContextModel`) — a bug, fixed here by recomputing the chosen child. A family decides how
the carried child and the fresh observation make the root (`RootCombiner`). The chain restarts
(no carried child) at an episode start, every `context_length` env steps of that env, and after a
weight load.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from pydantic import Field

from zeropipe.config import Section
from zeropipe.models import Network, NetworkOutput

# (network, observations [B, *input], rows of the batch with a carried child [R],
#  the carried children's outputs (R rows) or None when R = 0) -> root outputs of all B envs.
RootCombiner = Callable[[Network, torch.Tensor, torch.Tensor, NetworkOutput | None], NetworkOutput]


class CarriedRootOptions(Section):
    """A mixin of the sections of the types whose roots carry state (muzero_context,
    muzero_rnn_full_obs), before the family's section in the bases."""

    context_length_init: int = Field(
        5,
        ge=1,
        description="Acting re-encodes the root from the "
        "observation (muzero_context) or restarts the latent history (muzero_rnn_full_obs) at "
        "every episode start and every this many env steps of an env; 1 is plain muzero acting.",
    )


class CarriedRoots:
    """Per-env previous root latents and steps since the chain restarted.

    Args:
        network: the acting network (in eval mode under no_grad when `root` is called).
        num_envs: envs of the collector or evaluator.
        context_length: a chain restarts every this many env steps (1: never carried).
        combine: makes the roots from the observations and the carried children.
    """

    def __init__(
        self, network: Network, num_envs: int, context_length: int, combine: RootCombiner
    ) -> None:
        self.network = network
        self.context_length = context_length
        self.combine = combine
        self.latents: list[torch.Tensor | None] = [None] * num_envs  # [*latent] previous root
        self.steps = [0] * num_envs  # env steps since the chain restarted

    def root(self, obs: torch.Tensor, env_ids: list[int], prev_actions: list[int]) -> NetworkOutput:
        """Root outputs of `env_ids` from observations [B, *input] and their previous actions.

        Args:
            obs: stacked observations, row i for env `env_ids[i]`.  # [B, *input]
            env_ids: which env each row is.
            prev_actions: the action each env took to get here; -1 at an episode start.

        Returns:
            Root outputs (B rows); their latents are kept as the envs' next previous roots.
        """
        rows = [i for i, e in enumerate(env_ids) if self._carries(e, prev_actions[i])]
        child = None
        if rows:
            latent = torch.stack([self.latents[env_ids[i]] for i in rows])  # [R, *latent]
            action = torch.tensor([prev_actions[i] for i in rows], device=latent.device)
            child = self.network.recurrent_inference(latent, action)
        index = torch.tensor(rows, dtype=torch.long, device=obs.device)
        out = self.combine(self.network, obs, index, child)
        carried = set(rows)
        for i, env in enumerate(env_ids):
            self.steps[env] = self.steps[env] + 1 if i in carried else 0
            self.latents[env] = out.latent[i].detach()
        return out

    def _carries(self, env: int, prev_action: int) -> bool:
        """Whether env `env` continues its chain: not an episode start, not stale, not due."""
        if prev_action < 0 or self.latents[env] is None:
            return False
        return self.steps[env] + 1 < self.context_length

    def reset(self, env_id: int) -> None:
        """Env `env_id` starts a new episode: its next root is encoded afresh."""
        self.latents[env_id] = None
        self.steps[env_id] = 0

    def state_dict(self) -> dict[str, Any]:
        """Each env's previous root latent and chain length."""
        return {
            "latents": [None if t is None else t.cpu() for t in self.latents],
            "steps": self.steps,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a `state_dict()`."""
        device = next(self.network.parameters()).device
        self.latents = [None if t is None else t.to(device) for t in state["latents"]]
        self.steps = [int(s) for s in state["steps"]]

    def tick(self, env_ids: Sequence[int]) -> None:
        """The chains restart by their own per-env step counts (`root`), not by a clock."""

    def invalidate(self) -> None:
        """New weights: every kept latent was computed with the old ones."""
        for env in range(len(self.latents)):
            self.reset(env)
