"""`policy.model.dynamics_residual`: the MLP dynamics add their input latent or not, with the same
parameters; the conv dynamics always add it; each type's default is the reference's."""

from __future__ import annotations

import torch

from tests.learner.factories import tiny_policy
from zeropipe.algos.registry import algorithm
from zeropipe.config import ProjectionModelConfig
from zeropipe.models.dynamics import build_dynamics

SIZES = {"hidden_dim": 8, "num_layers": 1, "norm_type": "LN"}
LATENT = torch.tensor([[1.5, -2.0, 0.25, 0.0], [-0.5, 3.0, -1.0, 2.0]])  # [B, E]


def _silenced(residual: bool):
    """Vector dynamics whose last Linear is zero: before the addition they output LN(0) = 0."""
    cfg = ProjectionModelConfig(**SIZES, dynamics_residual=residual)
    g = build_dynamics((4,), 3, cfg)
    with torch.no_grad():
        g.out.weight.zero_()
        g.out.bias.zero_()
    return g


def test_the_mlp_dynamics_add_the_latent_only_with_the_residual():
    action = torch.tensor([0, 2])
    torch.testing.assert_close(_silenced(True)(LATENT, action), LATENT.clamp_min(0.0))
    torch.testing.assert_close(_silenced(False)(LATENT, action), torch.zeros(2, 4))


def test_the_option_changes_no_parameter_name_or_shape():
    with_res = build_dynamics((4,), 3, ProjectionModelConfig(**SIZES, dynamics_residual=True))
    without = build_dynamics((4,), 3, ProjectionModelConfig(**SIZES, dynamics_residual=False))
    shapes = {k: v.shape for k, v in with_res.state_dict().items()}
    assert shapes == {k: v.shape for k, v in without.state_dict().items()}
    without.load_state_dict(with_res.state_dict())  # checkpoints load either way


def test_the_conv_dynamics_always_add_the_latent():
    cfg = ProjectionModelConfig(num_channels=2, norm_type="LN", dynamics_residual=False)
    g = build_dynamics((2, 3, 3), 2, cfg)
    with torch.no_grad():
        for p in g.parameters():
            p.zero_()  # the conv and the residual blocks output 0 before their additions
    latent = torch.linspace(-1.0, 1.0, 18).reshape(1, 2, 3, 3)
    out = g(latent, torch.tensor([1]))
    assert float(out.detach().abs().sum()) > 0.0
    torch.testing.assert_close(out, latent.clamp_min(0.0))


def test_each_type_defaults_to_the_references_residual():
    """LightZero's policy defaults set res_connection_in_dynamics=True (policy/muzero.py:68,
    efficientzero.py:59, gumbel_muzero.py:60, sampled_*.py:70); its stochastic_muzero policy does
    not, so StochasticMuZeroModelMLP's False applies (stochastic_muzero_model_mlp.py:38)."""
    for policy_type in ("muzero", "efficientzero", "gumbel_muzero", "sampled_muzero"):
        assert tiny_policy(type=policy_type).model.dynamics_residual, policy_type
    stochastic = tiny_policy(type="stochastic_muzero", stochastic={"chance_space_size": 2})
    assert not stochastic.model.dynamics_residual
    net = algorithm("stochastic_muzero").family.build_network((4,), 2, stochastic)
    assert not net.dynamics.residual and not net.afterstate_dynamics.residual
