"""The Gaussian/tanh policy: head outputs, the tanh-corrected log-density, sampling in bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from zeropipe.models.gaussian import (
    GaussianPolicyHead,
    gaussian_entropy,
    sample_tanh_gaussian,
    split_params,
    tanh_log_prob,
)


def _cdf(y: float, mu: float, sigma: float) -> float:
    """P(tanh(u) <= y) for u ~ Normal(mu, sigma)."""
    return 0.5 * (1.0 + math.erf((math.atanh(y) - mu) / (sigma * math.sqrt(2.0))))


@pytest.mark.parametrize(("mu", "sigma"), [(0.0, 1.0), (0.7, 0.3), (-1.5, 2.0)])
@pytest.mark.parametrize("y", [-0.9, -0.2, 0.0, 0.5, 0.95])
def test_log_density_matches_the_numerical_derivative_of_the_cdf(mu, sigma, y) -> None:
    h = 1e-5
    numeric = (_cdf(y + h, mu, sigma) - _cdf(y - h, mu, sigma)) / (2 * h)
    log_p = tanh_log_prob(
        torch.tensor([mu], dtype=torch.float64),
        torch.tensor([sigma], dtype=torch.float64),
        torch.tensor([y], dtype=torch.float64),
    )
    assert math.exp(float(log_p)) == pytest.approx(numeric, rel=1e-5, abs=1e-8)


@pytest.mark.parametrize(
    ("sigma", "expected"),
    [
        ([1.0], 1.4189385332046727),  # ½·log(2πe)
        ([math.exp(-1.0)], 0.4189385332046727),  # ½·log(2πe) − 1
        ([0.5, 2.0], 2.8378770664093453),  # log(2πe) + log(0.5·2) = 1 + log(2π)
    ],
)
def test_gaussian_entropy_is_the_closed_form_of_the_pre_tanh_normal(sigma, expected) -> None:
    got = gaussian_entropy(torch.tensor([sigma], dtype=torch.float64))
    assert float(got[0]) == pytest.approx(expected, abs=1e-12)


def test_log_density_sums_over_dimensions() -> None:
    mu = torch.tensor([[0.1, -0.4]], dtype=torch.float64)
    sigma = torch.tensor([[0.5, 1.2]], dtype=torch.float64)
    a = torch.tensor([[0.3, -0.6]], dtype=torch.float64)
    joint = tanh_log_prob(mu, sigma, a)
    parts = sum(
        tanh_log_prob(mu[:, i : i + 1], sigma[:, i : i + 1], a[:, i : i + 1]) for i in (0, 1)
    )
    torch.testing.assert_close(joint, parts)


def test_density_integrates_to_one() -> None:
    y = torch.linspace(-1 + 1e-9, 1 - 1e-9, 400_001, dtype=torch.float64)[:, None]
    p = tanh_log_prob(torch.tensor([0.3]), torch.tensor([0.8]), y).exp()
    assert float(torch.trapezoid(p, y[:, 0])) == pytest.approx(1.0, abs=1e-4)


def test_samples_lie_inside_the_bounds_with_their_log_probs() -> None:
    rng = np.random.default_rng(0)
    mu = np.array([[0.0, 3.0], [-5.0, 0.2]], dtype=np.float32)
    sigma = np.array([[1.0, 2.0], [0.1, 0.5]], dtype=np.float32)
    actions, log_prob = sample_tanh_gaussian(mu, sigma, 50, rng)
    assert actions.shape == (2, 50, 2) and log_prob.shape == (2, 50)
    assert (np.abs(actions) < 1.0).all()
    expected = tanh_log_prob(
        torch.from_numpy(mu)[:, None].double(),
        torch.from_numpy(sigma)[:, None].double(),
        torch.from_numpy(actions).double(),
    )
    np.testing.assert_allclose(log_prob, expected.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("sigma_type", ["conditioned", "fixed"])
def test_head_gives_mu_and_positive_sigma(sigma_type) -> None:
    head = GaussianPolicyHead(8, 16, 3, sigma_type=sigma_type, fixed_sigma_value=0.3)
    torch.nn.init.normal_(head.layers[-1].weight)
    mu, sigma = split_params(head(torch.randn(5, 8)))
    assert mu.shape == sigma.shape == (5, 3)
    assert (sigma > 0).all()
    if sigma_type == "fixed":
        torch.testing.assert_close(sigma, torch.full((5, 3), 0.3))
    else:
        assert sigma.std() > 0  # conditioned on the state


def test_unknown_sigma_type_is_refused() -> None:
    with pytest.raises(ValueError, match="sigma_type"):
        GaussianPolicyHead(8, 16, 3, sigma_type="learned")  # type: ignore[arg-type]


def test_continuous_network_has_a_gaussian_head_and_reads_action_vectors() -> None:
    from zeropipe.algos.sampled_muzero import SampledMuZeroModelConfig
    from zeropipe.models import MuZeroNetwork

    cfg = SampledMuZeroModelConfig(
        continuous_action_space=True, latent_dim=8, hidden_dim=8, norm_type="LN"
    )
    torch.manual_seed(0)
    net = MuZeroNetwork((3,), 2, cfg, with_projection=False)
    root = net.initial_inference(torch.randn(4, 3))
    assert root.policy_logits.shape == (4, 4)  # [mu(2), sigma(2)]
    assert (root.policy_logits[:, 2:] > 0).all()
    actions = torch.tensor([[0.5, -0.5]]).expand(4, 2)
    step = net.recurrent_inference(root.latent, actions)
    other = net.recurrent_inference(root.latent, -actions)
    assert step.latent.shape == (4, 8)
    assert not torch.allclose(step.latent, other.latent)  # the action vector reaches g


def test_continuous_actions_with_an_image_latent_are_a_config_error() -> None:
    from zeropipe.algos.sampled_muzero import SampledMuZeroModelConfig
    from zeropipe.config import ConfigError
    from zeropipe.models.dynamics import build_dynamics

    with pytest.raises(ConfigError, match="continuous_action_space needs vector"):
        build_dynamics((4, 3, 3), 2, SampledMuZeroModelConfig(continuous_action_space=True))
