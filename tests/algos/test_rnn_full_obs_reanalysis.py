"""muzero_rnn_full_obs reanalyses without root noise (the reference's `reanalyze_noise=False`),
while its collect search keeps the noise; plain muzero's reanalysis keeps it too."""

from __future__ import annotations

import numpy as np
import torch

from tests.learner.factories import OBS, A, tiny_policy
from zeropipe.algos.network_search import NetworkSearch
from zeropipe.algos.registry import algorithm
from zeropipe.algos.targets import TargetComputer
from zeropipe.mcts import ActingParams, SearchConfig

# Large noise so that a noisy root's visit shares move with the seed; ties to the first action,
# so that the noise is the only thing a seed can change.
CFG = SearchConfig(
    num_simulations=16,
    discount=0.9,
    root_noise_weight=0.75,
    root_dirichlet_alpha=0.3,
    tie_break="first",
    eval_tie_break="first",
)


def _net():
    cfg = tiny_policy(type="muzero_rnn_full_obs")
    torch.manual_seed(0)
    net = algorithm("muzero_rnn_full_obs").family.build_network((OBS,), A, cfg)
    with torch.no_grad():  # zero-initialised heads would give every action the same prior
        for p in net.parameters():
            torch.nn.init.normal_(p, std=0.3)
    return net.eval()


def _frames() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(6, 1, OBS)).astype(np.float32)


def _reanalysed(policy_type: str, seed: int) -> np.ndarray:
    """Policy targets of the learner's reanalysis path (`TargetComputer`) with a given seed."""
    computer = TargetComputer(_net(), 1, CFG, algorithm(policy_type).search_policy, 1.0, seed)
    return computer.search_policy_targets(_frames(), np.ones((6, A), bool))


def _searched(mode: str, seed: int) -> np.ndarray:
    search = NetworkSearch(_net(), 1, algorithm("muzero_rnn_full_obs").search_policy)
    rng = np.random.default_rng(seed)
    result = search.search(_frames(), np.ones((6, A), bool), CFG, rng, ActingParams(mode))
    return result.output.policy_target


def test_reanalysis_adds_no_root_noise():
    quiet = [_reanalysed("muzero_rnn_full_obs", seed) for seed in range(3)]
    assert np.array_equal(quiet[0], quiet[1]) and np.array_equal(quiet[0], quiet[2])
    assert np.array_equal(quiet[0], _searched("eval", 0))  # eval: the search without noise


def test_collect_and_plain_muzero_reanalysis_keep_the_noise():
    assert not np.array_equal(_searched("collect", 0), _searched("collect", 1))
    noisy = [_reanalysed("muzero", seed) for seed in range(2)]
    assert not np.array_equal(noisy[0], noisy[1])
