"""Sampled search: distinct legal samples, density/uniform prior terms, the slot → action map."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.mcts.fakes import BanditModel, make_roots
from zeropipe.mcts import ActingParams, SearchConfig, StepOutput, run_search, search_policy
from zeropipe.mcts.sampled import RootNoise, SampledSlots, sample_without_replacement


def test_samples_are_distinct_and_legal() -> None:
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(9), size=200)  # [200, 9]
    mask = rng.random((200, 9)) < 0.6
    mask[:, 0] = True
    actions, valid = sample_without_replacement(probs, 4, rng, mask)
    for row, ok, legal in zip(actions, valid, mask, strict=True):
        drawn = row[ok]
        assert len(set(drawn.tolist())) == drawn.size  # distinct
        assert legal[drawn].all()  # legal
        assert ok.sum() == min(4, legal.sum())  # fills every slot it can, no more


def test_inclusion_frequencies_match_sampling_without_replacement() -> None:
    # P(action 0 is not among 2 draws from (0.7, 0.2, 0.1)) = .2·(.1/.8) + .1·(.2/.9)
    rng = np.random.default_rng(1)
    n = 40_000
    probs = np.tile([0.7, 0.2, 0.1], (n, 1))
    actions, valid = sample_without_replacement(probs, 2, rng)
    assert valid.all()
    missing_0 = np.mean(~(actions == 0).any(axis=1))
    assert missing_0 == pytest.approx(0.2 * 0.1 / 0.8 + 0.1 * 0.2 / 0.9, abs=0.005)
    first = np.bincount(actions[:, 0], minlength=3) / n  # the first slot is a plain draw
    np.testing.assert_allclose(first, [0.7, 0.2, 0.1], atol=0.01)


def test_zero_probability_actions_fill_the_last_slots_distinctly() -> None:
    probs = np.array([[0.0, 1.0, 0.0, 0.0], [0.5, 0.0, 0.5, 0.0]])
    actions, valid = sample_without_replacement(probs, 3, np.random.default_rng(0))
    assert valid.all()
    assert actions[0, 0] == 1 and set(actions[1, :2].tolist()) == {0, 2}
    assert all(len(set(row.tolist())) == 3 for row in actions)


def test_k_outside_the_action_set_is_refused() -> None:
    with pytest.raises(ValueError, match=r"K=4 must lie in \[1, A=3\]"):
        sample_without_replacement(np.ones((1, 3)), 4, np.random.default_rng(0))


class Recorder:
    """A bandit that records the (state, real action) of every model call."""

    def __init__(self, num_actions: int) -> None:
        self.model = BanditModel([0.0] * num_actions)
        self.logits = np.log(np.arange(1, num_actions + 1, dtype=np.float32))  # [A]
        self.calls: list[tuple[np.ndarray, np.ndarray]] = []

    def __call__(self, latent: torch.Tensor, actions: np.ndarray) -> StepOutput:
        self.calls.append((latent[:, 0].numpy().copy(), actions.copy()))
        step = self.model(latent, actions)
        logits = np.tile(self.logits, (actions.shape[0], 1))
        return StepOutput(step.latent, step.reward, step.value, logits)


def _search(prior: str, num_simulations: int, k: int, mask=None, seed: int = 0):
    """A sampled search under the first-action tie rule (the hand computations rely on it)."""
    num_actions = 6
    model = Recorder(num_actions)
    roots = make_roots(4, num_actions, logits=model.logits, action_mask=mask)
    cfg = SearchConfig(
        num_simulations=num_simulations, discount=0.997, sampled_prior=prior, tie_break="first"
    )
    slots = SampledSlots(4, num_simulations + 1, k, prior, np.random.default_rng(seed))
    out = run_search(roots, model, cfg, np.random.default_rng(seed), False, slots=slots)
    return out, slots, model


def test_the_model_steps_with_the_real_actions_of_sampled_slots() -> None:
    mask = np.array([True, False, True, True, False, True])
    out, slots, model = _search("density", 30, 3, mask=mask)
    root_actions = slots.root_actions()  # [B, K]
    assert out.visit_counts.shape == (4, 3)
    for states, actions in model.calls:
        for b in range(4):
            if states[b] == 0.0:  # a root edge: one of the root's sampled, legal actions
                assert actions[b] in root_actions[b] and mask[actions[b]]
    nodes = slots.actions[:, 1:]  # interior nodes: K distinct actions each
    assert all(len(set(row.tolist())) == 3 for row in nodes.reshape(-1, 3))


@pytest.mark.parametrize("prior", ["density", "uniform"])
def test_prior_terms_match_a_hand_computation(prior: str) -> None:
    # Every payoff is 0, so all Q are 0: the first simulation takes slot 0 (all scores tie at
    # N = 0; the first-action tie rule), the second the unvisited slot of largest prior term:
    # density π(a) / Σ π over the sampled actions, uniform 1/K (so the first unvisited slot,
    # slot 1).
    out, slots, model = _search(prior, 2, 3)
    root_actions = slots.root_actions()  # [B, K]
    probs = np.arange(1, 7) / 21.0  # softmax(log(1..6))
    expected_prior = (
        probs[root_actions] / probs[root_actions].sum(axis=1, keepdims=True)
        if prior == "density"
        else np.full((4, 3), 1 / 3)
    )
    np.testing.assert_allclose(out.tree.children_prior[:, 0], expected_prior, rtol=1e-5)
    first, second = model.calls[0][1], model.calls[1][1]
    np.testing.assert_array_equal(first, root_actions[:, 0])
    if prior == "density":
        best_rest = np.argmax(expected_prior[:, 1:], axis=1) + 1
        np.testing.assert_array_equal(second, root_actions[np.arange(4), best_rest])
    else:
        np.testing.assert_array_equal(second, root_actions[:, 1])


@pytest.mark.parametrize("mode", ["collect", "eval", "reanalyze"])
def test_sampled_policy_targets_the_root_sampled_actions(mode: str) -> None:
    num_actions = 8
    model = BanditModel([0.0] * 7 + [1.0])  # arm 7 pays
    roots = make_roots(5, num_actions)
    cfg = SearchConfig(num_simulations=40, discount=0.997, num_sampled_actions=5)
    out = search_policy("sampled")(
        roots, model, cfg, np.random.default_rng(0), ActingParams(mode, temperature=0.25)
    )
    assert out.sampled_actions.shape == (5, 5) and out.policy_target.shape == (5, 8)
    np.testing.assert_allclose(out.policy_target.sum(axis=1), 1.0, rtol=1e-6)
    rows = np.arange(5)[:, None]
    unsampled = np.ones((5, 8), dtype=bool)
    unsampled[rows, out.sampled_actions] = False
    assert (out.policy_target[unsampled] == 0).all() and (out.visit_counts[unsampled] == 0).all()
    assert (out.visit_counts.sum(axis=1) == 40).all()
    assert (out.action[:, None] == out.sampled_actions).any(axis=1).all()
    has_arm = (out.sampled_actions == 7).any(axis=1)
    best = np.argmax(out.visit_counts, axis=1)
    np.testing.assert_array_equal(best[has_arm], 7)  # the search finds the arm when sampled
    if mode == "eval":
        np.testing.assert_array_equal(out.action[has_arm], 7)


def test_slots_a_root_cannot_fill_are_masked_and_never_visited() -> None:
    model = BanditModel([0.0, 1.0, 0.0, 0.0])
    roots = make_roots(3, 4, action_mask=np.array([False, True, True, False]))
    cfg = SearchConfig(num_simulations=20, discount=0.997, num_sampled_actions=3)
    out = search_policy("sampled")(
        roots, model, cfg, np.random.default_rng(0), ActingParams("collect", epsilon=0.5)
    )
    assert (out.sampled_mask.sum(axis=1) == 2).all()
    assert (out.visit_counts[:, [0, 3]] == 0).all()
    assert (out.policy_target[:, [0, 3]] == 0).all()
    np.testing.assert_allclose(out.policy_target.sum(axis=1), 1.0, rtol=1e-6)
    assert np.isin(out.action, [1, 2]).all()


class GaussianBandit:
    """A continuous one-step bandit over a ∈ [-1, 1]: reward −(a − 0.5)², Gaussian head
    (mu = 0, sigma = 1); records the real actions of every call."""

    def __init__(self) -> None:
        self.calls: list[np.ndarray] = []

    def __call__(self, latent: torch.Tensor, actions: np.ndarray) -> StepOutput:
        self.calls.append(np.array(actions, copy=True))
        batch_size = actions.shape[0]
        first = latent[:, 0].numpy() == 0.0
        reward = np.where(first, -((actions[:, 0] - 0.5) ** 2), 0.0).astype(np.float32)
        params = np.tile(np.array([0.0, 1.0], dtype=np.float32), (batch_size, 1))
        return StepOutput(
            torch.ones(batch_size, 1), reward, np.zeros(batch_size, np.float32), params
        )


@pytest.mark.parametrize("prior", ["density", "uniform"])
def test_continuous_children_are_inside_the_bounds(prior: str) -> None:
    model = GaussianBandit()
    roots = make_roots(3, 2, logits=np.array([0.0, 1.0]))  # [mu, sigma] at the root
    cfg = SearchConfig(num_simulations=30, discount=0.997, sampled_prior=prior)
    slots = SampledSlots(3, 31, 6, prior, np.random.default_rng(0), action_dim=1)
    out = run_search(roots, model, cfg, np.random.default_rng(0), False, slots=slots)
    assert slots.actions.shape == (3, 31, 6, 1)
    assert (np.abs(slots.actions) < 1.0).all()
    root = slots.root_actions()  # [B, K, D]
    for actions in model.calls:
        assert actions.shape == (3, 1) and (np.abs(actions) < 1.0).all()
    best = root[np.arange(3), np.argmax(out.visit_counts, axis=1), 0]
    closest = root[np.arange(3), np.argmin(np.abs(root[:, :, 0] - 0.5), axis=1), 0]
    np.testing.assert_allclose(best, closest)  # the most visited child pays the most


@pytest.mark.parametrize("mode", ["collect", "eval"])
def test_continuous_policy_plays_a_root_sampled_action_inside_the_bounds(mode: str) -> None:
    model = GaussianBandit()
    roots = make_roots(3, 2, logits=np.array([0.0, 1.0]))
    cfg = SearchConfig(
        num_simulations=30, discount=0.997, num_sampled_actions=5, continuous_actions=True
    )
    out = search_policy("sampled")(
        roots, model, cfg, np.random.default_rng(0), ActingParams(mode, temperature=1.0)
    )
    assert out.sampled_actions.shape == (3, 5, 1) and out.sampled_actions.dtype == np.float32
    assert (np.abs(out.sampled_actions) < 1.0).all()
    assert out.action.shape == (3, 1) and (np.abs(out.action) < 1.0).all()
    played = [(out.sampled_actions[b] == out.action[b]).all(axis=1).any() for b in range(3)]
    assert all(played)
    assert out.policy_target.shape == out.visit_counts.shape == out.q_values.shape == (3, 5)
    np.testing.assert_allclose(out.policy_target.sum(axis=1), 1.0, rtol=1e-6)
    assert out.sampled_mask.all()


def _fixed_noise(monkeypatch) -> None:
    """Root noise that puts all its mass on the first legal slot, so priors are hand-checkable."""

    def first_slot(valid, alpha, rng):
        noise = np.zeros(valid.shape)
        noise[np.arange(valid.shape[0]), np.argmax(valid, axis=1)] = 1.0
        return noise

    monkeypatch.setattr("zeropipe.mcts.sampled.dirichlet_noise", first_slot)


def test_density_root_noise_is_mixed_before_normalising(monkeypatch) -> None:
    # The reference mixes (1 − w)·π(a_k) + w·n_k into the children's priors and normalises over
    # the sampled children in the UCB: prior_k = ((1 − w)·π(a_k) + w·n_k) / ((1 − w)·Σπ + w).
    _fixed_noise(monkeypatch)
    w = 0.25
    model = Recorder(6)
    roots = make_roots(4, 6, logits=model.logits)
    cfg = SearchConfig(num_simulations=1, discount=0.997, sampled_prior="density")
    noise = RootNoise(weight=w, alpha=0.3)
    slots = SampledSlots(4, 2, 3, "density", np.random.default_rng(0), root_noise=noise)
    out = run_search(roots, model, cfg, np.random.default_rng(0), False, slots=slots)
    probs = (np.arange(1, 7) / 21.0)[slots.root_actions()]  # π of the sampled actions [B, K]
    mixed = (1 - w) * probs
    mixed[:, 0] += w
    want = mixed / mixed.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(out.tree.children_prior[:, 0], want, rtol=1e-5)
    after = (1 - w) * probs / probs.sum(axis=1, keepdims=True)  # mixing after normalising
    after[:, 0] += w
    assert not np.allclose(want, after, rtol=1e-3)


def test_continuous_density_root_noise_mixes_into_the_densities(monkeypatch) -> None:
    _fixed_noise(monkeypatch)
    w = 0.25
    roots = make_roots(3, 2, logits=np.array([0.0, 1.0]))  # [mu, sigma] at the root
    cfg = SearchConfig(num_simulations=1, discount=0.997, sampled_prior="density")
    noise = RootNoise(weight=w, alpha=0.3)
    slots = SampledSlots(
        3, 2, 4, "density", np.random.default_rng(0), action_dim=1, root_noise=noise
    )
    out = run_search(roots, GaussianBandit(), cfg, np.random.default_rng(0), False, slots=slots)
    a = slots.root_actions()[..., 0].astype(np.float64)  # [B, K]
    u = np.arctanh(a)
    density = np.exp(-0.5 * u**2) / np.sqrt(2 * np.pi) / (1 - a**2)  # tanh-N(0, 1) by hand
    mixed = (1 - w) * density + 1e-6
    mixed[:, 0] += w
    want = mixed / mixed.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(out.tree.children_prior[:, 0], want, rtol=1e-4)


@pytest.mark.parametrize(("prior", "mode"), [("density", "eval"), ("uniform", "collect")])
def test_no_root_noise_in_eval_or_with_the_uniform_prior(monkeypatch, prior, mode) -> None:
    def fail(*args):
        raise AssertionError("root noise drawn")

    monkeypatch.setattr("zeropipe.mcts.sampled.dirichlet_noise", fail)
    model = Recorder(6)
    roots = make_roots(4, 6, logits=model.logits)
    cfg = SearchConfig(num_simulations=4, discount=0.997, sampled_prior=prior)
    out = search_policy("sampled")(
        roots, model, cfg, np.random.default_rng(0), ActingParams(mode, temperature=1.0)
    )
    assert out.visit_counts.sum() == 4 * 4


def test_collect_with_the_density_prior_draws_root_noise(monkeypatch) -> None:
    calls = []

    def record(valid, alpha, rng):
        calls.append((valid.copy(), alpha))
        return valid / valid.sum(axis=1, keepdims=True)

    monkeypatch.setattr("zeropipe.mcts.sampled.dirichlet_noise", record)
    model = Recorder(6)
    roots = make_roots(4, 6, logits=model.logits)
    cfg = SearchConfig(
        num_simulations=4, discount=0.997, sampled_prior="density", root_dirichlet_alpha=0.7
    )
    search_policy("sampled")(
        roots, model, cfg, np.random.default_rng(0), ActingParams("collect", temperature=1.0)
    )
    ((valid, alpha),) = calls
    assert valid.shape == (4, cfg.num_sampled_actions) and alpha == 0.7
