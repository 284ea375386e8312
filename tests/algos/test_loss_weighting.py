"""The unroll's step weighting (`policy.loss_weighting`) and Gumbel's policy loss
(`policy.gumbel.policy_loss`) against gradients written out by hand.

`LinearNet` makes every output a simple function of a few parameters: the latent is a·x (x the
first two observation entries), the dynamics copy the latent, the value logits are latent·U, the
policy logits θ and the reward logits ρ at every step, and the SSL projection adds a fixed offset
c. Then each term's gradient has a closed form, and the weighting rules differ only in the
factors written in each test:

- reference (LightZero `lzero/policy/muzero.py` L465-600): every step weighs 1, the gradient of
  the total is scaled by 1/K, nothing is scaled inside the unroll;
- appendix_g (MuZero app. G): the root weighs 1, every unrolled step 1/K, SSL unscaled, and the
  gradient into step k's latent is halved at each of the k dynamics entries (0.5^k).
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from tests.learner.factories import tiny_policy
from zeropipe.algos.gumbel_muzero import kl_mean_policy_terms
from zeropipe.algos.losses import LossWeights, UnrollInputs, unroll_loss
from zeropipe.algos.registry import algorithm
from zeropipe.models import DiscreteSupport, NetworkOutput

B, K, A = 3, 2, 2
S = 3  # support atoms -1, 0, 1: a target of 0 is the one-hot (0, 1, 0)
E0 = torch.tensor([0.0, 1.0, 0.0])
U = torch.tensor([[0.6, -0.4, 0.3], [-0.2, 0.5, 0.8]])  # [2, S] value logits = latent @ U
C = torch.tensor([0.4, -0.7])  # the SSL projection's offset
THETA, RHO, A0 = [0.3, -0.2], [0.1, 0.4, -0.3], 0.7


class LinearNet(nn.Module):
    """latent_0 = a·x, latent_{k+1} = latent_k, value = latent @ U, policy θ, reward ρ."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Parameter(torch.tensor(A0))
        self.theta = nn.Parameter(torch.tensor(THETA))
        self.rho = nn.Parameter(torch.tensor(RHO))
        self.value_support = DiscreteSupport(-1, 2, 1)
        self.reward_support = DiscreteSupport(-1, 2, 1)

    def _out(self, latent: torch.Tensor, reward_logits: torch.Tensor) -> NetworkOutput:
        policy = self.theta.expand(latent.shape[0], A)
        return NetworkOutput(latent, latent @ U, reward_logits, policy)

    def initial_inference(self, obs: torch.Tensor) -> NetworkOutput:
        return self._out(self.a * obs[:, :2], torch.zeros(obs.shape[0], S))

    def recurrent_inference(self, latent: torch.Tensor, action: torch.Tensor) -> NetworkOutput:
        return self._out(latent, self.rho.expand(latent.shape[0], S))

    def root_latent(self, obs: torch.Tensor) -> torch.Tensor:
        return self.initial_inference(obs).latent

    def project(self, latent: torch.Tensor, with_grad: bool) -> torch.Tensor:
        return latent + C


OBS = torch.tensor([[1.0, 0.5, 9.0], [-0.8, 1.2, 9.0], [0.3, -1.1, 9.0]])  # [B, 3]
NEXT = torch.tensor([[0.9, -0.6], [0.2, 0.7], [-1.0, 0.4]])  # [B, 2] o_1 = o_2's first entries
POLICY = torch.tensor(  # [B, K+1, A]: the root's target differs from the steps'
    [
        [[1.0, 0.0], [0.2, 0.8], [0.5, 0.5]],
        [[0.0, 1.0], [0.9, 0.1], [0.3, 0.7]],
        [[0.6, 0.4], [0.4, 0.6], [1.0, 0.0]],
    ]
)


