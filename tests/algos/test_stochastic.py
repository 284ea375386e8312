"""The stochastic_muzero family: straight-through chance codes, the K-step loss with its chance
terms, chance-aware reanalysis, and reproducible evaluation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.learner.factories import OBS, A, random_unroll_inputs, tiny_policy
from tests.tiny import tiny_config
from zeropipe.algos.losses import UnrollInputs
from zeropipe.algos.network_search import NetworkSearch
from zeropipe.algos.registry import algorithm
from zeropipe.algos.stochastic import STOCHASTIC, stochastic_unroll_loss
from zeropipe.algos.targets import TargetComputer
from zeropipe.mcts import ActingParams
from zeropipe.pipeline.build import build_evaluator

B, K, C = 3, 2, 3


def _policy(**extra):
    extra.setdefault("stochastic", {"chance_space_size": C})
    return tiny_policy(type="stochastic_muzero", num_unroll_steps=K, **extra)


def _net(seed: int = 0, **extra):
    """A tiny stochastic network with every weight redrawn (zero-initialised heads would give
    zero gradients and uniform priors); `extra` configures it (`ssl_loss_weight` > 0 adds the
    projection)."""
    torch.manual_seed(seed)
    net = STOCHASTIC.build_network((OBS,), A, _policy(**extra))
    with torch.no_grad():
        for p in net.parameters():
            torch.nn.init.normal_(p, std=0.3)
    return net


def _inputs(seed: int = 1) -> UnrollInputs:
    return random_unroll_inputs(B, K, seed)


def _grad_norm(module: torch.nn.Module) -> float:
    return sum(float(p.grad.abs().sum()) for p in module.parameters() if p.grad is not None)


def test_the_straight_through_code_is_one_hot_and_carries_gradients_to_the_encoder():
    net = _net()
    net.train()
    obs, next_obs = torch.randn(5, OBS), torch.randn(5, OBS)
    probs, code = net.chance_code(obs, next_obs)
    assert torch.equal(code.detach(), torch.nn.functional.one_hot(probs.argmax(-1), C).float())
    afterstate = net.afterstate_inference(torch.rand(5, 16), torch.zeros(5, dtype=torch.long))
    out = net.chance_inference(afterstate.latent.detach(), code)
    out.value_logits.square().sum().backward()
    assert _grad_norm(net.chance_encoder.body) > 0.0
    net.zero_grad()
    # Control: the same step fed the code's value alone leaves the encoder without gradient.
    out = net.chance_inference(afterstate.latent.detach(), code.detach())
    out.value_logits.square().sum().backward()
    assert _grad_norm(net.chance_encoder) == 0.0


def test_the_loss_reports_every_term_and_trains_every_module():
    net = _net()
    net.train()
    loss = stochastic_unroll_loss(net, _inputs(), _policy())
    assert loss.per_sample.shape == (B,) and torch.isfinite(loss.per_sample).all()
    assert set(loss.terms) == {
        "policy_loss",
        "value_loss",
        "reward_loss",
        "entropy",
        "afterstate_policy_loss",
        "afterstate_value_loss",
        "commitment_loss",
    }
    assert all(float(loss.terms[name]) > 0 for name in ("afterstate_value_loss", "reward_loss"))
    loss.per_sample.sum().backward()
    for module in (
        net.representation,
        net.afterstate_dynamics,
        net.afterstate_prediction,
        net.dynamics,
        net.reward_head,
        net.prediction,
        net.chance_encoder,
    ):
        assert _grad_norm(module) > 0.0, module


def test_masked_steps_do_not_read_their_observations_or_targets():
    net = _net()
    net.eval()  # LayerNorm and eval mode: samples are independent
    inp = _inputs()
    base = stochastic_unroll_loss(net, inp, _policy()).per_sample.detach()
    obs_seq = inp.obs_seq.clone()
    obs_seq[0, 2] += 5.0  # sample 0 has no transition 1: its next observation is never read
    changed = stochastic_unroll_loss(
        net, dataclasses.replace(inp, obs_seq=obs_seq), _policy()
    ).per_sample.detach()
    assert changed[0] == base[0]
    obs_seq[1, 2] += 5.0  # sample 1 has it: the loss moves
    moved = stochastic_unroll_loss(
        net, dataclasses.replace(inp, obs_seq=obs_seq), _policy()
    ).per_sample.detach()
    assert moved[1] != base[1]


def test_the_extra_weights_scale_their_terms():
    net = _net()
    net.eval()
    inp = _inputs()
    base = stochastic_unroll_loss(net, inp, _policy()).per_sample.detach()
    heavier = _policy(stochastic={"chance_space_size": C, "commitment_loss_weight": 3.0})
    loss = stochastic_unroll_loss(net, inp, heavier)
    commitment = stochastic_unroll_loss(
        net, inp, _policy(stochastic={"chance_space_size": C, "commitment_loss_weight": 0.0})
    ).per_sample.detach()
    np.testing.assert_allclose(
        (loss.per_sample.detach() - commitment).numpy(),
        (3.0 * (base - commitment)).numpy(),
        rtol=1e-4,
        atol=1e-5,
    )


# Sample 0 of `_inputs()` has data for its first transition only (reward_mask row [1, 0]).
TRANSITION_MASK = torch.tensor([[1.0, 0.0], [1.0, 1.0], [1.0, 1.0]])  # [B, K]


def _commitment_only():
    """Every term's weight 0 but the commitment's (1, the default)."""
    off = {"afterstate_policy_loss_weight": 0.0, "afterstate_value_loss_weight": 0.0}
    return _policy(
        stochastic={"chance_space_size": C, **off},
        policy_loss_weight=0.0,
        value_loss_weight=0.0,
        reward_loss_weight=0.0,
    )


def _chance_path(net, inp: UnrollInputs):
    """The encoder's probabilities and codes and the predicted states s_1..s_K along the stored
    actions, from the network's parts. Returns ([K] of [B, C], [K] of [B, C], [K] of latents)."""
    latent, probs, codes, states = net.initial_inference(inp.root_obs).latent, [], [], []
    for k in range(K):
        after = net.afterstate_inference(latent, inp.actions[:, k]).latent
        p, code = net.chance_code(inp.obs_seq[:, k], inp.obs_seq[:, k + 1])
        latent = net.chance_inference(after, code).latent
        probs.append(p)
        codes.append(code)
        states.append(latent)
    return probs, codes, states


