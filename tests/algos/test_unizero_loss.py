"""UniZero's per-sample loss and importance weights (lightzero_facts §8.3, applicable cases)."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from zeropipe.algos.losses import UnrollInputs
from zeropipe.algos.unizero import UniZeroConfig, unizero_loss
from zeropipe.config import UniZeroModelConfig, WorldModelConfig
from zeropipe.models import UniZeroNetwork, scalar_to_two_hot

B, K, A, OBS = 4, 3, 2, 4


@pytest.fixture
def setup():
    torch.manual_seed(0)
    model = UniZeroModelConfig(
        kind="mlp",
        latent_dim=16,
        hidden_dim=16,
        num_layers=1,
        head_hidden_dim=16,
        norm_type="LN",
        value_support_range=(-5, 6, 1),
        reward_support_range=(-5, 6, 1),
        world_model=WorldModelConfig(
            embed_dim=16, num_layers=1, num_heads=2, context_steps=K, dropout=0.0
        ),
    )
    cfg = UniZeroConfig(model=model, num_unroll_steps=K)
    net = UniZeroNetwork((OBS,), A, model)
    for p in net.parameters():  # the zero-initialised heads would hide per-sample differences
        torch.nn.init.normal_(p, std=0.2)
    target = copy.deepcopy(net)
    return net, target, cfg


def inputs(seed: int = 1, **masks) -> UnrollInputs:
    g = torch.Generator().manual_seed(seed)
    policy = torch.rand(B, K + 1, A, generator=g)
    ones = torch.ones
    return UnrollInputs(
        root_obs=torch.zeros(B, OBS),
        actions=torch.randint(0, A, (B, K), generator=g),
        value_target=torch.randn(B, K + 1, generator=g),
        reward_target=torch.randn(B, K, generator=g),
        policy_target=policy / policy.sum(-1, keepdim=True),
        value_mask=masks.get("value_mask", ones(B, K + 1)),
        reward_mask=masks.get("reward_mask", ones(B, K)),
        policy_mask=masks.get("policy_mask", ones(B, K + 1)),
        obs_seq=torch.randn(B, K + 1, OBS, generator=g),
    )


def test_uniform_weights_equal_the_plain_mean(setup):
    net, target, cfg = setup
    loss = unizero_loss(net, target, inputs(), cfg, train_iter=0)
    assert loss.per_sample.shape == (B,)
    weighted = (torch.ones(B) * loss.per_sample).mean()
    torch.testing.assert_close(weighted, loss.per_sample.mean())


def test_one_hot_weight_isolates_one_sample(setup):
    net, target, cfg = setup
    inp = inputs()
    loss = unizero_loss(net, target, inp, cfg, train_iter=0)
    weights = torch.tensor([0.0, 1.0, 0.0, 0.0])
    (weights * loss.per_sample).mean().backward()
    grads = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    alone = unizero_loss(net, target, inp, cfg, train_iter=0).per_sample[1] / B
    alone.backward()
    for got, want in zip(grads, [p.grad for p in net.parameters()], strict=True):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)
    # and the other samples' targets do not matter to it
    changed = inputs()
    changed.value_target[0] += 5.0
    other = unizero_loss(net, target, changed, cfg, train_iter=0).per_sample
    torch.testing.assert_close(other[1], loss.per_sample[1].detach())


def test_masked_steps_contribute_nothing(setup):
    net, target, cfg = setup
    step = torch.ones(B, K)
    step[0, 1:] = 0.0
    full = torch.ones(B, K + 1)
    full[0, 1:] = 0.0
    masks = {"reward_mask": step, "value_mask": full, "policy_mask": full}
    base = unizero_loss(net, target, inputs(**masks), cfg, train_iter=0).per_sample
    changed = inputs(**masks)
    changed.value_target[0, 1:] += 7.0
    changed.reward_target[0, 1:] -= 3.0
    changed.policy_target[0, 1:] = torch.tensor([1.0, 0.0])
    after = unizero_loss(net, target, changed, cfg, train_iter=0).per_sample
    torch.testing.assert_close(after, base)
    fully_masked = {k: torch.zeros_like(v) for k, v in masks.items()}
    zero = unizero_loss(net, target, inputs(**fully_masked), cfg, train_iter=0).per_sample
    torch.testing.assert_close(zero, torch.zeros(B))


def test_train_iter_reaches_the_loss(setup):
    net, target, cfg = setup
    loss = unizero_loss(net, target, inputs(), cfg, train_iter=123)
    assert float(loss.terms["loss_train_iter"]) == 123.0


def _constant_value(net: UniZeroNetwork, value: float) -> None:
    """The value head predicts `value` at every observation (its zero-initialised last layer's
    bias is the log two-hot of it)."""
    last = net.value_head[-1]
    two_hot = scalar_to_two_hot(torch.tensor(value), net.value_support)
    with torch.no_grad():
        last.weight.zero_()
        last.bias.copy_(two_hot.log().clamp_min(-1e4))


# v̂ = 2 everywhere; K = 3 value targets per sample (the 4th, step K, is not trained) and the
# "action k exists" mask. unroll_mean: Σ_k mask·|2 − z_k| / Σ_k mask (0 for no valid step).
PRIORITY_CASES = [
    # (z_0, z_1, z_2, z_K), mask, unroll_mean
    ((1.0, 4.0, 2.5, 9.0), (1, 1, 0), (1 + 2) / 2),
    ((2.0, 2.0, -1.0, 9.0), (1, 1, 1), (0 + 0 + 3) / 3),
    ((0.5, 3.0, 3.0, 9.0), (0, 0, 0), 0.0),
    ((-2.0, 0.0, 0.0, 9.0), (1, 0, 0), 4.0),
]


@pytest.mark.parametrize("priority_td", ["unroll_mean", "root"])
def test_priority_td_by_hand(setup, priority_td):
    net, target, cfg = setup
    _constant_value(net, 2.0)
    cfg = cfg.model_copy(update={"priority_td": priority_td})
    mask = torch.tensor([case[1] for case in PRIORITY_CASES], dtype=torch.float32)
    inp = inputs(reward_mask=mask)
    inp.value_target.copy_(torch.tensor([case[0] for case in PRIORITY_CASES]))
    loss = unizero_loss(net, target, inp, cfg, train_iter=0)
    torch.testing.assert_close(loss.root_value, torch.full((B,), 2.0))
    if priority_td == "root":
        assert loss.priority_td is None  # the learner's |v̂_0 − z_0|
        return
    want = torch.tensor([case[2] for case in PRIORITY_CASES])
    torch.testing.assert_close(loss.priority_td, want)


# Policy label smoothing's ε by hand: start·(1 − p) + end·p, p = min(1, step / decay_steps); a
# start of 0 turns it off whatever the end.
LABEL_EPS_CASES = [
    # (start, end, decay_steps, train_iter, ε)
    (0.05, 0.01, 100, 0, 0.05),
    (0.05, 0.01, 100, 50, 0.03),
    (0.05, 0.01, 100, 100, 0.01),
    (0.05, 0.01, 100, 5000, 0.01),
    (0.3, 0.1, 10, 5, 0.2),
    (0.0, 0.5, 100, 50, 0.0),
]


@pytest.mark.parametrize(("start", "end", "decay", "step", "eps"), LABEL_EPS_CASES)
def test_policy_label_eps_schedule_by_hand(setup, start, end, decay, step, eps):
    _, _, default = setup
    given = {"policy_ls_eps_start": start, "policy_ls_eps_end": end}
    cfg = UniZeroConfig.model_validate(
        {**default.model_dump(), **given, "policy_ls_eps_decay_steps": decay}
    )
    assert cfg.policy_label_eps(step) == pytest.approx(eps, abs=1e-12)
    assert default.policy_label_eps(step) == 0.0  # off by default


@pytest.mark.parametrize(
    ("smoothing", "step", "want"),
    [
        # off: the target π = [1, 0] as it is; CE = −log 0.25
        ({}, 0, -math.log(0.25)),
        # ε = 0.2 at step 0: target [0.9, 0.1]; CE = −(0.9·log 0.25 + 0.1·log 0.75)
        ({"policy_ls_eps_start": 0.2}, 0, -(0.9 * math.log(0.25) + 0.1 * math.log(0.75))),
        # ε = 0.3·(1 − 1/2) + 0.1·1/2 = 0.2 halfway through a 10-step decay: the same target
        (
            {"policy_ls_eps_start": 0.3, "policy_ls_eps_end": 0.1, "policy_ls_eps_decay_steps": 10},
            5,
            -(0.9 * math.log(0.25) + 0.1 * math.log(0.75)),
        ),
    ],
)
def test_smoothed_policy_target_by_hand(setup, smoothing, step, want):
    net, target, cfg = setup
    cfg = cfg.model_copy(update={"policy_entropy_weight": 0.0, **smoothing})
    last = net.policy_head[-1]
    with torch.no_grad():  # the policy predicts [0.25, 0.75] at every observation
        last.weight.zero_()
        last.bias.copy_(torch.tensor([0.25, 0.75]).log())
    inp = inputs()
    inp.policy_target.copy_(torch.tensor([1.0, 0.0]))
    loss = unizero_loss(net, target, inp, cfg, train_iter=step)
    torch.testing.assert_close(float(loss.terms["policy_loss"]), want, atol=1e-6, rtol=0)
