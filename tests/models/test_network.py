"""MuZeroNetwork: shapes for vector and image inputs, zero-initialised heads, gradients, SSL."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from zeropipe.config import ConfigError, ProjectionModelConfig, ValuePrefixConfig
from zeropipe.models import EfficientZeroNetwork, MuZeroNetwork, NetworkOutput, logits_to_scalar

SMALL_SIZES = {
    "latent_dim": 16,
    "hidden_dim": 16,
    "head_hidden_dim": 8,
    "num_channels": 8,
    "head_channels": 2,
    "proj_hidden_dim": 16,
    "proj_out_dim": 8,
    "pred_hidden_dim": 8,
}
SMALL_SUPPORT = {"value_support_range": (-10, 11, 1), "reward_support_range": (-5, 6, 1)}


def small(**overrides: object) -> ProjectionModelConfig:
    """A fast config: small widths, default supports unless overridden."""
    return ProjectionModelConfig(**{**SMALL_SIZES, **overrides})


def _check_output(out: NetworkOutput, net: MuZeroNetwork, batch: int) -> None:
    assert out.latent.shape == (batch, *net.latent_shape)
    assert out.value_logits.shape == (batch, net.value_support.size)
    assert out.reward_logits.shape == (batch, net.reward_support.size)
    assert out.policy_logits.shape == (batch, net.action_space_size)
    for tensor in (out.latent, out.value_logits, out.reward_logits, out.policy_logits):
        assert torch.isfinite(tensor).all()


def _unroll(net: MuZeroNetwork, obs: torch.Tensor, num_steps: int) -> list[NetworkOutput]:
    outputs = [net.initial_inference(obs)]
    for step in range(num_steps):
        action = torch.arange(obs.shape[0]).add(step).remainder(net.action_space_size)  # [B]
        outputs.append(net.recurrent_inference(outputs[-1].latent, action))
    return outputs


@pytest.mark.parametrize("norm_type", ["BN", "LN"])
def test_vector_network_shapes(norm_type: str) -> None:
    cfg = small(norm_type=norm_type)
    net = MuZeroNetwork((4,), 2, cfg)
    assert net.kind == "mlp" and net.latent_shape == (16,)
    for out in _unroll(net, torch.randn(5, 4), 2):
        _check_output(out, net, 5)


def test_default_vector_network_matches_cartpole_sizes() -> None:
    net = MuZeroNetwork((4,), 2, ProjectionModelConfig())
    out = net.initial_inference(torch.randn(3, 4))
    assert out.latent.shape == (3, 128)
    assert out.value_logits.shape == out.reward_logits.shape == (3, 601)


def test_image_network_64px_uint8() -> None:
    net = MuZeroNetwork((4, 64, 64), 6, ProjectionModelConfig(proj_hidden_dim=16, proj_out_dim=8))
    obs = torch.randint(0, 256, (2, 4, 64, 64), dtype=torch.uint8)
    outputs = _unroll(net, obs, 1)
    assert net.kind == "conv"
    assert outputs[0].latent.shape == (2, 64, 8, 8)
    for out in outputs:
        _check_output(out, net, 2)


@pytest.mark.parametrize("side,latent_side", [(96, 6), (84, 6), (64, 8)])
def test_image_network_downsamples_like_lightzero(side: int, latent_side: int) -> None:
    net = MuZeroNetwork((3 * 1, side, side), 4, small())
    assert net.latent_shape == (8, latent_side, latent_side)
    for out in _unroll(net, torch.rand(2, 3, side, side), 1):
        _check_output(out, net, 2)


def test_image_network_without_downsampling_keeps_resolution() -> None:
    net = MuZeroNetwork((2, 5, 7), 3, small(downsample=False, norm_type="LN"))
    assert net.latent_shape == (8, 5, 7)
    for out in _unroll(net, torch.rand(2, 2, 5, 7), 2):
        _check_output(out, net, 2)


def test_uint8_inputs_are_scaled_to_unit_range() -> None:
    net = MuZeroNetwork((2, 16, 16), 3, small()).eval()
    obs = torch.randint(0, 256, (2, 2, 16, 16), dtype=torch.uint8)
    from_uint8 = net.initial_inference(obs).latent
    from_float = net.initial_inference(obs.float() / 255.0).latent
    torch.testing.assert_close(from_uint8, from_float)


def test_kind_is_resolved_or_rejected() -> None:
    with pytest.raises(ConfigError, match="kind=conv"):
        MuZeroNetwork((4,), 2, ProjectionModelConfig(kind="conv"))
    with pytest.raises(ConfigError, match="kind=auto"):
        MuZeroNetwork((4, 4), 2, ProjectionModelConfig())
    flat = MuZeroNetwork((2, 6, 6), 3, small(kind="mlp"))
    assert flat.kind == "mlp"
    _check_output(flat.initial_inference(torch.rand(2, 2, 6, 6)), flat, 2)


@pytest.mark.parametrize("input_shape", [(4,), (2, 16, 16)])
def test_zero_initialised_heads_predict_zero_and_uniform(input_shape: tuple[int, ...]) -> None:
    net = MuZeroNetwork(input_shape, 3, small()).eval()
    with torch.inference_mode():
        outputs = _unroll(net, torch.randn(4, *input_shape), 1)
    for out in outputs:
        zeros = torch.zeros(4)
        value = logits_to_scalar(out.value_logits, net.value_support)
        reward = logits_to_scalar(out.reward_logits, net.reward_support)
        torch.testing.assert_close(value, zeros, atol=1e-4, rtol=0)
        torch.testing.assert_close(reward, zeros, atol=1e-4, rtol=0)
        torch.testing.assert_close(out.policy_logits, torch.zeros(4, 3))


def test_initial_reward_is_an_exact_zero_two_hot() -> None:
    net = MuZeroNetwork((4,), 2, small(**SMALL_SUPPORT))
    reward_logits = net.initial_inference(torch.randn(3, 4)).reward_logits
    probs = torch.softmax(reward_logits, -1)
    assert torch.equal(probs, torch.zeros(3, 11).index_fill_(1, torch.tensor([5]), 1.0))
    assert logits_to_scalar(reward_logits, net.reward_support).eq(0).all()


def test_state_norm_scales_latents_to_unit_range() -> None:
    net = MuZeroNetwork((2, 16, 16), 3, small(state_norm=True))
    for out in _unroll(net, torch.rand(3, 2, 16, 16), 2):
        flat = out.latent.flatten(1)
        torch.testing.assert_close(flat.amin(1), torch.zeros(3))
        torch.testing.assert_close(flat.amax(1), torch.ones(3), atol=1e-6, rtol=0)


def _randomise_last_layers(net: nn.Module) -> None:
    for module in net.modules():
        if isinstance(module, nn.Linear) and not module.weight.any():
            nn.init.normal_(module.weight, std=0.1)


@pytest.mark.parametrize("input_shape", [(4,), (2, 16, 16)])
def test_gradients_flow_through_an_unroll(input_shape: tuple[int, ...]) -> None:
    net = MuZeroNetwork(input_shape, 3, small())
    _randomise_last_layers(net)  # zero heads pass no gradient back at the very first step
    obs = torch.rand(4, *input_shape)
    outputs = _unroll(net, obs, 3)
    loss = sum(
        out.value_logits.logsumexp(-1).sum() + out.policy_logits.pow(2).sum() for out in outputs
    )
    loss = loss + sum(out.reward_logits.logsumexp(-1).sum() for out in outputs[1:])
    target = net.project(net.initial_inference(obs).latent, with_grad=False)
    loss = (
        loss
        - nn.functional.cosine_similarity(
            net.project(outputs[-1].latent, with_grad=True), target
        ).sum()
    )
    loss.backward()
    for name, param in net.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name
        assert torch.isfinite(param.grad).all(), name


@pytest.mark.parametrize("input_shape", [(4,), (2, 16, 16)])
def test_project_shapes_and_stop_gradient(input_shape: tuple[int, ...]) -> None:
    net = MuZeroNetwork(input_shape, 3, small(proj_out_dim=12))
    latent = net.initial_inference(torch.rand(4, *input_shape)).latent
    online = net.project(latent, with_grad=True)
    target = net.project(latent, with_grad=False)
    assert online.shape == target.shape == (4, 12)
    assert online.requires_grad and not target.requires_grad


def test_projection_can_be_left_out() -> None:
    net = MuZeroNetwork((4,), 2, small(), with_projection=False)
    assert not any(name.startswith("projection") for name, _ in net.named_parameters())
    with pytest.raises(RuntimeError, match="with_projection"):
        net.project(torch.zeros(2, 16), with_grad=True)


def test_supports_follow_the_network_and_stay_out_of_checkpoints() -> None:
    net = MuZeroNetwork((4,), 2, small(**SMALL_SUPPORT))
    assert net.value_support.size == 21 and net.reward_support.size == 11
    assert not any("atoms" in key or "reward_logits" in key for key in net.state_dict())
    net.double()
    assert net.value_support.atoms.dtype == torch.float64
    out = net.initial_inference(torch.randn(2, 4, dtype=torch.float64))
    assert out.value_logits.dtype == torch.float64


@pytest.mark.parametrize("norm_type", ["BN", "LN"])
@pytest.mark.parametrize("family", ["muzero", "efficientzero"])
def test_root_latent_is_the_roots_latent_and_runs_the_heads_only_for_their_statistics(
    norm_type: str, family: str
) -> None:
    """The SSL target branch's `root_latent`: `initial_inference(obs).latent` exactly, with the
    same running statistics after it; the prediction heads run only when they hold BatchNorm."""
    torch.manual_seed(0)
    cfg = small(kind="conv", norm_type=norm_type)
    if family == "muzero":
        full = MuZeroNetwork((2, 8, 8), 3, cfg)
    else:
        full = EfficientZeroNetwork((2, 8, 8), 3, cfg, ValuePrefixConfig(lstm_hidden_size=4))
    alone = copy.deepcopy(full)
    head_calls = []
    alone.prediction.register_forward_hook(lambda *_: head_calls.append(1))
    obs = torch.rand(6, 2, 8, 8)
    with torch.no_grad():
        expected = full.train().initial_inference(obs).latent
        latent = alone.train().root_latent(obs)
    assert torch.equal(latent, expected)
    for (name, a), b in zip(full.state_dict().items(), alone.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    assert len(head_calls) == (1 if norm_type == "BN" else 0)
    with torch.no_grad():  # eval mode: no statistics move, so the heads never run
        assert torch.equal(alone.eval().root_latent(obs), full.eval().initial_inference(obs).latent)
    assert len(head_calls) == (1 if norm_type == "BN" else 0)
