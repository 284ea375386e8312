"""The sampled_muzero family: MuZero's network and loss, acting through the sampled search.

Runs in: any. Sampled MuZero (Hubert et al. 2021) changes the search (K sampled actions per
node, `mcts/sampled.py`) and the policy target (the visit distribution over the K root sampled
actions). For discrete actions the search returns that target scattered onto the sampled
actions, which are distinct, so MuZero's cross-entropy −Σ_a target(a)·log π(a) equals the
reference's −Σ_k target_k·log π(a_k) over the sampled actions (`normalize_prob_of_sampled_actions
=False`, its default) and the family reuses MuZero's unroll loss unchanged.
"""

from __future__ import annotations

import torch

from zeropipe.algos.muzero import MuZeroFamily
from zeropipe.config import ConfigError, PolicyConfig


class SampledMuZeroFamily(MuZeroFamily):
    """MuZero with a check that K sampled actions fit the discrete action set."""

    def build_network(
        self, input_shape: tuple[int, ...], num_actions: int, cfg: PolicyConfig
    ) -> torch.nn.Module:
        """MuZero's network, after checking K <= A.

        Raises:
            ConfigError: more sampled actions than the env has actions.
        """
        k = cfg.sampled.num_of_sampled_actions
        if k > num_actions:
            raise ConfigError(
                f"policy.sampled.num_of_sampled_actions={k} exceeds the env's {num_actions} "
                "discrete actions (sampling is without replacement); set it to at most "
                f"{num_actions}"
            )
        return super().build_network(input_shape, num_actions, cfg)


SAMPLED_MUZERO = SampledMuZeroFamily()
