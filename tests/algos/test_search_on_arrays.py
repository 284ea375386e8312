"""The search's simulations on the traced step's tensors (`mcts.search._simulate_on_arrays`, the
default under `policy.actor_inference: traced | frozen`) give exactly the search that the step
through `StepOutput`s gives, and the visits and root values of the eager search."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.algos.test_traced_step import _random_muzero
from zeropipe.algos.network_search import NetworkSearch
from zeropipe.mcts import ActingParams, SearchConfig, SearchRoots, run_search, search_policy
from zeropipe.mcts.contract import ModelStep
from zeropipe.models import logits_to_scalar

CFG = SearchConfig(num_simulations=25, discount=0.997)


def _roots(net, seed: int, batch: int = 7) -> SearchRoots:
    """A fixed set of roots of `net` with some illegal actions."""
    rng = np.random.default_rng(seed)
    out = net.initial_inference(torch.from_numpy(rng.normal(size=(batch, 4)).astype(np.float32)))
    mask = rng.random((batch, 3)) < 0.8
    mask[np.arange(batch), rng.integers(0, 3, batch)] = True  # every row keeps a legal action
    value = logits_to_scalar(out.value_logits, net.value_support).numpy()
    return SearchRoots(out.latent, value, out.policy_logits.numpy(), mask)


def _never(*args):
    raise AssertionError("the search called the step through StepOutput")


def _search(net, inference: str) -> NetworkSearch:
    """A search whose step has run once, so that it is traced (and frozen where asked)."""
    search = NetworkSearch(net, 1, search_policy("puct"), inference=inference)
    for _ in range(2):
        search.search_from(
            net.initial_inference(torch.zeros(2, 4)),
            np.ones((2, 3), bool),
            CFG,
            np.random.default_rng(0),
            ActingParams("collect", 1.0, 0.0),
        )
    return search


def _run(roots: SearchRoots, step, noise: bool):
    return run_search(roots, step, CFG, np.random.default_rng(5), noise)


@pytest.mark.parametrize("inference", ["traced", "frozen"])
@pytest.mark.parametrize("noise", [False, True])
@torch.no_grad()
def test_the_search_on_tensors_is_the_search_through_step_outputs(inference, noise):
    net = _random_muzero(11)
    search = _search(net, inference)
    assert (search.traced.frozen is not None) == (inference == "frozen")
    for seed in range(4):
        roots = _roots(net, seed)
        got = _run(roots, ModelStep(_never, search.traced.tensors), noise)
        want = _run(roots, search._recurrent, noise)
        np.testing.assert_array_equal(got.visit_counts, want.visit_counts)
        np.testing.assert_array_equal(got.root_value, want.root_value)
        np.testing.assert_array_equal(got.q_values, want.q_values)
        for field, value in zip(got.tree._fields, got.tree, strict=True):
            np.testing.assert_array_equal(value, getattr(want.tree, field), err_msg=field)


@pytest.mark.parametrize("inference", ["traced", "frozen"])
@torch.no_grad()
def test_the_search_on_tensors_has_the_eager_searchs_visits_and_root_values(inference):
    net = _random_muzero(12)
    fast, eager = _search(net, inference), _search(net, "eager")
    for seed in range(4):
        roots = _roots(net, seed)
        got = _run(roots, fast.step, False)
        want = _run(roots, eager.step, False)
        np.testing.assert_array_equal(got.visit_counts, want.visit_counts)
        # the graph's ops round as eager's do, or (frozen: batch norm folded into the linear
        # layers) within float32 rounding
        np.testing.assert_allclose(got.root_value, want.root_value, rtol=1e-5, atol=1e-5)


@torch.no_grad()
def test_a_tensor_step_that_cannot_run_falls_back_to_step_outputs():
    net = _random_muzero(13)
    search = _search(net, "frozen")
    roots = _roots(net, 0)
    got = _run(roots, ModelStep(search._recurrent, lambda latent, action: None), False)
    want = _run(roots, search._recurrent, False)
    np.testing.assert_array_equal(got.visit_counts, want.visit_counts)
    np.testing.assert_array_equal(got.root_value, want.root_value)


@torch.no_grad()
def test_the_traced_step_decodes_the_reward_and_value_as_eager_does():
    net = _random_muzero(14)
    traced, eager = _search(net, "traced"), _search(net, "eager")
    latent = _roots(net, 0).latent
    for depth in range(3):
        actions = (np.arange(7) + depth) % 3
        got, want = traced._recurrent(latent, actions), eager._recurrent(latent, actions)
        assert np.abs(want.value).max() > 0.1  # decoded values that tell a wrong decoding
        np.testing.assert_array_equal(got.reward, want.reward)
        np.testing.assert_array_equal(got.value, want.value)
        latent = want.latent
