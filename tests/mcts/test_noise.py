"""Root priors: legal-only softmax and Dirichlet noise that respects the action mask."""

from __future__ import annotations

import numpy as np

from zeropipe.mcts.noise import dirichlet_noise, masked_softmax, root_prior

MASK = np.array([[True, False, True, True], [False, True, False, False]])


def test_masked_softmax_is_zero_on_illegal_and_normalised() -> None:
    logits = np.array([[1.0, 50.0, 1.0, 1.0], [3.0, -2.0, 9.0, 0.0]], dtype=np.float32)
    prior = masked_softmax(logits, MASK)
    assert prior.dtype == np.float32
    np.testing.assert_allclose(prior[0], [1 / 3, 0.0, 1 / 3, 1 / 3], rtol=1e-6)
    np.testing.assert_allclose(prior[1], [0.0, 1.0, 0.0, 0.0])


def test_dirichlet_noise_respects_mask() -> None:
    mask = np.tile(MASK, (50, 1))
    noise = dirichlet_noise(mask, alpha=0.3, rng=np.random.default_rng(0))
    assert (noise[~mask] == 0.0).all()
    np.testing.assert_allclose(noise.sum(axis=1), 1.0, rtol=1e-9)
    # Rows with one legal action have nothing to spread: the noise is that action.
    assert (noise[1::2, 1] == 1.0).all()


def test_dirichlet_noise_falls_back_to_uniform_when_gammas_underflow() -> None:
    noise = dirichlet_noise(MASK, alpha=1e-300, rng=np.random.default_rng(0))
    assert np.isfinite(noise).all()
    np.testing.assert_allclose(noise.sum(axis=1), 1.0)


def test_root_prior_mixes_noise_with_weight() -> None:
    logits = np.zeros((2, 4), dtype=np.float32)
    clean = root_prior(logits, MASK, 0.25, 0.3, None)
    noisy = root_prior(logits, MASK, 0.25, 0.3, np.random.default_rng(1))
    noise = dirichlet_noise(MASK, 0.3, np.random.default_rng(1))
    np.testing.assert_allclose(noisy, 0.75 * clean + 0.25 * noise, rtol=1e-6)
    assert (noisy[~MASK] == 0.0).all()
