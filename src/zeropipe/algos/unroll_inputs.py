"""The learner's batch → `UnrollInputs` conversion, the default of `Family.unroll_inputs`.

Runs in: driver. The learner asks the policy type's family for the tensors of one unroll, so
that a family whose actions or targets are shaped differently (continuous actions, root sampled
actions) converts its own batch; this is the MuZero default (int64 action indices).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from zeropipe.algos.losses import UnrollInputs
from zeropipe.algos.observation import stack_frames, to_tensor

if TYPE_CHECKING:
    from zeropipe.algos.targets import Targets
    from zeropipe.buffer import ReplayBatch


def unroll_inputs(
    batch: ReplayBatch,
    targets: Targets,
    frame_ndim: int,
    needs_obs_seq: bool,
    device: torch.device | str,
    actions_dtype: type = np.int64,
    absorbing: bool = False,
) -> UnrollInputs:
    """Tensors of one unroll from a sampled batch and its computed targets.

    Args:
        batch: the sampled windows.
        targets: value, reward and policy targets of the batch.
        frame_ndim: axes of one observation frame.
        needs_obs_seq: also stack every unroll step's observation (`UnrollInputs.obs_seq`).
        device: where the tensors go.
        actions_dtype: dtype of the unroll actions: int64 indices, or float32 vectors.

    Returns:
        The inputs; `sampled_actions` is left None (a sampled family fills it).
    """
    s = batch.bootstrap_obs.shape[2]
    k = batch.actions.shape[1]
    root = stack_frames(batch.obs[:, :s], frame_ndim)
    obs_seq = None
    if needs_obs_seq:
        windows = np.stack([batch.obs[:, j : j + s] for j in range(k + 1)], axis=1)
        obs_seq = to_tensor(stack_frames(windows, frame_ndim), device)
    return UnrollInputs(
        root_obs=to_tensor(root, device),
        actions=to_tensor(batch.actions.astype(actions_dtype, copy=False), device),
        value_target=targets.value,
        reward_target=targets.reward,
        policy_target=targets.policy,
        value_mask=to_tensor(batch.value_mask, device),
        reward_mask=to_tensor(batch.reward_mask, device),
        policy_mask=to_tensor(batch.policy_mask, device),
        obs_seq=obs_seq,
        # target_indices is -1 exactly where c is not one of the root segment's own steps
        own_segment_mask=to_tensor((batch.target_indices >= 0).astype(np.float32), device),
        absorbing=to_tensor(batch.absorbing, device)
        if absorbing and batch.absorbing is not None
        else None,
    )
