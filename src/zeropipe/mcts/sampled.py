"""Sampled search (Hubert et al. 2021, "Learning and planning in complex action spaces"): each
expanded node searches K sampled actions, held as K action *slots* of the one batched tree.

Runs in: any (collector, evaluator, reanalysis). The tree of `run_search` is [B, N, K] over slots;
`SampledSlots` remembers which real action each slot of each node is ([B, N, K]), turns the
slot the descent chose into the real action for the model's recurrent step, and turns each new
node's policy logits into K sampled actions and the slot logits the kernels expand with. B
denotes the batch of roots, N the nodes per tree, A the actions and K the sampled actions.

Continuous actions (`action_dim` D > 0) are K draws a = tanh(u), u ~ Normal(mu, sigma), from a
node's Gaussian head output [mu(D), sigma(D)] (the "policy logits" [B, 2D]); the table is then
[B, N, K, D] float32 inside (-1, 1), and a slot's prior is its tanh-corrected density
(`models/gaussian.py`). Discrete actions are drawn without replacement from softmax(logits)
over the full action set (illegal actions masked at the root only) with Efraimidis–Spirakis
keys u^(1/p), the K largest in descending key order (LightZero's ctree).

The PUCT prior term of a sampled child is `density`: π(a) / Σ π over the node's sampled
children (the reference's intent for sampled_efficientzero), or `uniform`: 1 / #children
(sampled_muzero, sampled_unizero), which ignores the learned prior and therefore also the
root's Dirichlet noise. (LightZero's sampled_efficientzero ctree names "density" but tests it
with an inverted `std::string::compare` (ctree_sampled_efficientzero/lib/cnode.cpp:1054-1079),
so it in fact runs `uniform`; its sampled_muzero ctree, which sampled_unizero shares, names
"uniform" and tests it with `==` (ctree_sampled_muzero/lib/cnode.cpp:1016-1053).)

Root noise with `density` follows the reference's order (`add_exploration_noise`, then the
UCB's normalisation; `ctree_sampled_muzero`): Dirichlet(α) noise n over the K legal slots is
mixed into the *unnormalised* sampled priors, (1 − w)·π(a_k) + w·n_k (continuous: the densities
exp(log π(a_k)), plus 1e-6), and only then normalised over the sampled children. Mixing after
normalising would give the noise the weight w whatever Σ_k π(a_k) is; before, the noise weighs
more where the K samples carry little of the policy's mass (discrete K < A), as in the reference.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from zeropipe.mcts.contract import SearchRoots, StepOutput
from zeropipe.mcts.noise import dirichlet_noise
from zeropipe.models.gaussian import sample_tanh_gaussian

PriorKind = Literal["density", "uniform"]
PRIOR_KINDS: tuple[str, ...] = ("density", "uniform")
_TINY = 1e-30  # floor of a sampled probability before its log (a density slot logit)
_NOISY_DENSITY_EPS = 1e-6  # the reference's floor of a noised continuous prior before its log


@dataclass(frozen=True)
class RootNoise:
    """Dirichlet exploration noise of the root's sampled children (MuZero app. C).

    Attributes:
        weight: w, the noise's share of the mixed prior.
        alpha: α of the Dirichlet over the K legal slots.
    """

    weight: float
    alpha: float


def softmax_rows(logits: np.ndarray) -> np.ndarray:
    """[B, A] float64 row softmax of logits (any float dtype)."""
    shifted = logits.astype(np.float64) - logits.max(axis=1, keepdims=True)
    weights = np.exp(shifted)
    return weights / weights.sum(axis=1, keepdims=True)


def sample_without_replacement(
    probs: np.ndarray, k: int, rng: np.random.Generator, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """K distinct actions per row by Efraimidis–Spirakis keys u^(1/p), largest key first.

    Args:
        probs: [B, A] probabilities (rows need not be normalised; only ratios matter).
        k: K, the actions to draw per row (K <= A).
        rng: source of the keys u ~ U(0, 1).
        mask: [B, A] bool actions that may be drawn (None: all).

    Returns:
        actions [B, K] int64, distinct per row, and valid [B, K] bool: False for the slots a row
        could not fill (fewer than K drawable actions); those repeat the row's first action.
    """
    batch_size, num_actions = probs.shape
    if not 1 <= k <= num_actions:
        raise ValueError(f"sampled search: K={k} must lie in [1, A={num_actions}]")
    drawable = np.ones(probs.shape, dtype=np.bool_) if mask is None else mask.astype(np.bool_)
    u = rng.random((batch_size, num_actions))
    with np.errstate(divide="ignore"):
        # log(u^(1/p)), order-preserving; -inf for p = 0, which then comes after every p > 0
        log_keys = np.log(u) / np.where(probs > 0.0, probs, 0.0)
    log_keys = np.where(probs > 0.0, log_keys, -np.inf)
    # drawable actions first, then by descending key (np.lexsort sorts by its last key first)
    order = np.lexsort((-log_keys, ~drawable), axis=-1)[:, :k]  # [B, K]
    valid = np.take_along_axis(drawable, order, axis=1)
    actions = np.where(valid, order, order[:, :1])
    return actions.astype(np.int64), valid


class SampledSlots:
    """The real actions behind the K slots of every node of B trees, and their slot logits.

    Args:
        batch_size: B.
        num_nodes: N, nodes per tree (num_simulations + 1).
        num_sampled: K, sampled actions per node.
        prior: `density` or `uniform` (see the module docstring).
        rng: source of the sampling keys (and of the Gaussian draws and the root noise).
        action_dim: D for continuous actions; 0 (the default) for discrete actions.
        root_noise: Dirichlet noise mixed into the root's `density` priors before they are
            normalised (None: no noise; ignored by `uniform`, which reads no prior).
    """

    def __init__(
        self,
        batch_size: int,
        num_nodes: int,
        num_sampled: int,
        prior: str,
        rng: np.random.Generator,
        action_dim: int = 0,
        root_noise: RootNoise | None = None,
    ) -> None:
        if prior not in PRIOR_KINDS:
            raise ValueError(f"sampled search: prior {prior!r} is not one of {PRIOR_KINDS}")
        self.action_dim = action_dim
        if action_dim > 0:  # [B, N, K, D]
            shape = (batch_size, num_nodes, num_sampled, action_dim)
            self.actions = np.zeros(shape, dtype=np.float32)
        else:  # [B, N, K]
            self.actions = np.zeros((batch_size, num_nodes, num_sampled), dtype=np.int64)
        self.num_sampled = num_sampled
        self.prior = prior
        self.root_noise = root_noise
        self._rng = rng
        self._rows = np.arange(batch_size)

    def _slot_logits(self, probs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """[B, K] float32 logits whose softmax is the slots' PUCT prior term."""
        if self.prior == "uniform":
            return np.zeros(actions.shape, dtype=np.float32)
        sampled = np.take_along_axis(probs, actions, axis=1)  # [B, K]
        return np.log(np.maximum(sampled, _TINY)).astype(np.float32)

    def sample_roots(self, roots: SearchRoots) -> SearchRoots:
        """The roots over K slots: K legal actions sampled from the legal softmax of each root.

        Returns:
            SearchRoots with policy_logits [B, K] slot logits and action_mask [B, K] (False on
            slots a root with fewer than K legal actions could not fill).
        """
        if self.action_dim > 0:
            logits, log_prob = self._sample_continuous(0, roots.policy_logits)
            valid = np.ones(logits.shape, dtype=np.bool_)
            if self.prior == "density" and self.root_noise is not None:
                noised = self._noised(np.exp(log_prob), valid, self.root_noise)
                noised += _NOISY_DENSITY_EPS
                logits = np.log(noised).astype(np.float32)
            return replace(roots, policy_logits=logits, action_mask=valid)
        mask = roots.action_mask.astype(np.bool_)
        probs = softmax_rows(np.where(mask, roots.policy_logits, -np.inf))  # [B, A]
        actions, valid = sample_without_replacement(probs, self.num_sampled, self._rng, mask)
        self.actions[:, 0] = actions
        logits = self._slot_logits(probs, actions)
        if self.prior == "density" and self.root_noise is not None:
            sampled = np.take_along_axis(probs, actions, axis=1)  # [B, K]
            noised = self._noised(sampled, valid, self.root_noise)
            logits = np.log(np.maximum(noised, _TINY)).astype(np.float32)
        return replace(roots, policy_logits=logits, action_mask=valid)

    def _noised(self, priors: np.ndarray, valid: np.ndarray, noise: RootNoise) -> np.ndarray:
        """(1 − w)·priors + w·Dirichlet(α) over the `valid` slots: [B, K] float64, unnormalised
        (the PUCT term normalises it over the sampled children)."""
        dirichlet = dirichlet_noise(valid, noise.alpha, self._rng)
        mixed = (1.0 - noise.weight) * priors + noise.weight * dirichlet
        return np.where(valid, mixed, 0.0)

    def expand(self, node: int, step: StepOutput) -> StepOutput:
        """Samples K actions at new node `node` of every tree from the step's logits [B, A].

        Returns:
            The step with policy_logits replaced by the [B, K] slot logits.
        """
        if self.action_dim > 0:
            logits, _ = self._sample_continuous(node, step.policy_logits)
            return replace(step, policy_logits=logits)
        probs = softmax_rows(np.asarray(step.policy_logits))  # [B, A], the full action set
        actions, _ = sample_without_replacement(probs, self.num_sampled, self._rng)
        self.actions[:, node] = actions
        return replace(step, policy_logits=self._slot_logits(probs, actions))

    def _sample_continuous(self, node: int, params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Draws node `node`'s K actions from [B, 2D] Gaussian parameters; returns the [B, K]
        slot logits (log-densities for `density`, zeros for `uniform`) and the log-densities."""
        params = np.asarray(params, dtype=np.float32)
        d = self.action_dim
        if params.shape[1] != 2 * d:
            raise ValueError(
                f"sampled search: continuous policy output has {params.shape[1]} columns, "
                f"expected 2·D = {2 * d} (mu then sigma)"
            )
        actions, log_prob = sample_tanh_gaussian(
            params[:, :d], params[:, d:], self.num_sampled, self._rng
        )
        self.actions[:, node] = actions
        if self.prior == "uniform":
            return np.zeros(log_prob.shape, dtype=np.float32), log_prob
        return log_prob.astype(np.float32), log_prob

    def real_actions(self, parents: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """Real actions of the chosen `slots` [B] of nodes `parents` [B]: [B] int64 discrete,
        [B, D] float32 continuous."""
        return self.actions[self._rows, parents, slots]

    def root_actions(self) -> np.ndarray:
        """The root's sampled actions in slot order: [B, K] int64, or [B, K, D] float32."""
        return self.actions[:, 0].copy()
