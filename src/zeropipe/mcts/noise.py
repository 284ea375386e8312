"""Root priors: a softmax over legal actions and Dirichlet exploration noise.

Runs in: any. Vectorised numpy over the batch; B denotes the batch of roots and A the actions.
"""

from __future__ import annotations

import numpy as np


def masked_softmax(logits: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
    """Softmax of each row over its legal actions only; illegal actions get probability 0.

    Args:
        logits: [B, A] prior logits.
        action_mask: [B, A] bool legal actions, at least one True per row.

    Returns:
        [B, A] float32 probabilities, each row summing to 1 over its legal actions.
    """
    masked = np.where(action_mask, logits.astype(np.float64), -np.inf)
    masked -= masked.max(axis=1, keepdims=True)  # max-subtracted, as LightZero's expand
    weights = np.exp(masked)  # exp(-inf) = 0 for illegal actions
    return (weights / weights.sum(axis=1, keepdims=True)).astype(np.float32)


def dirichlet_noise(action_mask: np.ndarray, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """Draws, per row, Dirichlet(α·1) noise over that row's legal actions.

    A Dirichlet draw is a normalised vector of independent Gamma(α, 1) draws, so one batched
    gamma draw with the illegal entries zeroed gives every row its own Dirichlet over its own
    legal actions. Rows whose gammas all underflow (tiny α) fall back to uniform over legal.

    Args:
        action_mask: [B, A] bool legal actions, at least one True per row.
        alpha: concentration α of each legal action.
        rng: source of randomness.

    Returns:
        [B, A] float64 noise, 0 on illegal actions, each row summing to 1.
    """
    gammas = rng.standard_gamma(alpha, size=action_mask.shape) * action_mask
    totals = gammas.sum(axis=1, keepdims=True)
    uniform = action_mask / action_mask.sum(axis=1, keepdims=True)
    return np.where(totals > 0.0, gammas / np.where(totals > 0.0, totals, 1.0), uniform)


def root_prior(
    logits: np.ndarray,
    action_mask: np.ndarray,
    noise_weight: float,
    alpha: float,
    rng: np.random.Generator | None,
) -> np.ndarray:
    """Root prior: legal softmax, mixed with Dirichlet noise when `rng` is given.

    prior = (1 - w)·softmax + w·Dirichlet(α·1_legal) (MuZero appendix C; AlphaZero noise).

    Args:
        logits: [B, A] prior logits.
        action_mask: [B, A] bool legal actions.
        noise_weight: w, the weight of the noise.
        alpha: Dirichlet concentration α.
        rng: source of the noise, or None for no noise.

    Returns:
        [B, A] float32 prior, 0 on illegal actions.
    """
    prior = masked_softmax(logits, action_mask)
    if rng is None:
        return prior
    noise = dirichlet_noise(action_mask, alpha, rng)
    return ((1.0 - noise_weight) * prior + noise_weight * noise).astype(np.float32)
