"""Tiny learner set-ups for hand-checked tests: policy configs, networks and sampled batches.

Segments come from `tests.buffer.factories` (step e of episode 0 has frame value
e and reward e + 1), so targets built from these batches can be computed by hand.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from pydantic import BaseModel

from zeropipe.algos.losses import UnrollInputs
from zeropipe.buffer import GameSegment, ReplayBatch, ReplayBuffer
from zeropipe.config import PolicyConfig
from zeropipe.models import MuZeroNetwork

OBS, A = 4, 2  # frame shape (OBS,), one frame per stack, A actions


def tiny_policy(norm_type: str = "LN", **policy) -> PolicyConfig:
    """A muzero policy section with a tiny MLP; `policy` overrides any field of the section of
    its `type` (a section given as a model is read as its fields)."""
    model = dict(
        kind="mlp",
        latent_dim=16,
        hidden_dim=16,
        num_layers=1,
        head_hidden_dim=16,
        norm_type=norm_type,
        value_support_range=(-10, 11, 1),
        reward_support_range=(-10, 11, 1),
    )
    if policy.get("type", "muzero") not in ("unizero", "sampled_unizero"):
        model.update(proj_hidden_dim=16, proj_out_dim=16, pred_hidden_dim=16)
    defaults = {
        "type": "muzero",
        "model": model,
        "num_unroll_steps": 2,
        "td_steps": 3,
        "discount_factor": 0.5,
        "batch_size": 4,
        "replay_buffer_size": 1000,
        "target_update_freq": 1000,  # targets stay fixed unless a test asks otherwise
        "reanalyze_ratio": 0.0,
        "learner_autocast": "none",  # float32, whatever the CPU (auto: bf16 on some)
    }
    given = {k: v.model_dump() if isinstance(v, BaseModel) else v for k, v in policy.items()}
    if isinstance(given.get("model"), dict):
        given["model"] = {**model, **given["model"]}
    return PolicyConfig.model_validate({**defaults, **given})


def tiny_network(cfg: PolicyConfig, *, seed: int = 0, reinit: bool = True) -> MuZeroNetwork:
    """A MuZeroNetwork for (OBS,) frames and A actions.

    Args:
        cfg: policy settings (model sizes, SSL weight).
        seed: torch seed of the initial weights.
        reinit: redraw every parameter from N(0, 0.2²); the zero-initialised output heads of a
            fresh network would otherwise give zero gradients to most weights.
    """
    torch.manual_seed(seed)
    net = MuZeroNetwork((OBS,), A, cfg.model, with_projection=cfg.ssl_loss_weight > 0)
    if reinit:
        with torch.no_grad():
            for p in net.parameters():
                torch.nn.init.normal_(p, std=0.2)
    return net


def replay_buffer(
    cfg: PolicyConfig, *, use_priority: bool = False, cls: type[ReplayBuffer] = ReplayBuffer
) -> ReplayBuffer:
    """An empty `cls` (a ReplayBuffer) with the config's K, T, γ and capacity; α = β = 1."""
    return cls(
        cfg.replay_buffer_size,
        num_unroll_steps=cfg.num_unroll_steps,
        td_steps=cfg.td_steps,
        discount=cfg.discount_factor,
        use_priority=use_priority,
        alpha=1.0,
        beta=1.0,
        seed=0,
    )


def sample_batch(cfg: PolicyConfig, num_roots: int, *segments: GameSegment) -> ReplayBatch:
    """`num_roots` roots sampled uniformly (without replacement) from `segments`."""
    buffer = replay_buffer(cfg)
    buffer.push(list(segments))
    return buffer.sample(num_roots)


def all_roots(cfg: PolicyConfig, *segments: GameSegment) -> tuple[ReplayBatch, np.ndarray]:
    """Every stored root once, and the batch row of each flat index ([N] int64)."""
    buffer = replay_buffer(cfg)
    buffer.push(list(segments))
    batch = buffer.sample(buffer.num_transitions)
    row_of = np.empty(buffer.num_transitions, dtype=np.int64)
    row_of[batch.indices] = np.arange(batch.indices.size)
    return batch, row_of


def rows(batch: ReplayBatch, index: np.ndarray | list[int]) -> ReplayBatch:
    """The sub-batch of the given rows (every array field sliced along the batch axis)."""
    index = np.asarray(index, dtype=np.int64)
    fields = vars(batch).items()
    return ReplayBatch(**{k: None if v is None else v[index] for k, v in fields})


def parameters(net: torch.nn.Module) -> list[torch.Tensor]:
    """Detached copies of the network's parameters, in `parameters()` order."""
    return [p.detach().clone() for p in net.parameters()]


def state(net: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A deep copy of the network's state dict (parameters and buffers)."""
    return copy.deepcopy(net.state_dict())


def random_unroll_inputs(batch: int, unroll_steps: int, seed: int = 1) -> UnrollInputs:
    """Random targets for `batch` samples of `unroll_steps` steps over OBS-dim observations and A
    actions; sample 0 has data for one action only (its later steps are masked)."""
    g = torch.Generator().manual_seed(seed)
    b, k = batch, unroll_steps
    policy = torch.rand(b, k + 1, A, generator=g)
    reward_mask, step_mask = torch.ones(b, k), torch.ones(b, k + 1)
    reward_mask[0, 1:] = 0.0
    step_mask[0, 2:] = 0.0
    return UnrollInputs(
        root_obs=torch.randn(b, OBS, generator=g),
        actions=torch.randint(0, A, (b, k), generator=g),
        value_target=torch.rand(b, k + 1, generator=g) * 8 - 4,
        reward_target=torch.rand(b, k, generator=g) * 8 - 4,
        policy_target=policy / policy.sum(-1, keepdim=True),
        value_mask=step_mask,
        reward_mask=reward_mask,
        policy_mask=step_mask.clone(),
        obs_seq=torch.randn(b, k + 1, OBS, generator=g),
    )
