"""CPU speed settings of the learner: channels-last conv weights (same arithmetic, another memory
order) and the optional bfloat16 autocast of the unroll, the loss and the bootstrap values."""

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


# Two layouts sum in different orders, so their trained weights differ by rounding; and Adam
# divides every gradient by its own running magnitude, so an element whose gradient is near zero
# moves by up to the learning rate either way. A fixed absolute tolerance on the weights thus
# measures the machine's summation order (the difference was 1.26e-5 with one torch thread against
# an atol of 1e-5, out of 9e-3 that three steps moved a weight). What is compared instead is the
# difference next to how far training moved each tensor: measured, at most 4e-4 of it (one and two
# threads); a conv whose gradient is read spatially transposed gives 0.2 and more (test below).
SAME_TRAINING = 1e-2


def _moved_apart(a: torch.nn.Module, b: torch.nn.Module, start: list[torch.Tensor]) -> float:
    """max over parameter tensors of |a - b| / |a - start| (L2 norms): how far two trainings
    ended apart, as a fraction of how far training moved the tensor."""
    worst = 0.0
    for pa, pb, p0 in zip(a.parameters(), b.parameters(), start, strict=True):
        apart = float(torch.linalg.vector_norm(pa.detach() - pb.detach()))
        moved = float(torch.linalg.vector_norm(pa.detach() - p0))
        if apart > 0.0:
            worst = max(worst, apart / moved if moved > 0.0 else float("inf"))
    return worst


def _train_both_layouts(tmp_path, alter_plain=None):
    """Three learner steps on the same batches from the same weights, once with channels-last
    conv weights and once contiguous (`alter_plain` may change the contiguous network first).
    Returns the two learners' losses, the two networks and the starting weights."""
    cfg = tiny_2048_config(tmp_path / "run", learner_autocast="none")  # float32 on every CPU
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
    start = [p.detach().clone() for p in comps.learner.network.parameters()]
    plain_net = copy.deepcopy(comps.learner.network).to(memory_format=torch.contiguous_format)
    if alter_plain is not None:
        alter_plain(plain_net)
    learners = [
        Learner(copy.deepcopy(comps.learner.network), cfg.policy, 3, seed=0),
        Learner(plain_net, cfg.policy, 3, seed=0),
    ]
    losses = [[learner.step(b).metrics["total_loss"] for b in batches] for learner in learners]
    return losses, learners[0].network, learners[1].network, start


def test_channels_last_trains_the_same_as_contiguous_weights(tmp_path):
    losses, channels_last, plain, start = _train_both_layouts(tmp_path)
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-4)
    assert _moved_apart(channels_last, plain, start) <= SAME_TRAINING


def test_the_comparison_sees_a_conv_gradient_read_transposed(tmp_path):
    """A layout bug in the backward pass only (the forward is right, so the first loss agrees):
    one conv's gradient arrives with its kernel's rows and columns swapped."""

    def transpose_first_conv_gradient(net: torch.nn.Module) -> None:
        _conv_weights(net)[0].register_hook(lambda grad: grad.transpose(-1, -2))

    losses, channels_last, plain, start = _train_both_layouts(
        tmp_path, transpose_first_conv_gradient
    )
    assert losses[0][0] == pytest.approx(losses[1][0], rel=1e-4)
    assert _moved_apart(channels_last, plain, start) > 10 * SAME_TRAINING


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


def test_bf16_autocast_also_runs_the_bootstrap_values_in_bfloat16():
    """The target network's bootstrap forward pass (a third of a Pong learner step) runs under
    the same autocast; the values are read out in float32."""
    batch = sample_batch(
        tiny_policy(norm_type="BN"), 8, make_segment(12, ends_episode=True, terminated=True)
    )
    frames = batch.bootstrap_obs.reshape(-1, *batch.bootstrap_obs.shape[2:])
    values = {}
    for mode in ("none", "bf16"):
        cfg = tiny_policy(norm_type="BN", learner_autocast=mode)
        learner = Learner(tiny_network(cfg, reinit=True), cfg, 1, seed=0)
        values[mode] = learner.targets.bootstrap_values(frames)
        assert values[mode].dtype == np.float32
    assert not np.array_equal(values["none"], values["bf16"])  # it ran in bfloat16 ...
    np.testing.assert_allclose(values["bf16"], values["none"], rtol=0.05, atol=0.05)  # ... close
