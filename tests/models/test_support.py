"""Scalar transform h, its inverse, and two-hot encodings on a discrete support."""

from __future__ import annotations

import pytest
import torch

from zeropipe.models import (
    DiscreteSupport,
    inverse_scalar_transform,
    logits_to_scalar,
    scalar_to_two_hot,
    scalar_transform,
)
from zeropipe.models.support import logits_to_scalars


def _wide_values(dtype: torch.dtype = torch.float32) -> torch.Tensor:
    magnitudes = torch.logspace(-4, 4, 200, dtype=dtype)  # [200]
    return torch.cat((-magnitudes.flip(0), torch.zeros(1, dtype=dtype), magnitudes))  # [401]


def test_support_atoms_follow_arange() -> None:
    support = DiscreteSupport(-300, 301, 1)
    assert support.size == 601
    assert support.atoms.shape == (601,)
    assert (support.min, support.max) == (-300.0, 300.0)
    coarse = DiscreteSupport(-10, 11, 2)
    assert coarse.atoms.tolist() == [-10.0, -8.0, -6.0, -4.0, -2.0, 0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    assert coarse.max == 10.0


def test_support_rejects_degenerate_ranges() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        DiscreteSupport(0, 1)
    with pytest.raises(ValueError, match="positive"):
        DiscreteSupport(0, 10, 0)


def test_scalar_transform_known_values() -> None:
    x = torch.tensor([0.0, 3.0, -3.0, 8.0])
    expected = torch.tensor([0.0, 1.003, -1.003, 2.008])
    torch.testing.assert_close(scalar_transform(x), expected)


@pytest.mark.parametrize("dtype,rtol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_inverse_round_trips_over_a_wide_range(dtype: torch.dtype, rtol: float) -> None:
    x = _wide_values(dtype)
    torch.testing.assert_close(inverse_scalar_transform(scalar_transform(x)), x, rtol=rtol, atol=0)
    y = scalar_transform(x)
    torch.testing.assert_close(scalar_transform(inverse_scalar_transform(y)), y, rtol=rtol, atol=0)


def test_inverse_equals_lightzero_formula() -> None:
    eps = 0.001
    y = torch.linspace(-120, 120, 97, dtype=torch.float64)
    reference = torch.sign(y) * (
        ((torch.sqrt(1 + 4 * eps * (y.abs() + 1 + eps)) - 1) / (2 * eps)) ** 2 - 1
    )
    torch.testing.assert_close(inverse_scalar_transform(y, eps), reference)


def test_inverse_without_linear_term() -> None:
    x = _wide_values(torch.float64)
    torch.testing.assert_close(inverse_scalar_transform(scalar_transform(x, 0.0), 0.0), x)


def test_two_hot_of_exact_atoms_is_one_hot() -> None:
    support = DiscreteSupport(-5, 6, 1)
    # With ε = 0, h((k+1)² − 1) = k exactly.
    k = torch.tensor([-5, -2, 0, 1, 4, 5])
    x = torch.sign(k) * ((k.abs() + 1.0) ** 2 - 1.0)
    target = scalar_to_two_hot(x, support, eps=0.0)  # [6, 11]
    expected = torch.nn.functional.one_hot(k + 5, 11).float()
    torch.testing.assert_close(target, expected)


def test_two_hot_of_midpoints_splits_evenly() -> None:
    support = DiscreteSupport(-5, 6, 1)
    scaled = torch.tensor([0.5, -2.5, 3.25])
    target = scalar_to_two_hot(inverse_scalar_transform(scaled), support)
    torch.testing.assert_close(target[0, 5:7], torch.tensor([0.5, 0.5]))
    torch.testing.assert_close(target[1, 2:4], torch.tensor([0.5, 0.5]))
    torch.testing.assert_close(target[2, 8:10], torch.tensor([0.75, 0.25]))
    torch.testing.assert_close(target.sum(-1), torch.ones(3))


def test_two_hot_clamps_at_the_support_ends() -> None:
    support = DiscreteSupport(-5, 6, 1)
    target = scalar_to_two_hot(torch.tensor([1e6, -1e6, 35.0]), support)
    assert target[0, -1] == 1.0 and target[0].sum() == 1.0
    assert target[1, 0] == 1.0 and target[1].sum() == 1.0
    torch.testing.assert_close(target[2].sum(), torch.tensor(1.0))


@pytest.mark.parametrize("support_range", [(-300, 301, 1), (-50, 51, 1), (-20, 21, 2)])
def test_two_hot_expectation_is_h_inside_the_range(support_range: tuple[int, int, int]) -> None:
    support = DiscreteSupport(*support_range)
    x = inverse_scalar_transform(torch.linspace(support.min, support.max, 1001))
    x = torch.cat((x, _wide_values()[150:250]))  # small magnitudes too
    target = scalar_to_two_hot(x, support)  # [N, S]
    torch.testing.assert_close(target @ support.atoms, scalar_transform(x), atol=1e-4, rtol=1e-5)
    assert (target >= 0).all()
    torch.testing.assert_close(target.sum(-1), torch.ones(len(x)))


def test_logits_to_scalar_inverts_two_hot() -> None:
    support = DiscreteSupport(-300, 301, 1)
    x = _wide_values()[::7].reshape(-1, 1).expand(-1, 3)  # [N, 3]: leading axes kept
    logits = scalar_to_two_hot(x, support).log()  # [N, 3, S], -inf off the two atoms
    torch.testing.assert_close(logits_to_scalar(logits, support), x, rtol=1e-4, atol=1e-4)


def test_label_smoothing_mixes_in_uniform() -> None:
    support = DiscreteSupport(-50, 51, 1)
    plain = scalar_to_two_hot(torch.tensor([2.0, -7.0]), support)
    smooth = scalar_to_two_hot(torch.tensor([2.0, -7.0]), support, label_smoothing=0.1)
    torch.testing.assert_close(smooth, 0.9 * plain + 0.1 / 101)
    torch.testing.assert_close(smooth.sum(-1), torch.ones(2))


def test_a_smoothed_target_decodes_toward_zero_and_bootstrapping_compounds_it() -> None:
    """A network that fits the smoothed target exactly decodes h⁻¹(0.9·h(x)), not x; fed back as
    the bootstrap of 5-step targets of reward 1 (γ 0.997), the value settles near 24 instead of
    333 (the reason configs/cartpole_unizero.yaml sets label_smoothing_eps 0)."""
    support = DiscreteSupport(-50, 51, 1)
    x = torch.tensor([10.0, 100.0, 300.0])
    decoded = logits_to_scalar(scalar_to_two_hot(x, support, label_smoothing=0.1).log(), support)
    shrunk = inverse_scalar_transform(0.9 * scalar_transform(x))
    torch.testing.assert_close(decoded, shrunk, rtol=1e-4, atol=1e-3)

    def fixed_point(eps: float) -> float:
        gamma, value = 0.997, torch.zeros(1)
        rewards = sum(gamma**i for i in range(5))
        for _ in range(3000):
            target = scalar_to_two_hot(rewards + gamma**5 * value, support, label_smoothing=eps)
            value = logits_to_scalar(target.log(), support)
        return float(value)

    assert 20.0 < fixed_point(0.1) < 28.0
    assert fixed_point(0.0) > 300.0


def test_atoms_are_a_buffer_that_follows_the_module() -> None:
    support = DiscreteSupport(-5, 6, 1)
    assert "atoms" not in support.state_dict()
    support.double()
    assert support.atoms.dtype == torch.float64
    logits = torch.zeros(2, 11)  # float32 logits still work
    torch.testing.assert_close(logits_to_scalar(logits, support), torch.zeros(2))


@pytest.mark.parametrize("batch", [1, 3, 8, 64, 257])
def test_two_heads_decoded_together_are_each_decoded_alone(batch):
    gen = torch.Generator().manual_seed(batch)
    value_support, reward_support = DiscreteSupport(-300, 301, 1), DiscreteSupport(-25, 26, 1)
    value_logits = torch.randn(batch, 601, generator=gen) * 4
    reward_logits = torch.randn(batch, 51, generator=gen) * 4
    reward, value = logits_to_scalars(reward_logits, reward_support, value_logits, value_support)
    assert torch.equal(reward, logits_to_scalar(reward_logits, reward_support))
    assert torch.equal(value, logits_to_scalar(value_logits, value_support))
    assert value.abs().max() > 1.0  # the transform is not near the identity here
