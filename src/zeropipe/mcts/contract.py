"""The search's contract: its configuration, its inputs, the model it calls, and its output.

Runs in: any. The search never sees networks, buffers or processes; a model enters only as a
`RecurrentFn` callable (the mctx `base.py` pattern). B denotes the batch of roots searched together
and A the number of actions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from zeropipe.mcts.selection import SearchParams
from zeropipe.mcts.tree import Tree


@dataclass(frozen=True)
class SearchConfig:
    """Constants of one search: PUCT (MuZero, Schrittwieser et al. 2020, appendix B) and Gumbel
    (Danihelka et al. 2022, "Policy improvement by planning with Gumbel"; mctx semantics).

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
        max_num_considered_actions: Gumbel: m, the root actions sampled by Gumbel top-k and
            then halved by sequential halving (LightZero's default 4; mctx's is 16).
        gumbel_scale: Gumbel: g = gumbel_scale · Gumbel(0, 1) per root action. 1.0 is the
            paper's and mctx's value: g + logits is then an exact sample of the policy (the
            Gumbel-max trick), which the paper's policy-improvement guarantee rests on.
            LightZero uses 10 with a fixed seed, i.e. the same large "noise" at every root of
            every search, which swamps the logits without ever exploring anything new.
        maxvisit_init: Gumbel: c_visit of the σ transform σ(q) = (c_visit + max_b N(b))·c_scale·q
            (paper eq. 8; mctx and LightZero default 50).
        value_scale: Gumbel: c_scale of that transform (paper and mctx default 0.1).
        num_sampled_actions: sampled: K, the actions sampled at every expanded node
            (LightZero's `num_of_sampled_actions`, default 6).
        sampled_prior: sampled: the PUCT prior term of a sampled child, "density"
            (π / Σ π over the sampled children; sampled_efficientzero) or "uniform"
            (1 / #children; sampled_muzero, sampled_unizero).
        continuous_actions: sampled: actions are float vectors of D dimensions; the policy
            output is then [B, 2D] tanh-Gaussian parameters (mu then sigma).
        chance_space_size: chance: C, the outcomes of a chance node (0 for the other rules).
        root_visit_value: what the root's initial visit adds to its value sum: "zero"
            (every LightZero tree, the Gumbel one included: the root counts one visit and no
            value, so its value is W / (n + 1) after n simulations; ctree_muzero and
            ctree_gumbel_muzero `CRoots::prepare`) or "network" (mctx: (v + W) / (n + 1), v the
            network's root value).
        tie_break: PUCT ties in collect and reanalysis searches (every rule but Gumbel's):
            "random" (LightZero: a uniform pick among the scores within 1e-6 of the maximum,
            `cselect_child`) or "first" (the first action of maximal score, LightZero's
            `deterministic` flag). The draw is keyed by a seed taken from the search's
            generator, so a run stays reproducible from its seed.
        eval_tie_break: the same for eval searches. LightZero's MuZero-family trees break ties
            at random in eval too; only UniZero's eval search sets `deterministic` ("first").
    """

    num_simulations: int
    discount: float
    pb_c_base: float = 19652.0
    pb_c_init: float = 1.25
    value_delta_max: float = 0.01
    root_dirichlet_alpha: float = 0.3
    root_noise_weight: float = 0.25
    max_num_considered_actions: int = 4
    gumbel_scale: float = 1.0
    maxvisit_init: float = 50.0
    value_scale: float = 0.1
    num_sampled_actions: int = 6
    sampled_prior: str = "uniform"
    continuous_actions: bool = False
    chance_space_size: int = 0
    root_visit_value: str = "zero"
    tie_break: str = "random"
    eval_tie_break: str = "random"

    def __post_init__(self) -> None:
        if self.num_simulations < 1:
            raise ValueError(
                f"SearchConfig.num_simulations must be >= 1, got {self.num_simulations}"
            )
        if self.root_visit_value not in ("zero", "network"):
            raise ValueError(
                "SearchConfig.root_visit_value must be 'zero' or 'network', got "
                f"{self.root_visit_value!r}"
            )
        for name in ("tie_break", "eval_tie_break"):
            if getattr(self, name) not in ("random", "first"):
                raise ValueError(
                    f"SearchConfig.{name} must be 'random' or 'first', got {getattr(self, name)!r}"
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
        self._check_gumbel()
        if self.num_sampled_actions < 1:
            raise ValueError(
                f"SearchConfig.num_sampled_actions must be >= 1, got {self.num_sampled_actions}"
            )
        if self.sampled_prior not in ("density", "uniform"):
            raise ValueError(
                "SearchConfig.sampled_prior must be 'density' or 'uniform', got "
                f"{self.sampled_prior!r}"
            )

    def _check_gumbel(self) -> None:
        """Validates the Gumbel constants (read only by the Gumbel policy)."""
        if self.max_num_considered_actions < 1:
            raise ValueError(
                "SearchConfig.max_num_considered_actions must be >= 1, got "
                f"{self.max_num_considered_actions}"
            )
        if not (self.gumbel_scale >= 0.0 and math.isfinite(self.gumbel_scale)):
            raise ValueError(
                f"SearchConfig.gumbel_scale must be finite and >= 0, got {self.gumbel_scale}"
            )
        if not (self.maxvisit_init >= 0.0 and math.isfinite(self.maxvisit_init)):
            raise ValueError(
                f"SearchConfig.maxvisit_init must be finite and >= 0, got {self.maxvisit_init}"
            )
        if not (self.value_scale > 0.0 and math.isfinite(self.value_scale)):
            raise ValueError(
                f"SearchConfig.value_scale must be finite and > 0, got {self.value_scale}"
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


# (parent latents [B, *latent_shape], actions int64 [B]) -> StepOutput for the B children. The
# chance rule calls it with a third argument, from_chance [B] bool (see `search.run_search`).
RecurrentFn = Callable[..., StepOutput]

# (parent latents [B, *latent_shape], actions int64 [B]) -> (latents, reward [B], value [B],
# logits [B, A]) as float32 tensors, or None where the step cannot run so (it then runs through
# the `RecurrentFn`). A pure function of its inputs: it keeps neither of them.
TensorStep = Callable[[torch.Tensor, torch.Tensor], "tuple[torch.Tensor, ...] | None"]


class SimulationLoop(Protocol):
    """Every simulation of a search in one call, the model's step included (a compiled search,
    algos/compiled_search.py): what `search.run_search`'s loop computes with the same tree
    kernels, called once its first edges are selected."""

    @property
    def available(self) -> bool:
        """Whether it can run this search (else the search calls the step per simulation)."""
        ...

    def __call__(
        self,
        tree: Tree,
        params: SearchParams,
        rule: int,
        store: np.ndarray,
        parents: np.ndarray,
        actions: np.ndarray,
    ) -> None:
        """Run the simulations: node s + 1 of every tree, whose latent is `store[s + 1]`
        ([N, B, *latent] float32, node 0 the roots'), is expanded by simulation s; `parents`
        and `actions` ([B] int64) hold the first edges and are rewritten."""
        ...


@dataclass(frozen=True)
class ModelStep:
    """A `RecurrentFn` that may also run as a `TensorStep` (a traced graph of the step).

    The search calls `tensors` where it can keep the simulation's data in its own arrays: the
    CPU's numpy latent store, whose gathered parents and returned outputs are views of the same
    memory as the tensors, with no output objects in between (`search.run_search`). Elsewhere
    (another rule, a sampled search, a GPU, a step that cannot be traced) it calls `recurrent`.
    Both compute the same: `tensors` is the step `recurrent` itself runs where it can.

    Attributes:
        recurrent: the step as a `RecurrentFn`.
        tensors: the same step on tensors, or None.
        loop: the whole simulation loop with this step compiled in, or None.
    """

    recurrent: RecurrentFn
    tensors: TensorStep | None = None
    loop: SimulationLoop | None = None

    def __call__(self, *args: object) -> StepOutput:
        """`recurrent(*args)`."""
        return self.recurrent(*args)


@dataclass(frozen=True)
class SearchOutput:
    """Root statistics of a finished search.

    Attributes:
        visit_counts: [B, A] int32 visits of each root child (0 for illegal actions).
        root_value: [B] float32 search value of the root: its value sum over its visits, where
            the root starts with one visit and value sum 0 (LightZero: W / (n + 1) after n
            simulations; the network's root value is not part of it), or the network's root
            value with `root_visit_value="network"` (mctx: (v + W) / (n + 1)).
        q_values: [B, A] float32 r + γ·v of each root child, 0 where the child is unvisited.
        tree: the whole search tree, for policies that read more than these root statistics
            (Gumbel's completed Q and improved policy).
    """

    visit_counts: np.ndarray
    root_value: np.ndarray
    q_values: np.ndarray
    tree: Tree | None = None