def test_the_ssl_term_matches_a_hand_computation():
    """The reference's L415-431: −cos(project(s_{k+1}, with grad), project(h(o_{k+1}))) per step,
    masked by the step's mask and summed over the K steps, times ssl_loss_weight."""
    net = _net(ssl_loss_weight=2.0)
    net.eval()  # the projection's BatchNorm on running statistics: samples are independent
    inp = _inputs()
    with torch.no_grad():
        _, _, states = _chance_path(net, inp)
        expected = torch.zeros(B)
        for k in range(K):
            a = net.project(states[k], with_grad=True)
            b = net.project(net.initial_inference(inp.obs_seq[:, k + 1]).latent, with_grad=False)
            cos = (a * b).sum(-1) / (a.square().sum(-1).sqrt() * b.square().sum(-1).sqrt())
            expected -= cos * TRANSITION_MASK[:, k]
    on = stochastic_unroll_loss(net, inp, _policy(ssl_loss_weight=2.0))
    off = stochastic_unroll_loss(net, inp, _policy())
    assert "ssl_loss" not in off.terms
    assert float(expected.abs().min()) > 1e-3
    torch.testing.assert_close(on.terms["ssl_loss"], expected.mean(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(
        (on.per_sample - off.per_sample).detach(), 2.0 * expected, rtol=1e-4, atol=1e-5
    )


@pytest.mark.parametrize(("weighting", "step_weight"), [("reference", 1.0), ("appendix_g", 1 / K)])
def test_the_commitment_is_the_mean_over_codes_of_the_squared_distance_to_the_one_hot(
    weighting, step_weight
):
    """Summed over the steps with weight 1 (reference: its gradient scaled by 1/K instead) or
    1/K (appendix_g)."""
    net = _net()
    net.eval()
    inp = _inputs()
    with torch.no_grad():
        probs, _, _ = _chance_path(net, inp)
        expected = torch.zeros(B)
        for k in range(K):
            one_hot = torch.eye(C)[probs[k].argmax(-1)]
            expected += ((one_hot - probs[k]) ** 2).sum(-1) / C * TRANSITION_MASK[:, k]
    cfg = _commitment_only().model_copy(update={"loss_weighting": weighting})
    loss = stochastic_unroll_loss(net, inp, cfg)
    torch.testing.assert_close(
        loss.per_sample.detach(), expected * step_weight, rtol=1e-5, atol=1e-7
    )


def test_the_reference_weighting_scales_the_gradient_by_one_over_k_and_halves_nothing():
    """SSL alone: the gradient is 1/K of the hand-built Σ_k −cos along the chance path (which
    scales no latent's gradient); appendix_g's halving at each step entry makes it differ."""
    off = {"afterstate_policy_loss_weight": 0.0, "afterstate_value_loss_weight": 0.0}
    zero = dict(policy_loss_weight=0.0, value_loss_weight=0.0, reward_loss_weight=0.0)
    stochastic = {"chance_space_size": C, "commitment_loss_weight": 0.0, **off}
    cfg = _policy(ssl_loss_weight=1.0, stochastic=stochastic, **zero)
    net = _net(ssl_loss_weight=1.0)
    net.eval()
    inp = _inputs()
    _, _, states = _chance_path(net, inp)
    expected = torch.zeros(B)
    for k in range(K):
        a = net.project(states[k], with_grad=True)
        with torch.no_grad():
            b = net.project(net.initial_inference(inp.obs_seq[:, k + 1]).latent, with_grad=False)
        expected = expected - F.cosine_similarity(a, b, dim=-1) * TRANSITION_MASK[:, k]
    expected.sum().backward()
    by_hand = {n: p.grad.clone() / K for n, p in net.named_parameters() if p.grad is not None}
    for weighting, same in (("reference", True), ("appendix_g", False)):
        net.zero_grad(set_to_none=True)
        loss = stochastic_unroll_loss(
            net, inp, cfg.model_copy(update={"loss_weighting": weighting})
        )
        torch.testing.assert_close(loss.per_sample.detach(), expected.detach())
        loss.per_sample.sum().backward()
        grads = {n: p.grad for n, p in net.named_parameters() if p.grad is not None}
        for name in set(grads) - set(by_hand):  # the heads of the weight-0 terms
            assert not grads[name].any(), name
        close = [torch.allclose(grads[n], g, rtol=1e-4, atol=1e-6) for n, g in by_hand.items()]
        assert all(close) == same, weighting


def test_the_references_chance_encoder_gets_no_gradient_and_ours_does():
    """The reference (`lzero/policy/stochastic_muzero.py` L402-407, L466; its `OnehotArgmax`,
    `lzero/model/stochastic_muzero_model.py` L795-831) feeds g the index argmax(e) and commits
    with MSE(e, ST(e)), ST one-hot forward and identity backward: the gradients of e and ST(e)
    cancel, so its encoder never moves from its initialisation. Ours trains it from the
    commitment alone (its target one-hot detached)."""
    net = _net()
    net.train()
    obs, next_obs = torch.randn(5, OBS), torch.randn(5, OBS)
    encoder = net.chance_encoder
    logits = encoder.head(encoder.body(torch.cat((obs, next_obs), dim=1)))  # the reference's e
    st = torch.eye(C)[logits.argmax(-1)] + logits - logits.detach()  # its OnehotArgmax
    after = net.afterstate_inference(torch.rand(5, 16), torch.zeros(5, dtype=torch.long))
    out = net.chance_inference(after.latent.detach(), logits.argmax(-1))
    (F.mse_loss(logits, st) + out.value_logits.square().sum()).backward()
    assert _grad_norm(encoder) == 0.0
    net.zero_grad()
    stochastic_unroll_loss(net, _inputs(), _commitment_only()).per_sample.sum().backward()
    assert _grad_norm(encoder) > 0.0


def test_the_default_has_no_entropy_bonus_as_the_reference():
    net = _net()
    net.eval()
    inp = _inputs()
    default = stochastic_unroll_loss(net, inp, _policy()).per_sample.detach()
    none = stochastic_unroll_loss(net, inp, _policy(policy_entropy_weight=0.0)).per_sample
    bonus = stochastic_unroll_loss(net, inp, _policy(policy_entropy_weight=0.5)).per_sample
    assert torch.equal(default, none.detach())
    assert not torch.equal(default, bonus.detach())


class _KindSpy:
    """Wraps `search_step` and counts the rows of each expansion kind."""

    def __init__(self, net):
        self.afterstates = 0
        self.states = 0
        self.step = net.search_step

    def __call__(self, latent, code, from_chance):
        self.states += int(from_chance.sum())
        self.afterstates += int((~from_chance).sum())
        return self.step(latent, code, from_chance)


def test_reanalysis_searches_with_chance_nodes(monkeypatch):
    net = _net()
    spy = _KindSpy(net)
    monkeypatch.setattr(net, "search_step", spy)
    cfg = _policy(num_simulations=12)
    targets = TargetComputer(
        net,
        frame_ndim=1,
        search_cfg=cfg.search_config(cfg.num_simulations),
        policy=algorithm("stochastic_muzero").search_policy,
        reanalyze_ratio=1.0,
        seed=0,
    )
    frames = np.random.default_rng(0).normal(size=(6, 1, OBS)).astype(np.float32)
    policy = targets.search_policy_targets(frames, np.ones((6, A), dtype=bool))
    np.testing.assert_allclose(policy.sum(axis=1), 1.0, rtol=1e-6)
    assert spy.afterstates > 0 and spy.states > 0
    assert spy.afterstates + spy.states == 6 * 12


def test_a_search_with_a_fixed_seed_is_reproducible_and_the_seed_matters():
    net = _net()
    cfg = _policy(num_simulations=30)
    search = NetworkSearch(net, 1, algorithm("stochastic_muzero").search_policy)
    frames = np.random.default_rng(3).normal(size=(8, 1, OBS)).astype(np.float32)
    mask = np.ones((8, A), dtype=bool)
    sc = cfg.search_config(cfg.num_simulations)
    runs = [
        search.search(frames, mask, sc, np.random.default_rng(seed), ActingParams("eval"))
        for seed in (4, 4, 5)
    ]
    np.testing.assert_array_equal(runs[0].output.visit_counts, runs[1].output.visit_counts)
    np.testing.assert_array_equal(runs[0].output.root_value, runs[1].output.root_value)
    assert not np.array_equal(runs[0].output.root_value, runs[2].output.root_value)


@pytest.mark.timeout(120)
def test_evaluation_with_a_fixed_seed_is_reproducible(tmp_path):
    cfg = tiny_config(tmp_path, type="stochastic_muzero")
    evaluator = build_evaluator(cfg)
    torch.manual_seed(0)
    with torch.no_grad():
        for p in evaluator.search.network.parameters():
            torch.nn.init.normal_(p, std=0.3)
    first, again = evaluator.evaluate(), evaluator.evaluate()
    assert first.episode_returns == again.episode_returns
    assert first.envsteps == again.envsteps
    evaluator.close()
