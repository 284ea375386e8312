"""UniZero's encoder clip and head clip: the annealed thresholds by hand, the weights each scales
on a small batch by hand, and where the learner scales them (after the backward pass, before the
optimizer step)."""

from __future__ import annotations

import copy

import pytest
import torch

from tests.buffer.factories import make_segment
from tests.learner.factories import OBS, A, parameters, sample_batch, tiny_policy
from zeropipe.algos.output_clip import HeadClipSchedule, annealed_threshold
from zeropipe.algos.registry import algorithm
from zeropipe.learner.learner import Learner


@pytest.mark.parametrize(
    ("anneal_type", "step", "want"),
    [
        # start 30, end 10 over 100 steps; cosine: 10 + 20·½(1 + cos(π·step/100))
        ("cosine", 0, 30.0),
        ("cosine", 25, 10.0 + 10.0 * (1.0 + 0.5**0.5)),
        ("cosine", 50, 20.0),
        ("cosine", 100, 10.0),
        ("cosine", 250, 10.0),
        # linear: 30·(1 − p) + 10·p
        ("linear", 0, 30.0),
        ("linear", 25, 25.0),
        ("linear", 50, 20.0),
        ("linear", 100, 10.0),
        ("linear", 250, 10.0),
    ],
)
def test_annealed_threshold_by_hand(anneal_type, step, want):
    assert annealed_threshold(anneal_type, 30.0, 10.0, 100, step) == pytest.approx(want)


@pytest.mark.parametrize(
    ("options", "step", "want"),
    [
        ({}, 0, 0.0),  # off
        ({"latent_norm_clip_threshold": 10.0}, 0, 10.0),
        ({"latent_norm_clip_threshold": 10.0}, 10**6, 10.0),
        ({"use_encoder_clip_annealing": True, "encoder_clip_anneal_steps": 100}, 50, 20.0),
        (  # annealing ignores the fixed threshold
            {
                "use_encoder_clip_annealing": True,
                "encoder_clip_anneal_type": "linear",
                "encoder_clip_anneal_steps": 100,
                "latent_norm_clip_threshold": 5.0,
            },
            25,
            25.0,
        ),
    ],
)
def test_encoder_clip_threshold_by_hand(options, step, want):
    cfg = tiny_policy(type="unizero", model={"world_model": {"context_steps": 2}}, **options)
    assert cfg.encoder_clip_threshold(step) == pytest.approx(want)


def test_a_head_schedule_is_fixed_without_annealing():
    fixed = HeadClipSchedule(use_annealing=False, clip_threshold=7.0)
    annealed = HeadClipSchedule(start_value=20.0, end_value=4.0, anneal_steps=10)
    assert [fixed.threshold(s) for s in (0, 5, 10**6)] == [7.0, 7.0, 7.0]
    assert [annealed.threshold(s) for s in (0, 5, 10)] == pytest.approx([20.0, 12.0, 4.0])


def _unizero(**options):
    cfg = tiny_policy(
        type="unizero",
        model={"world_model": {"context_steps": 2, "dropout": 0.0}},
        optim_type="SGD",
        learning_rate=0.05,
        momentum=0.0,
        weight_decay=0.0,
        grad_clip_value=1e9,
        **options,
    )
    torch.manual_seed(0)
    net = algorithm("unizero").family.build_network((OBS,), A, cfg)
    with torch.no_grad():
        for p in net.parameters():
            torch.nn.init.normal_(p, std=0.2)
    return cfg, net


def _constant_tokens(net, bias: list[float]) -> None:
    """Every observation token is `bias` (the final LayerNorm's weight 0)."""
    with torch.no_grad():
        net.tokenizer.norm.weight.zero_()
        net.tokenizer.norm.bias.zero_()
        net.tokenizer.norm.bias[: len(bias)] = torch.tensor(bias)


def _constant_policy_logits(net, logits: list[float]) -> None:
    with torch.no_grad():
        net.policy_head[-1].weight.zero_()
        net.policy_head[-1].bias.copy_(torch.tensor(logits))


def test_the_encoder_clip_of_a_small_batch_by_hand():
    """Token norms 5 and 10 against c = 5: the final LayerNorm's weight and bias by 0.5."""
    cfg, net = _unizero(latent_norm_clip_threshold=5.0)
    tokens = torch.tensor([[[3.0, 4.0], [6.0, 8.0]]])  # [B=1, K=2, 2]
    scales, metrics = cfg.output_clips(net, tokens, None, train_iter=0)
    (scale,) = scales
    assert scale.factor == pytest.approx(0.5)
    assert scale.params == (net.tokenizer.norm.weight, net.tokenizer.norm.bias)
    assert float(metrics["encoder_clip_max_latent_norm"]) == pytest.approx(10.0)
    # at the threshold nothing is scaled
    assert cfg.output_clips(net, tokens * 0.5, None, train_iter=0)[0] == ()


