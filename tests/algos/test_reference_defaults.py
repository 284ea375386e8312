"""The UniZero and sampled types' defaults are the reference's (issue 22 item 2): EMA targets,
sampled_unizero's continuous loss weights, the closed-form continuous entropy; our earlier
behaviour stays a named setting that the shipped configs pin."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from tests.tiny import TINY_CONTINUOUS_MODEL
from zeropipe.algos.registry import algorithm
from zeropipe.config import PolicyConfig, dump_config, load_config

CONFIGS = Path(__file__).parents[2] / "configs"
SAMPLED_TYPES = ("sampled_muzero", "sampled_efficientzero", "sampled_unizero")
# one-step unrolls fit the UniZero types' default context window
_SMALL = {"num_unroll_steps": 1}


def _policy(policy_type: str, **fields) -> PolicyConfig:
    return PolicyConfig.model_validate({"type": policy_type, **_SMALL, **fields})


@pytest.mark.parametrize("policy_type", ["unizero", "sampled_unizero"])
def test_unizero_types_default_to_an_ema_target_with_theta_0_05(policy_type):
    # LightZero policy/unizero.py:741, :1004-1010 (momentum wrapper, θ = 0.05, every step)
    cfg = _policy(policy_type)
    assert (cfg.target_update_type, cfg.target_update_theta) == ("ema", 0.05)
    assert _policy(policy_type, target_update_type="hard").target_update_type == "hard"


def test_the_muzero_family_keeps_the_hard_copy_every_100():
    cfg = _policy("muzero")
    assert (cfg.target_update_type, cfg.target_update_freq) == ("hard", 100)


def _weights(cfg: PolicyConfig) -> tuple[float, float, float, float]:
    wm = cfg.model.world_model
    return (
        wm.latent_loss_weight,
        wm.value_loss_weight,
        wm.reward_loss_weight,
        wm.policy_loss_weight,
    )


def test_continuous_sampled_unizero_defaults_to_the_reference_continuous_weights():
    # model/unizero_world_models/utils.py:291-297: latent 10, value 0.1, reward 0.1, policy 0.1
    cfg = _policy("sampled_unizero", model={"continuous_action_space": True})
    assert _weights(cfg) == (10.0, 0.1, 0.1, 0.1)


def test_discrete_unizero_types_keep_the_reference_discrete_weights():
    # utils.py:284-290: latent 10, value 0.5, reward 1, policy 1
    assert _weights(_policy("sampled_unizero")) == (10.0, 0.5, 1.0, 1.0)
    assert _weights(_policy("unizero")) == (10.0, 0.5, 1.0, 1.0)


def test_a_weight_the_config_gives_is_kept_and_the_others_are_the_reference_continuous():
    model = {"continuous_action_space": True, "world_model": {"value_loss_weight": 0.5}}
    assert _weights(_policy("sampled_unizero", model=model)) == (10.0, 0.5, 0.1, 0.1)


def test_the_pendulum_sampled_unizero_config_pins_the_weights_it_was_measured_with():
    cfg = load_config(CONFIGS / "pendulum_sampled_unizero.yaml")
    assert _weights(cfg.policy) == (10.0, 0.5, 1.0, 1.0)
    again = load_config(CONFIGS / "pendulum_sampled_unizero.yaml")
    assert dump_config(again) == dump_config(cfg)


@pytest.mark.parametrize("policy_type", SAMPLED_TYPES)
def test_the_sampled_types_default_to_the_closed_form_gaussian_entropy(policy_type):
    cfg = _policy(policy_type, model=TINY_CONTINUOUS_MODEL)
    assert cfg.sampled.continuous_entropy == "gaussian"
    terms = algorithm(policy_type).family.policy_terms(cfg)
    # mu 0.3 and sigma (0.5, 2) in two dimensions; the pre-tanh Gaussian's entropy is
    # Σ_d ½·log(2πe) + log σ_d = log(2πe) + log(0.5·2) = 1 + log(2π) = 2.8378770664093453
    params = torch.tensor([[0.3, 0.3, 0.5, 2.0]])
    inp = SimpleNamespace(
        sampled_actions=torch.tensor([[[[0.1, -0.2], [0.4, 0.0]]]]),  # [B, K+1, Ks, D]
        policy_target=torch.tensor([[[0.5, 0.5]]]),
    )
    _, ent = terms(params, inp, 0)
    assert float(ent[0]) == pytest.approx(2.8378770664093453, abs=1e-6)


@pytest.mark.parametrize("policy_type", SAMPLED_TYPES)
def test_the_tanh_sample_estimate_is_the_named_option(policy_type):
    sampled = {"continuous_entropy": "tanh_sample_estimate"}
    cfg = _policy(policy_type, model=TINY_CONTINUOUS_MODEL, sampled=sampled)
    terms = algorithm(policy_type).family.policy_terms(cfg)
    # one action a = 0 under mu 0, sigma 1 (D = 1): log π(0) = log N(0; 0, 1) − log(1 − 0²)
    # = −½·log(2π) = −0.9189385332046727, so the estimate −mean log π is 0.9189385332046727
    params = torch.tensor([[0.0, 1.0]])
    inp = SimpleNamespace(
        sampled_actions=torch.tensor([[[[0.0]]]]), policy_target=torch.tensor([[[1.0]]])
    )
    _, ent = terms(params, inp, 0)
    assert float(ent[0]) == pytest.approx(0.9189385332046727, abs=1e-6)


@pytest.mark.parametrize(
    "name",
    [
        "pendulum_sampled_efficientzero.yaml",
        "pendulum_sampled_muzero.yaml",
        "pendulum_sampled_unizero.yaml",
        "halfcheetah_sampled_efficientzero.yaml",
    ],
)
def test_the_continuous_configs_pin_the_tanh_sample_estimate(name):
    assert load_config(CONFIGS / name).policy.sampled.continuous_entropy == "tanh_sample_estimate"
