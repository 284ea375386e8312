"""AdamW's parameter groups (`policy.optimizer_groups`): the reference's per type by default,
one group with 'one' (docs/parity.md S14), checked on the built networks and by what one
optimiser step does to a decayed and an undecayed parameter."""

from __future__ import annotations

import pytest
import torch

from tests.learner.factories import OBS, A, tiny_policy
from zeropipe.algos.registry import algorithm
from zeropipe.learner.learner import build_optimizer

UNDECAYED_LAYERS = (torch.nn.LayerNorm, torch.nn.Embedding, torch.nn.modules.batchnorm._BatchNorm)


def _network(cfg) -> torch.nn.Module:
    torch.manual_seed(0)
    return algorithm(cfg.type).family.build_network((OBS,), A, cfg)


def _decayed_names(network: torch.nn.Module, optimizer: torch.optim.Optimizer) -> set[str]:
    names = {id(p): n for n, p in network.named_parameters()}
    decayed = [g for g in optimizer.param_groups if g["weight_decay"] > 0]
    return {names[id(p)] for g in decayed for p in g["params"]}


def _each_parameter_once(network, optimizer) -> bool:
    grouped = [id(p) for g in optimizer.param_groups for p in g["params"]]
    return sorted(grouped) == sorted(id(p) for p in network.parameters())


def test_by_default_adamw_has_the_reference_groups():
    assert tiny_policy(optim_type="AdamW").optimizer_groups == "reference"


def test_one_group_decays_every_parameter():
    cfg = tiny_policy(optim_type="AdamW", weight_decay=0.1, optimizer_groups="one")
    network = _network(cfg)
    optimizer = build_optimizer(network, cfg)
    assert len(optimizer.param_groups) == 1
    assert optimizer.param_groups[0]["betas"] == (0.9, 0.999)
    assert _decayed_names(network, optimizer) == {n for n, _ in network.named_parameters()}


def test_the_muzero_family_leaves_biases_and_norm_weights_undecayed():
    cfg = tiny_policy(optim_type="AdamW", weight_decay=0.1, optimizer_groups="reference")
    network = _network(cfg)
    optimizer = build_optimizer(network, cfg)
    assert _each_parameter_once(network, optimizer)
    assert all(g["betas"] == (0.9, 0.999) for g in optimizer.param_groups)
    undecayed_layers = {
        f"{name}.{p}"
        for name, module in network.named_modules()
        if isinstance(module, UNDECAYED_LAYERS)
        for p, _ in module.named_parameters(recurse=False)
    }
    assert undecayed_layers  # the tiny network has LayerNorms
    linear = {
        f"{name}.weight"
        for name, module in network.named_modules()
        if isinstance(module, torch.nn.Linear)
    }
    decayed = _decayed_names(network, optimizer)
    assert linear <= decayed
    assert not decayed & undecayed_layers
    assert not any(n.endswith("bias") for n in decayed)


@pytest.mark.parametrize("policy_type", ["unizero", "sampled_muzero"])
def test_the_unizero_and_sampled_types_decay_matrices_only_with_nanogpt_betas(policy_type):
    extra = {"sampled": {"num_of_sampled_actions": A}} if policy_type == "sampled_muzero" else {}
    cfg = tiny_policy(
        type=policy_type,
        optim_type="AdamW",
        weight_decay=0.1,
        optimizer_groups="reference",
        **extra,
    )
    network = _network(cfg)
    optimizer = build_optimizer(network, cfg)
    assert _each_parameter_once(network, optimizer)
    assert all(g["betas"] == (0.9, 0.95) for g in optimizer.param_groups)
    matrices = {n for n, p in network.named_parameters() if p.dim() >= 2}
    assert _decayed_names(network, optimizer) == matrices


def test_a_type_whose_reference_has_no_adamw_keeps_one_group():
    cfg = tiny_policy(
        type="stochastic_muzero", optim_type="AdamW", weight_decay=0.1, optimizer_groups="reference"
    )
    assert len(build_optimizer(_network(cfg), cfg).param_groups) == 1


def test_one_step_shrinks_a_decayed_weight_and_leaves_an_undecayed_bias():
    """With zero gradients, AdamW's step is its decay alone: p ← p (1 - lr · wd)."""
    cfg = tiny_policy(
        optim_type="AdamW", weight_decay=0.5, learning_rate=0.1, optimizer_groups="reference"
    )
    network = _network(cfg)
    optimizer = build_optimizer(network, cfg)
    before = {n: p.detach().clone() for n, p in network.named_parameters()}
    for p in network.parameters():
        p.grad = torch.zeros_like(p)
    optimizer.step()
    after = dict(network.named_parameters())
    decayed = _decayed_names(network, optimizer)
    for name, old in before.items():
        expected = old * (1 - 0.1 * 0.5) if name in decayed else old
        torch.testing.assert_close(after[name].detach(), expected)
    assert decayed and set(before) - decayed
