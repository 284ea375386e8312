"""The train/eval-mode check: it sees BatchNorm running statistics that no longer fit, warns once,
and changes nothing the run depends on (running statistics, RNG, weights, trajectory)."""

from __future__ import annotations

import copy
import logging
from types import SimpleNamespace

import pytest
import torch

from tests.buffer.factories import make_segment
from zeropipe.learner.learner import Learner
from zeropipe.learner.mode_check import ModeCheck, has_batch_norm, value_mode_gap

from .factories import OBS, parameters, sample_batch, tiny_network, tiny_policy


def _bn_net(seed: int = 0):
    cfg = tiny_policy(norm_type="BN")
    net = tiny_network(cfg, seed=seed, reinit=True)
    return cfg, net


def _obs(n: int = 16) -> torch.Tensor:
    return torch.linspace(-1, 1, n * OBS).reshape(n, OBS)


def _skew_running_stats(net) -> None:
    """Running statistics far from any batch's: eval mode computes another function."""
    for m in net.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.running_mean.fill_(50.0)
            m.running_var.fill_(1e-2)


def test_fitting_running_statistics_give_no_gap_and_skewed_ones_a_large_gap():
    _, net = _bn_net()
    obs = _obs()
    # running statistics set to these very batch statistics: both modes compute one function
    for m in net.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.momentum = None  # cumulative average: one pass sets them to the batch's
            m.reset_running_stats()
    net.train()
    with torch.no_grad():
        net.initial_inference(obs)
    # the batch variance BN normalises with is biased, the running one unbiased (n/(n-1))
    assert value_mode_gap(net, obs) < 0.1
    _skew_running_stats(net)
    assert value_mode_gap(net, obs) > 0.5


class _DropoutNet(torch.nn.Module):
    """BatchNorm and dropout in front of a value head: the train-mode pass draws from the RNG."""

    def __init__(self, support: torch.Tensor) -> None:
        super().__init__()
        self.value_support = support
        self.body = torch.nn.Sequential(
            torch.nn.Linear(OBS, 8), torch.nn.BatchNorm1d(8), torch.nn.Dropout(0.5)
        )
        self.head = torch.nn.Linear(8, support.size)

    def initial_inference(self, obs):
        return SimpleNamespace(value_logits=self.head(self.body(obs)))


@pytest.mark.parametrize("kind", ["muzero", "dropout"])
def test_the_check_leaves_running_statistics_rng_and_mode_as_they_were(kind):
    _, net = _bn_net()
    if kind == "dropout":
        net = _DropoutNet(net.value_support)
    _skew_running_stats(net)
    before = {name: b.clone() for name, b in net.named_buffers()}
    torch.manual_seed(7)
    rng = torch.get_rng_state()
    net.eval()
    value_mode_gap(net, _obs())
    assert not net.training
    assert torch.equal(torch.get_rng_state(), rng)
    for name, b in net.named_buffers():
        assert torch.equal(b, before[name]), name


def test_it_warns_once_and_only_for_batch_norm_networks(caplog):
    _, net = _bn_net()
    _skew_running_stats(net)
    check = ModeCheck(net, every=2)
    with caplog.at_level(logging.WARNING, logger="zeropipe.learner.mode_check"):
        for step in range(1, 7):
            check.after_step(net, _obs(), step)
    warnings = [r for r in caplog.records if "model.norm_type: LN" in r.getMessage()]
    assert len(warnings) == 1 and "learner step 2" in warnings[0].getMessage()
    assert check.last_gap > 0.5
    ln_net = tiny_network(tiny_policy(norm_type="LN"))
    assert not has_batch_norm(ln_net) and not ModeCheck(ln_net).enabled


def test_learner_steps_with_the_check_at_every_step_follow_the_same_trajectory():
    cfg, net = _bn_net()
    batch = sample_batch(cfg, 8, make_segment(12, ends_episode=True, terminated=True))
    runs = []
    for every in (1, 10**9):
        learner = Learner(copy.deepcopy(net), cfg, 1, seed=0)
        learner.mode_check.every = every
        torch.manual_seed(0)
        for _ in range(4):
            learner.step(batch)
        assert learner.mode_check.enabled
        runs.append((parameters(learner.network), dict(learner.network.named_buffers())))
    (p1, b1), (p2, b2) = runs
    assert all(torch.equal(x, y) for x, y in zip(p1, p2, strict=True))
    assert all(torch.equal(b1[k], b2[k]) for k in b1)
