"""CPU speed settings of the learner: channels-last conv weights (same arithmetic, another memory
order) and the optional bfloat16 autocast of the unroll and loss."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from tests.buffer.factories import make_segment
from tests.tiny import tiny_2048_config
from zeropipe.learner.learner import Learner
from zeropipe.pipeline.build import build_collector, build_driver

from .factories import sample_batch, tiny_network, tiny_policy

pytestmark = pytest.mark.timeout(120)


def _conv_weights(net: torch.nn.Module) -> list[torch.Tensor]:
    return [p for p in net.parameters() if p.dim() == 4]


def test_channels_last_trains_the_same_as_contiguous_weights(tmp_path):
    cfg = tiny_2048_config(tmp_path / "run")
    assert cfg.policy.channels_last  # the default
    comps = build_driver(cfg)
    convs = _conv_weights(comps.learner.network)
    assert convs and all(p.is_contiguous(memory_format=torch.channels_last) for p in convs)
    assert not all(p.is_contiguous() for p in convs)  # the layout really is another one
    collector = build_collector(cfg)
    try:
        comps.buffer.push(collector.collect(temperature=1.0, epsilon=0.0).segments)
    finally:
        collector.close()
    batches = [comps.buffer.sample(8) for _ in range(3)]
    plain_net = copy.deepcopy(comps.learner.network).to(memory_format=torch.contiguous_format)
    learners = [
        Learner(copy.deepcopy(comps.learner.network), cfg.policy, 3, seed=0),
        Learner(plain_net, cfg.policy, 3, seed=0),
    ]
    losses = [[learner.step(b).metrics["total_loss"] for b in batches] for learner in learners]
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-4)
    pairs = zip(learners[0].network.parameters(), learners[1].network.parameters(), strict=True)
    for a, b in pairs:
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_bf16_autocast_learns_and_keeps_float32_state():
    batch = sample_batch(
        tiny_policy(norm_type="BN"), 8, make_segment(12, ends_episode=True, terminated=True)
    )
    runs = {}
    for mode in ("none", "bf16"):
        cfg = tiny_policy(norm_type="BN", learning_rate=3e-3, learner_autocast=mode)
        learner = Learner(tiny_network(cfg, reinit=False), cfg, 1, seed=0)
        results = [learner.step(batch) for _ in range(20)]
        runs[mode] = [r.metrics["total_loss"] for r in results]
        assert all(p.dtype == torch.float32 for p in learner.network.parameters())
        assert results[-1].priorities.dtype == np.float32
    fp32, bf16 = runs["none"], runs["bf16"]
    assert bf16[-1] < 0.85 * bf16[0], bf16  # it learns
    assert fp32[0] != bf16[0]  # the forward pass really ran in bfloat16 ...
    assert bf16[0] == pytest.approx(fp32[0], rel=0.05)  # ... close to float32
