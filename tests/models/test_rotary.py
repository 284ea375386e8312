"""Rotary position embeddings: the rotation by hand, scores that see only relative positions,
and a rotary transformer layer against attention written out by hand."""

from __future__ import annotations

import math

import pytest
import torch

from zeropipe.config import ConfigError
from zeropipe.models import CausalTransformer
from zeropipe.models.rotary import RotaryEmbedding


def test_rotation_by_hand_at_two_positions() -> None:
    # head size 4, θ = 100: pair 0 turns by p·1 rad, pair 1 by p·100^(-2/4) = p·0.1 rad.
    rotary = RotaryEmbedding(head_dim=4, capacity=4, theta=100.0)
    x = torch.tensor([[1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 3.0, 0.0]]).expand(2, -1)  # two heads
    out = rotary(torch.tensor([[1], [3]])).apply(x[:, None])[:, 0]  # positions 1 and 3
    c1, s1, c01, s01 = math.cos(1), math.sin(1), math.cos(0.1), math.sin(0.1)
    c3, s3, c03, s03 = math.cos(3), math.sin(3), math.cos(0.3), math.sin(0.3)
    expected = torch.tensor(
        [
            # (1, 0) -> (cos, sin); (0, 1) -> (−sin, cos); head 2 by the same angles
            [c1, s1, -s01, c01, 2 * c1, 2 * s1, 3 * c01, 3 * s01],
            [c3, s3, -s03, c03, 2 * c3, 2 * s3, 3 * c03, 3 * s03],
        ]
    )
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=0)
    position_zero = rotary(torch.zeros(2, 1, dtype=torch.long)).apply(x[:, None])[:, 0]
    torch.testing.assert_close(position_zero, x)  # angle 0: unchanged


def test_scores_depend_only_on_the_relative_position() -> None:
    rotary = RotaryEmbedding(head_dim=8, capacity=16, theta=10000.0)
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 1, 1, 8, generator=gen)  # [1, 1, E] each, one head

    def score(query_position: int, key_position: int) -> float:
        rq = rotary(torch.tensor([[query_position]])).apply(q)
        rk = rotary(torch.tensor([[key_position]])).apply(k)
        return float((rq * rk).sum())

    for distance in (0, 1, 3):
        scores = [score(start + distance, start) for start in (0, 2, 7, 12)]
        assert max(scores) - min(scores) < 1e-5, (distance, scores)
    assert abs(score(3, 0) - score(1, 0)) > 1e-2  # a different distance, a different score


def _by_hand_rotation(x: torch.Tensor, theta: float) -> torch.Tensor:
    """x [T, d] of one head at positions 0..T−1, each pair (2i, 2i+1) turned by t·θ^(−2i/d)."""
    out = x.clone()
    for t in range(x.shape[0]):
        for i in range(x.shape[1] // 2):
            angle = t * theta ** (-2 * i / x.shape[1])
            a, b = float(x[t, 2 * i]), float(x[t, 2 * i + 1])
            out[t, 2 * i] = a * math.cos(angle) - b * math.sin(angle)
            out[t, 2 * i + 1] = a * math.sin(angle) + b * math.cos(angle)
    return out


@torch.no_grad()
def test_a_rotary_layer_equals_attention_written_out() -> None:
    """One block, one head: no learned position table; rotated q/k in a causal softmax."""
    torch.manual_seed(0)
    theta = 50.0
    net = CausalTransformer(8, 1, 1, capacity=6, dropout=0.0, rope_theta=theta).eval()
    assert net.position_embedding is None
    assert not any("position" in name for name in net.state_dict())
    tokens = torch.randn(5, 8)  # [T, E]
    block = net.blocks[0]
    q, k, v = block.attn.qkv(block.ln_attn(tokens)).split(8, dim=-1)  # [T, E] each
    q, k = _by_hand_rotation(q, theta), _by_hand_rotation(k, theta)
    scores = q @ k.T / math.sqrt(8)  # [T, T]
    scores = scores.masked_fill(torch.ones(5, 5).triu(1).bool(), float("-inf"))
    x = tokens + block.attn.proj(scores.softmax(-1) @ v)
    expected = net.ln_final(x + block.mlp(block.ln_mlp(x)))
    torch.testing.assert_close(net(tokens[None])[0], expected, atol=1e-5, rtol=0)


def test_an_odd_head_size_raises() -> None:
    with pytest.raises(ConfigError, match="even head size"):
        CausalTransformer(12, 1, 4, capacity=4, dropout=0.0, rope_theta=10000.0)
