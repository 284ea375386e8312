"""AdamW's parameter groups: one group (every parameter decayed), or the reference's per type.

Runs in: driver (the learner's optimiser). `policy.optimizer_groups: reference` with `optim_type:
AdamW` groups the parameters as the reference does for the type (docs/parity.md S14); its
section says which rule (`PolicyConfig.REFERENCE_ADAMW`):

- `by_module` (the MuZero family's AdamW): biases, and the weights of normalisation and
  embedding layers, are not decayed; the weights of linear, convolution and recurrent layers
  are. A parameter of any other layer (the reference has none; it asserts) follows the
  `by_dimension` rule. Betas (0.9, 0.999).
- `by_dimension` (nanoGPT's rule: the sampled types and the UniZero types): parameters of two or
  more dimensions are decayed, the others (biases, norm weights) are not. Betas (0.9, 0.95).

A type whose reference has no AdamW (stochastic_muzero) has no rule: one group. SGD and Adam
are one group in every case, as in the reference.
"""

from __future__ import annotations

from typing import Any

import torch

DECAYED_LAYERS = (
    torch.nn.Linear,
    torch.nn.Conv1d,
    torch.nn.Conv2d,
    torch.nn.RNNBase,  # LSTM, GRU: weight_ih_l0, weight_hh_l0, ...
)
UNDECAYED_LAYERS = (
    torch.nn.LayerNorm,
    torch.nn.GroupNorm,
    torch.nn.Embedding,
    torch.nn.modules.batchnorm._BatchNorm,
)
BETAS = {"by_module": (0.9, 0.999), "by_dimension": (0.9, 0.95)}


def reference_groups(network: torch.nn.Module, rule: str, weight_decay: float) -> dict[str, Any]:
    """AdamW's arguments under the reference's `rule`: `params` (a decayed and an undecayed
    group, in the network's parameter order) and `betas`."""
    decayed = _decayed(network, rule)
    params = list(network.parameters())
    groups = [
        {"params": [p for p in params if id(p) in decayed], "weight_decay": weight_decay},
        {"params": [p for p in params if id(p) not in decayed], "weight_decay": 0.0},
    ]
    return {"params": groups, "betas": BETAS[rule]}


def _decayed(network: torch.nn.Module, rule: str) -> set[int]:
    """The ids of the parameters that `rule` decays."""
    if rule == "by_dimension":
        return {id(p) for p in network.parameters() if p.dim() >= 2}
    if rule != "by_module":
        raise ValueError(f"unknown AdamW grouping rule {rule!r}")
    decayed: set[int] = set()
    for module in network.modules():
        for name, p in module.named_parameters(recurse=False):
            if "bias" in name or isinstance(module, UNDECAYED_LAYERS):
                continue
            if isinstance(module, DECAYED_LAYERS) or p.dim() >= 2:
                decayed.add(id(p))
    return decayed