def test_the_encoder_clip_scales_the_whole_tokenizer_under_simnorm():
    """SimNorm has no parameters: every tokenizer parameter is scaled (the reference's
    fallback)."""
    cfg, net = _unizero(latent_norm_clip_threshold=5.0)
    cfg.model.world_model.final_norm_option_in_encoder = "SimNorm"
    net = algorithm("unizero").family.build_network((OBS,), A, cfg)
    tokens = torch.tensor([[[3.0, 4.0], [6.0, 8.0]]])  # [B=1, K=2, 2]
    (scale,) = cfg.output_clips(net, tokens, None, train_iter=0)[0]
    assert scale.params == tuple(net.tokenizer.parameters()) and len(scale.params) > 2


def _step_difference(options: dict, prepare, train_iter: int = 0) -> tuple:
    """(network, per-parameter difference of one SGD step with `options` less the same step
    without them), from one prepared network and batch."""
    cfg_on, net = _unizero(**options)
    cfg_off, _ = _unizero()
    prepare(net)
    batch = sample_batch(cfg_off, 4, make_segment(12, ends_episode=True, terminated=True))
    after = []
    for cfg in (cfg_on, cfg_off):
        learner = Learner(copy.deepcopy(net), cfg, 1, seed=0)
        learner.train_iter = train_iter
        learner.step(batch)
        after.append(parameters(learner.network))
    names = [name for name, _ in net.named_parameters()]
    return net, dict(zip(names, [on - off for on, off in zip(*after, strict=True)], strict=True))


@pytest.mark.parametrize(
    ("options", "factor"),
    [
        ({"latent_norm_clip_threshold": 10.0}, 10.0 / 50.0),
        # cosine 30 → 10 at step 0: c = 30
        ({"use_encoder_clip_annealing": True}, 30.0 / 50.0),
        ({"latent_norm_clip_threshold": 50.0}, 1.0),  # the norm does not exceed c
    ],
)
def test_the_encoder_clip_scales_the_final_norm_before_the_step(options, factor):
    """Every token is (30, 40, 0, ...), norm 50. The gradient is the unscaled weights' one, so
    with SGD the step with the clip less the step without is (factor − 1)·w for the final
    LayerNorm's weight and bias, and 0 for every other parameter."""
    net, diff = _step_difference(options, lambda n: _constant_tokens(n, [30.0, 40.0]))
    for name, d in diff.items():
        want = torch.zeros_like(d)
        if name.startswith("tokenizer.norm."):
            want = (factor - 1.0) * dict(net.named_parameters())[name].detach()
        torch.testing.assert_close(d, want, atol=2e-5, rtol=0.0, msg=name)


FIXED = {"use_annealing": False}  # the default clip_threshold, 15


@pytest.mark.parametrize(
    ("head_clip", "train_iter", "factor"),
    [
        # policy logits (20, −25): max |logit| 25
        ({"enabled_heads": ["policy"], "policy": {**FIXED, "clip_threshold": 10}}, 0, 0.4),
        ({"enabled_heads": ["policy"], "policy": {"start_value": 20.0}}, 0, 0.8),
        ({"enabled_heads": ["policy"]}, 0, 1.0),  # the default schedule starts at 30
        ({"enabled_heads": ["value", "reward"], "value": FIXED}, 0, 1.0),  # their logits: 0
        ({"enabled_heads": ["policy"], "policy": FIXED, "monitor_freq": 2}, 1, 1.0),
        ({"enabled_heads": ["policy"], "policy": FIXED, "monitor_freq": 2}, 2, 0.6),
    ],
)
def test_the_head_clip_scales_every_parameter_of_the_head_before_the_step(
    head_clip, train_iter, factor
):
    """The step with the clip less the step without is (factor − 1)·w for every parameter of
    the policy head and 0 for every other (fixed threshold 15 where not given)."""

    def prepare(net):
        _constant_policy_logits(net, [20.0, -25.0])
        with torch.no_grad():  # the value and reward heads' logits stay 0
            for head in (net.value_head, net.reward_head):
                head[-1].weight.zero_()
                head[-1].bias.zero_()

    options = {"use_head_clip": True, "head_clip": head_clip}
    net, diff = _step_difference(options, prepare, train_iter)
    for name, d in diff.items():
        want = torch.zeros_like(d)
        if name.startswith("policy_head."):
            want = (factor - 1.0) * dict(net.named_parameters())[name].detach()
        torch.testing.assert_close(d, want, atol=2e-5, rtol=0.0, msg=name)


def test_the_clips_report_what_they_saw():
    cfg, net = _unizero(
        latent_norm_clip_threshold=10.0,
        use_head_clip=True,
        head_clip={"enabled_heads": ["policy"], "policy": {"use_annealing": False}},
    )
    _constant_tokens(net, [30.0, 40.0])
    _constant_policy_logits(net, [20.0, -25.0])
    batch = sample_batch(cfg, 4, make_segment(12, ends_episode=True, terminated=True))
    metrics = Learner(net, cfg, 1, seed=0).step(batch).metrics
    assert metrics["encoder_clip_max_latent_norm"] == pytest.approx(50.0, rel=1e-5)
    assert metrics["encoder_clip_threshold"] == 10.0
    assert metrics["head_clip_policy_max_logit"] == pytest.approx(25.0, rel=1e-5)
    assert metrics["head_clip_policy_threshold"] == 15.0