def _inputs() -> UnrollInputs:
    obs_seq = torch.zeros(B, K + 1, 3)
    obs_seq[:, 1:, :2] = NEXT[:, None, :]
    return UnrollInputs(
        root_obs=OBS,
        actions=torch.zeros(B, K, dtype=torch.long),
        value_target=torch.zeros(B, K + 1),
        reward_target=torch.zeros(B, K),
        policy_target=POLICY,
        value_mask=torch.ones(B, K + 1),
        reward_mask=torch.ones(B, K),
        policy_mask=torch.ones(B, K + 1),
        obs_seq=obs_seq,
    )


def _weights(weighting: str, **on: float) -> LossWeights:
    terms = dict(value=0.0, reward=0.0, policy=0.0, entropy=0.0, ssl=0.0)
    return LossWeights(**{**terms, **on}, weighting=weighting)


def _grads(weighting: str, policy_terms=None, **on: float):
    """(per_sample [B], terms, the gradient of mean_b per_sample for a, θ, ρ)."""
    net = LinearNet()
    loss = unroll_loss(net, _inputs(), _weights(weighting, **on), policy_terms)
    loss.per_sample.mean().backward()
    return loss.per_sample.detach(), loss.terms, (net.a.grad, net.theta.grad, net.rho.grad)


def _softmax(z: list[float]) -> torch.Tensor:
    e = [math.exp(v) for v in z]
    return torch.tensor([v / sum(e) for v in e])


def test_policy_steps_weigh_one_with_a_one_over_k_gradient_against_root_one_steps_one_over_k():
    p = _softmax(THETA)  # the policy at every step
    per_step = p - POLICY  # [B, K+1, A] dCE/dθ of each step
    ce = -(POLICY * p.log()).sum(-1)  # [B, K+1]
    per_sample, terms, (_, d_theta, _) = _grads("reference", policy=1.0)
    torch.testing.assert_close(d_theta, per_step.sum(1).mean(0) / K)
    torch.testing.assert_close(per_sample, ce.sum(1))  # the unscaled sum, as logged
    torch.testing.assert_close(terms["policy_loss"], ce.sum(1).mean())
    per_sample, _, (_, d_theta, _) = _grads("appendix_g", policy=1.0)
    torch.testing.assert_close(d_theta, (per_step[:, 0] + per_step[:, 1:].sum(1) / K).mean(0))
    torch.testing.assert_close(per_sample, ce[:, 0] + ce[:, 1:].sum(1) / K)


def test_entropy_counts_every_step_once_or_the_root_once_and_the_steps_one_over_k():
    p = _softmax(THETA)
    h = float(-(p * p.log()).sum())
    _, terms, _ = _grads("reference", entropy=1.0)
    assert float(terms["entropy"]) == pytest.approx((K + 1) * h, rel=1e-6)
    _, terms, _ = _grads("appendix_g", entropy=1.0)
    assert float(terms["entropy"]) == pytest.approx(2 * h, rel=1e-6)


def test_the_value_gradient_reaches_the_encoder_unhalved_or_halved_once_per_dynamics_step():
    latent = A0 * OBS[:, :2]  # [B, 2], the same at every step
    z = latent @ U
    s = torch.exp(z) / torch.exp(z).sum(-1, keepdim=True)
    g = ((OBS[:, :2] @ U) * (s - E0)).sum(-1)  # [B] dCE(z, e0)/da of one step
    _, _, (d_a, _, _) = _grads("reference", value=1.0)
    torch.testing.assert_close(d_a, (K + 1) * g.mean() / K)  # K = 2: 1.5 g
    _, _, (d_a, _, _) = _grads("appendix_g", value=1.0)
    halved = sum(0.5**k for k in range(1, K + 1)) / K  # (0.5 + 0.25) / 2
    torch.testing.assert_close(d_a, (1.0 + halved) * g.mean())  # 1.375 g


def test_rewards_sum_over_the_steps_or_average_with_the_same_gradient():
    ce = float(-math.log(_softmax(RHO)[1]))
    d_ce = _softmax(RHO) - E0
    per_sample, _, (_, _, d_rho) = _grads("reference", reward=1.0)
    torch.testing.assert_close(per_sample, torch.full((B,), K * ce))
    torch.testing.assert_close(d_rho, K * d_ce / K)
    per_sample, _, (_, _, d_rho) = _grads("appendix_g", reward=1.0)
    torch.testing.assert_close(per_sample, torch.full((B,), ce))
    torch.testing.assert_close(d_rho, d_ce)


