"""The continuous policy: a Gaussian (mu, sigma) head and the tanh-squashed distribution it defines.

Runs in: any (the head in every network; sampling in the search; log-probabilities in the loss).
A continuous action a in [-1, 1]^D (scaled to the env's bounds by the env wrapper) is
a = tanh(u) with u ~ Normal(mu, sigma) per dimension (LightZero's sampled algorithms). Its
log-probability carries the tanh change of variables:
log π(a) = Σ_d [log N(u_d; mu_d, sigma_d) − log(1 − tanh(u_d)²)], u = arctanh(a).
B denotes the batch, D the action dimensions and K the sampled actions.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

SigmaType = Literal["conditioned", "fixed"]
SIGMA_MIN = 1e-3  # floor of a conditioned sigma, so the log-probability stays finite
_EDGE = 1e-6  # actions are clamped to [-1 + _EDGE, 1 - _EDGE] before arctanh
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class GaussianPolicyHead(nn.Module):
    """Linear → ReLU → zero-initialised Linear to [mu(D), sigma(D)] (LightZero's
    `ReparameterizationHead` with `sigma_type`).

    Args:
        in_dim: input features.
        hidden_dim: hidden width.
        action_dim: D.
        sigma_type: "conditioned" (sigma = softplus(raw) + SIGMA_MIN, learned per state) or
            "fixed" (sigma = fixed_sigma_value everywhere; the head then learns mu only).
        fixed_sigma_value: the sigma of "fixed" (reference default 0.3).
    """

    def __init__(
        self,
        in_dim: int,
        hidden_dim: int,
        action_dim: int,
        sigma_type: SigmaType = "conditioned",
        fixed_sigma_value: float = 0.3,
    ) -> None:
        super().__init__()
        if sigma_type not in ("conditioned", "fixed"):
            raise ValueError(f"sigma_type must be 'conditioned' or 'fixed', got {sigma_type!r}")
        if not fixed_sigma_value > 0.0:
            raise ValueError(f"fixed_sigma_value must be > 0, got {fixed_sigma_value}")
        self.action_dim = action_dim
        self.sigma_type = sigma_type
        self.fixed_sigma_value = fixed_sigma_value
        last = nn.Linear(hidden_dim, 2 * action_dim)
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)
        self.layers = nn.Sequential(nn.Linear(in_dim, hidden_dim), nn.ReLU(inplace=True), last)

    def forward(self, x: Tensor) -> Tensor:
        """[B, in_dim] -> [B, 2D]: mu then sigma (> 0), the continuous "policy logits"."""
        raw_mu, raw_sigma = self.layers(x).chunk(2, dim=-1)
        if self.sigma_type == "fixed":
            sigma = torch.full_like(raw_sigma, self.fixed_sigma_value)
        else:
            sigma = F.softplus(raw_sigma) + SIGMA_MIN
        return torch.cat([raw_mu, sigma], dim=-1)


def split_params(params: Tensor) -> tuple[Tensor, Tensor]:
    """[..., 2D] head output -> (mu [..., D], sigma [..., D])."""
    mu, sigma = params.chunk(2, dim=-1)
    return mu, sigma


def tanh_log_prob(mu: Tensor, sigma: Tensor, actions: Tensor) -> Tensor:
    """log π(a) of tanh-squashed Gaussians, summed over the action dimensions.

    Args:
        mu: means.  # [..., D] (broadcast against actions)
        sigma: standard deviations, > 0.  # [..., D]
        actions: squashed actions in [-1, 1].  # [..., D]

    Returns:
        [...] log-densities with respect to da.
    """
    a = actions.clamp(-1.0 + _EDGE, 1.0 - _EDGE)
    u = torch.atanh(a)
    normal = -0.5 * ((u - mu) / sigma) ** 2 - torch.log(sigma) - _HALF_LOG_2PI
    return (normal - torch.log1p(-a * a)).sum(dim=-1)


def gaussian_entropy(sigma: Tensor) -> Tensor:
    """Closed-form entropy of the pre-tanh Gaussian, Σ_d [½·log(2πe) + log sigma_d] ([..., D] →
    [...]); LightZero's `Independent(Normal(mu, sigma), 1).entropy()` in its sampled losses. It
    ignores the tanh squashing, so it is not the entropy of the policy that acts."""
    return (0.5 + _HALF_LOG_2PI + torch.log(sigma)).sum(dim=-1)


def tanh_entropy_estimate(mu: Tensor, sigma: Tensor, actions: Tensor) -> Tensor:
    """Monte-Carlo entropy −mean_k log π(a_k) over sampled actions [..., K, D] → [...] (the
    squashed distribution has no closed-form entropy)."""
    return -tanh_log_prob(mu.unsqueeze(-2), sigma.unsqueeze(-2), actions).mean(dim=-1)


def sample_tanh_gaussian(
    mu: np.ndarray, sigma: np.ndarray, k: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """K squashed samples per row and their log-probabilities (the sampled children's priors).

    Args:
        mu: [B, D] means.
        sigma: [B, D] standard deviations.
        k: K.
        rng: source of the Normal draws.

    Returns:
        actions [B, K, D] float32 strictly inside (-1, 1), and log_prob [B, K] float64.
    """
    mu64 = mu.astype(np.float64)[:, None, :]
    sigma64 = sigma.astype(np.float64)[:, None, :]
    u = mu64 + sigma64 * rng.standard_normal((mu.shape[0], k, mu.shape[1]))
    # the log-probability is that of the float32 action the search stores and plays
    a = np.clip(np.tanh(u), -1.0 + _EDGE, 1.0 - _EDGE).astype(np.float32)
    log_prob = tanh_log_prob(
        torch.from_numpy(mu64), torch.from_numpy(sigma64), torch.from_numpy(a.astype(np.float64))
    ).numpy()
    return a, log_prob
