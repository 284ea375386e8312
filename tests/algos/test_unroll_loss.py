"""The MuZero unroll loss applies its masks: targets past the stored data change nothing.

Sample 0 of the batch has stored data for the root and the first unroll step only: reward_mask
[1, 0], value_mask and policy_mask [1, 1, 0]. Its loss must not read the targets (nor the SSL
observation) of the masked positions, nor the action whose consequences are all masked, and must
read every unmasked one.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tests.learner.factories import random_unroll_inputs, tiny_network, tiny_policy
from zeropipe.algos.losses import LossWeights, UnrollInputs, unroll_loss

B, K = 3, 2
WEIGHTS = LossWeights(value=0.25, reward=1.0, policy=1.0, entropy=0.1, ssl=0.0)
SSL_WEIGHTS = dataclasses.replace(WEIGHTS, ssl=2.0)


@pytest.fixture
def net():
    """LayerNorm everywhere and no SSL projection: samples are independent."""
    return tiny_network(tiny_policy(num_unroll_steps=K))


@pytest.fixture
def ssl_net():
    """With the SSL projection (BatchNorm: in train mode it couples the samples of a batch)."""
    return tiny_network(tiny_policy(num_unroll_steps=K, ssl_loss_weight=SSL_WEIGHTS.ssl))


def _inputs(seed: int = 1) -> UnrollInputs:
    return random_unroll_inputs(B, K, seed)


def _changed(inp: UnrollInputs, name: str, index: tuple, value=None) -> UnrollInputs:
    """`inp` with `name[index] = value` (None: flip the action)."""
    tensor = getattr(inp, name).clone()
    if value is None:
        value = 1 - int(tensor[index])
    tensor[index] = torch.as_tensor(value, dtype=tensor.dtype)
    return dataclasses.replace(inp, **{name: tensor})


def _loss(net, inp: UnrollInputs, weights: LossWeights = WEIGHTS) -> torch.Tensor:
    return unroll_loss(net, inp, weights).per_sample.detach()  # [B]


MASKED = [
    ("value_target", (0, 2), 3.5),
    ("reward_target", (0, 1), -2.5),
    ("policy_target", (0, 2), [1.0, 0.0]),
    ("actions", (0, 1), None),  # leads only to a masked reward, value and policy
]
UNMASKED = [
    ("value_target", (0, 1), 3.5),
    ("reward_target", (0, 0), -2.5),
    ("policy_target", (0, 1), [1.0, 0.0]),
    ("policy_target", (0, 0), [0.0, 1.0]),
    ("actions", (0, 0), None),
    ("value_target", (1, 2), 3.5),  # an unmasked sample keeps its last step
]


def _ids(cases) -> list[str]:
    return [f"{name}{list(index)}" for name, index, _ in cases]


@pytest.mark.parametrize(("name", "index", "value"), MASKED, ids=_ids(MASKED))
def test_masked_positions_change_nothing(net, name, index, value):
    inp = _inputs()
    after = _loss(net, _changed(inp, name, index, value))
    torch.testing.assert_close(after, _loss(net, inp), rtol=0, atol=0)


@pytest.mark.parametrize(("name", "index", "value"), UNMASKED, ids=_ids(UNMASKED))
def test_unmasked_positions_change_only_their_sample(net, name, index, value):
    inp = _inputs()
    base = _loss(net, inp)
    after = _loss(net, _changed(inp, name, index, value))
    sample = index[0]
    assert abs(float(after[sample] - base[sample])) > 1e-4
    others = [b for b in range(B) if b != sample]
    torch.testing.assert_close(after[others], base[others], rtol=0, atol=0)


def test_ssl_consistency_is_masked_by_the_reward_mask(ssl_net):
    inp = _inputs()
    base = _loss(ssl_net, inp, SSL_WEIGHTS)
    frame = [9.0, -9.0, 9.0, -9.0]
    # obs_seq[:, k+1] is the consistency target of unroll step k, kept where reward_mask[:, k]
    masked = _loss(ssl_net, _changed(inp, "obs_seq", (0, 2), frame), SSL_WEIGHTS)
    unmasked = _loss(ssl_net, _changed(inp, "obs_seq", (0, 1), frame), SSL_WEIGHTS)
    assert float(masked[0]) == float(base[0])
    assert abs(float(unmasked[0] - base[0])) > 1e-4
    assert float(_loss(ssl_net, inp, WEIGHTS)[0]) != float(base[0])  # the SSL term is on


def test_a_fully_masked_sample_has_zero_loss_and_no_gradient(net):
    inp = _inputs()
    for name in ("value_mask", "reward_mask", "policy_mask"):
        inp = _changed(inp, name, (0,), 0.0)
    loss = unroll_loss(net, inp, WEIGHTS).per_sample
    assert float(loss[0].detach()) == 0.0
    loss[0].backward()
    assert all(p.grad is None or not p.grad.any() for p in net.parameters())
    assert float(loss[1:].detach().abs().min()) > 0.0


def test_absorbing_states_train_value_and_reward_toward_zero(net, ssl_net):
    """Sample 0's state c = 2 past a true terminal is absorbing: the value target there and the
    reward target of the step into it are read; its policy target and SSL observation are not."""
    absorbing = torch.zeros(B, K + 1)
    absorbing[0, 2] = 1.0
    inp = dataclasses.replace(_inputs(), absorbing=absorbing)
    base = _loss(net, inp)
    for name, index in (("reward_target", (0, 1)), ("value_target", (0, 2))):
        after = _loss(net, _changed(inp, name, index, 3.5))
        assert abs(float(after[0] - base[0])) > 1e-4, name
        torch.testing.assert_close(after[1:], base[1:], rtol=0, atol=0)
    after = _loss(net, _changed(inp, "policy_target", (0, 2), [1.0, 0.0]))
    torch.testing.assert_close(after, base, rtol=0, atol=0)
    ssl_base = _loss(ssl_net, inp, SSL_WEIGHTS)
    frame = [9.0, -9.0, 9.0, -9.0]
    ssl_after = _loss(ssl_net, _changed(inp, "obs_seq", (0, 2), frame), SSL_WEIGHTS)
    assert float(ssl_after[0]) == float(ssl_base[0])