def _negative_cosine_and_its_a_gradient(k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """−cos(q, t) per sample for unroll step k (q = a·x + c, t = a·o_k + c detached) and its
    derivative in a: −(t/(|q||t|) − cos·q/|q|²)·x."""
    q = A0 * OBS[:, :2] + C
    t = A0 * NEXT + C  # o_1 and o_2 share their first entries
    qn, tn = q.norm(dim=-1, keepdim=True), t.norm(dim=-1, keepdim=True)
    cos = (q * t).sum(-1, keepdim=True) / (qn * tn)
    d_cos_dq = t / (qn * tn) - cos * q / qn**2
    return -cos[:, 0], -(d_cos_dq * OBS[:, :2]).sum(-1)


def test_ssl_is_summed_then_scaled_by_one_over_k_or_summed_with_halved_gradients():
    nc, d = _negative_cosine_and_its_a_gradient(1)
    per_sample, _, (d_a, _, _) = _grads("reference", ssl=1.0)
    torch.testing.assert_close(per_sample, K * nc)
    torch.testing.assert_close(d_a, K * d.mean() / K)
    per_sample, _, (d_a, _, _) = _grads("appendix_g", ssl=1.0)
    torch.testing.assert_close(per_sample, K * nc)  # unscaled by 1/K in both
    torch.testing.assert_close(d_a, sum(0.5**k for k in range(1, K + 1)) * d.mean())


def test_the_policy_option_defaults_to_the_reference_per_type():
    for policy_type in ("muzero", "efficientzero", "stochastic_muzero", "gumbel_muzero"):
        assert tiny_policy(type=policy_type).loss_weighting == "reference"
    assert tiny_policy(type="muzero", loss_weighting="appendix_g").loss_weighting == "appendix_g"
    with pytest.raises(ValueError, match="loss_weighting"):  # its loss was always the reference's
        tiny_policy(type="muzero_rnn_full_obs", loss_weighting="appendix_g")


def test_gumbel_kl_mean_is_the_cross_entropy_over_a_up_to_the_target_entropy():
    """LightZero's KLDivLoss(log π, t).mean(-1) = Σ t(log t − log π)/A (0·log 0 = 0); its
    gradient in the logits is (π − t)/A, the summed cross-entropy's divided by A."""
    logits = torch.tensor([[0.5, -1.0, 2.0], [0.0, 0.3, -0.3]], requires_grad=True)
    target = torch.tensor([[0.2, 0.0, 0.8], [0.5, 0.25, 0.25]])
    inp = UnrollInputs(*[None] * 4, target[:, None, :], *[None] * 4)
    kl, _ = kl_mean_policy_terms(logits, inp, 0)
    pi = [_softmax(row) for row in logits.tolist()]
    expected = [
        sum(t * (math.log(t) - math.log(p)) for t, p in zip(trow, prow, strict=True) if t > 0) / 3
        for trow, prow in zip(target.tolist(), pi, strict=True)
    ]
    torch.testing.assert_close(kl.detach(), torch.tensor(expected))
    kl.sum().backward()
    torch.testing.assert_close(logits.grad, (torch.stack(pi) - target) / 3)


def test_gumbel_policy_loss_option_scales_the_policy_gradient_by_one_over_a():
    family = algorithm("gumbel_muzero").family
    reference = tiny_policy(type="gumbel_muzero")
    ours = tiny_policy(type="gumbel_muzero", gumbel={"policy_loss": "cross_entropy"})
    assert reference.gumbel.policy_loss == "kl_mean" and reference.policy_entropy_weight == 0.0
    _, _, (_, kl_grad, _) = _grads("reference", family.policy_terms(reference), policy=1.0)
    _, _, (_, ce_grad, _) = _grads("reference", family.policy_terms(ours), policy=1.0)
    torch.testing.assert_close(ce_grad, A * kl_grad)
