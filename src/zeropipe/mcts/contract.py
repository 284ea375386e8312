"""The search's contract: its configuration, its inputs, the model it calls, and its output.

Runs in: any. The search never sees networks, buffers or processes; a model enters only as a
`RecurrentFn` callable (the mctx `base.py` pattern). B denotes the batch of roots searched together
and A the number of actions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class SearchConfig:
    """Constants of one MuZero PUCT search (MuZero, Schrittwieser et al. 2020, appendix B).

    Attributes:
        num_simulations: simulations per search; each expands one node, so the tree has
            num_simulations + 1 nodes per root.
        discount: γ used for r + γ·v in Q values and in the backup.
        pb_c_base: c2 of the PUCT exploration term (appendix B, eq. 2).
        pb_c_init: c1 of the PUCT exploration term (appendix B, eq. 2).
        value_delta_max: smallest range used by the min-max Q normalisation, so that a tree whose
            Q values barely differ is not blown up to [0, 1] (LightZero's `value_delta_max`).
        root_dirichlet_alpha: α of the Dirichlet noise mixed into the root prior (appendix C).
        root_noise_weight: weight w of that noise: prior = (1 - w)·prior + w·noise.
    """

    num_simulations: int
    discount: float
    pb_c_base: float = 19652.0
    pb_c_init: float = 1.25
    value_delta_max: float = 0.01
    root_dirichlet_alpha: float = 0.3
    root_noise_weight: float = 0.25

    def __post_init__(self) -> None:
        if self.num_simulations < 1:
            raise ValueError(
                f"SearchConfig.num_simulations must be >= 1, got {self.num_simulations}"
            )
        if not 0.0 <= self.discount <= 1.0:
            raise ValueError(f"SearchConfig.discount must lie in [0, 1], got {self.discount}")
        if not (self.pb_c_base > 0.0 and math.isfinite(self.pb_c_base)):
            raise ValueError(f"SearchConfig.pb_c_base must be finite and > 0, got {self.pb_c_base}")
        if not self.value_delta_max > 0.0:
            raise ValueError(
                f"SearchConfig.value_delta_max must be > 0, got {self.value_delta_max}"
            )
        if not self.root_dirichlet_alpha > 0.0:
            raise ValueError(
                f"SearchConfig.root_dirichlet_alpha must be > 0, got {self.root_dirichlet_alpha}"
            )
        if not 0.0 <= self.root_noise_weight <= 1.0:
            raise ValueError(
                f"SearchConfig.root_noise_weight must lie in [0, 1], got {self.root_noise_weight}"
            )


@dataclass(frozen=True)
class SearchRoots:
    """What the initial inference produced for B roots.

    Attributes:
        latent: [B, *latent_shape] root latent states (any device).
        value: [B] float32 scalar value predicted for each root.
        policy_logits: [B, A] float32 prior logits.
        action_mask: [B, A] bool legal actions; every row needs at least one True.
    """

    latent: torch.Tensor
    value: np.ndarray
    policy_logits: np.ndarray
    action_mask: np.ndarray


@dataclass(frozen=True)
class StepOutput:
    """What the recurrent model returns for one batched simulation step.

    Attributes:
        latent: [B, *latent_shape] next latent states.
        reward: [B] float32 scalar reward of the transition.
        value: [B] float32 scalar value of the next state.
        policy_logits: [B, A] float32 prior logits at the next state.
    """

    latent: torch.Tensor
    reward: np.ndarray
    value: np.ndarray
    policy_logits: np.ndarray


# (parent latents [B, *latent_shape], actions int64 [B]) -> StepOutput for the B children.
RecurrentFn = Callable[[torch.Tensor, np.ndarray], StepOutput]


@dataclass(frozen=True)
class SearchOutput:
    """Root statistics of a finished search.

    Attributes:
        visit_counts: [B, A] int32 visits of each root child (0 for illegal actions).
        root_value: [B] float32 search value of the root: its value sum over its visits, where
            the root starts with one visit carrying the network value (mctx convention).
        q_values: [B, A] float32 r + γ·v of each root child, 0 where the child is unvisited.
    """

    visit_counts: np.ndarray
    root_value: np.ndarray
    q_values: np.ndarray
