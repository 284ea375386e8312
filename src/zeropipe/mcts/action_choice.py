"""Choosing the action to play from root visit counts.

Runs in: any (collector with temperature and ε, evaluator deterministic). Vectorised numpy over the
batch; B denotes the batch of roots and A the actions.
"""

from __future__ import annotations

import numpy as np


def select_action(
    visit_counts: np.ndarray,
    temperature: float,
    rng: np.random.Generator,
    deterministic: bool = False,
    epsilon: float = 0.0,
    action_mask: np.ndarray | None = None,
) -> np.ndarray:
    """Picks one action per root from its visit counts.

    Deterministic (or temperature 0): the most visited action, the lowest index on ties.
    Otherwise: a sample from visits^(1/temperature), computed in log space in float64 so that
    small temperatures neither overflow nor divide by zero (MuZero appendix D). Then, with
    probability ε per root, the action is replaced by a uniform legal action (ε-greedy
    exploration on top of the search).

    Args:
        visit_counts: [B, A] root child visits.
        temperature: visit-count temperature, >= 0.
        rng: source of randomness (not used when deterministic and ε = 0).
        deterministic: take the most visited action.
        epsilon: probability of a uniform legal action instead, in [0, 1].
        action_mask: [B, A] bool legal actions; required when ε > 0.

    Returns:
        [B] int64 actions.

    Raises:
        ValueError: on a negative temperature, ε outside [0, 1], or ε > 0 without a mask.
    """
    if temperature < 0.0:
        raise ValueError(f"select_action: temperature must be >= 0, got {temperature}")
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"select_action: epsilon must lie in [0, 1], got {epsilon}")
    if epsilon > 0.0 and action_mask is None:
        raise ValueError("select_action: epsilon > 0 needs action_mask to draw legal actions")
    visits = np.asarray(visit_counts, dtype=np.float64)
    if deterministic or temperature == 0.0:
        actions = np.argmax(visits, axis=1)
    else:
        actions = sample_rows(_tempered(visits, temperature), rng)
    if epsilon > 0.0:
        explore = rng.random(visits.shape[0]) < epsilon
        uniform = sample_rows(np.asarray(action_mask, dtype=np.float64), rng)
        actions = np.where(explore, uniform, actions)
    return actions.astype(np.int64)


def _tempered(visits: np.ndarray, temperature: float) -> np.ndarray:
    """[B, A] unnormalised weights visits^(1/T); rows without visits become uniform."""
    with np.errstate(divide="ignore"):
        logits = np.log(visits) / temperature  # log 0 = -inf → weight 0
    empty = ~np.isfinite(logits).any(axis=1)
    logits[empty] = 0.0
    return np.exp(logits - logits.max(axis=1, keepdims=True))


def sample_rows(weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """[B] one index per row drawn ∝ the row's non-negative `weights` ([B, A])."""
    cumulative = np.cumsum(weights, axis=1)
    threshold = rng.random(weights.shape[0]) * cumulative[:, -1]
    # First index whose cumulative weight exceeds the threshold; zero-weight entries never win.
    return np.argmax(cumulative > threshold[:, None], axis=1)
