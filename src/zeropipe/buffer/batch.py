"""ReplayBatch and ReanalysisBatch: what the buffer hands to the driver-side target computer.

Runs in: driver. Everything here is raw stored data arranged into windows; nothing needs a
network. The caller turns a ReplayBatch into training targets, e.g. the value target of unroll
step k is `value_reward_sum[:, k] + bootstrap_discount[:, k] * v_target(bootstrap_obs[:, k])`,
where a sequence model reads v_target in the window of `bootstrap_obs[:, :K]` and
`bootstrap_actions` at `bootstrap_positions[:, k]`.
Letters: B batch, K unroll steps, S frame stack, A actions, R reanalysis roots.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ReplayBatch:
    """Unroll windows and network-free targets for B roots.

    Below, pos is the root's position in its segment, n the segment's stored steps (own + padding),
    c = pos + k, and td = min(T, n - c) for c <= n (the buffer's 'per_step' horizon; with
    'reference', td = min(T, n - pos) for every k, buffer/windows.py).

    Attributes:
        obs: [B, S+K, *frame] frames obs[pos : pos+S+K]; the model input of unroll step k is the
            stack obs[:, k : k+S]. Frames past the stored data repeat the last stored frame.
        actions: [B, K] int64 a[pos+k]; uniform random actions where pos+k >= n.
        reward_targets: [B, K] float32 r[pos+k] (0 where pos+k >= n).
        reward_mask: [B, K] float32, 1 where pos+k < n.
        policy_targets: [B, K+1, A] float32 stored child visits at c (zeros where c >= n).
        policy_mask: [B, K+1] float32, 1 where c < n.
        value_reward_sum: [B, K+1] float32 sum_{i<td} discount^i r[c+i].
        bootstrap_discount: [B, K+1] float32 discount^td when the value at c+td is bootstrapped;
            0 when c+td is a true terminal (Monte-Carlo return) or c > n ('reference': 0
            whenever c+td >= n).
        bootstrap_obs: [B, K+1, S, *frame] the frame stack of state c+td (arbitrary where
            bootstrap_discount == 0).
        value_mask: [B, K+1] float32, 1 where c <= n (the state exists in the stored data).
        legal_masks: [B, K+1, A] bool legal actions at c (all True where c > n).
        target_indices: [B, K+1] int64 flat index of position c when c < length of the same
            segment (an own transition that can be written back to), else -1.
        weights: [B] float32 importance-sampling weights (ones without PER).
        indices: [B] int64 flat transition index of each root (priority write-back).
        make_time: [B] int64 logical time of the sample (stale after a later eviction).
        root_sampled_actions: sampled search only: [B, K+1, Ks] int64 (continuous:
            [B, K+1, Ks, D] float32) the root sampled actions the policy target at c belongs
            to (zeros where c >= n, masked by policy_mask); None when not stored.
        chance_labels: [B, K] int64 the env's chance outcome of transition pos+k (0 where
            pos+k >= n, masked by reward_mask); None when the env reports none.
        absorbing: [B, K+1] float32, 1 where c > n follows a true terminal (an absorbing state:
            value 0, and reward 0 for the step into it; value_mask is 0 there). A family that
            trains absorbing states (MuZero app. G) reads it; None means no such state.
        bootstrap_actions: [B, K] int64 (continuous: [B, K, D] float32) the action taken at
            the bootstrap state of step j, a[u_j] with u_j = min(c_j + td_j, n) the state
            `bootstrap_obs[:, j]` stacks (0 where u_j = n: no action is stored there). The
            states u_0, u_1, ... are consecutive up to n, then repeat n, so `bootstrap_obs[:, :K]`
            and these actions are one trajectory window o_{u_0}, a_{u_0}, o_{u_0+1}, ... for a
            sequence model's bootstrap (`TargetComputer`). None when not built.
        bootstrap_positions: [B, K+1] int64 u_j − u_0, the position of step j's bootstrap
            state in that window (<= j; a repeated n reads the position where n first appears).
            None when not built.

    For continuous actions `actions` is [B, K, D] float32 (uniform in [-1, 1] past the data).
    """

    obs: np.ndarray
    actions: np.ndarray
    reward_targets: np.ndarray
    reward_mask: np.ndarray
    policy_targets: np.ndarray
    policy_mask: np.ndarray
    value_reward_sum: np.ndarray
    bootstrap_discount: np.ndarray
    bootstrap_obs: np.ndarray
    value_mask: np.ndarray
    legal_masks: np.ndarray
    target_indices: np.ndarray
    weights: np.ndarray
    indices: np.ndarray
    make_time: np.ndarray
    root_sampled_actions: np.ndarray | None = None
    chance_labels: np.ndarray | None = None
    absorbing: np.ndarray | None = None
    bootstrap_actions: np.ndarray | None = None
    bootstrap_positions: np.ndarray | None = None


@dataclass(frozen=True)
class ReanalysisBatch:
    """Roots chosen for a periodic reanalysis pass.

    Attributes:
        obs: [R, S, *frame] frame stacks of the roots.
        legal_masks: [R, A] bool legal actions at the roots.
        indices: [R] int64 flat transition indices (for write_policy_targets).
        make_time: [R] int64 logical time of the sample.
    """

    obs: np.ndarray
    legal_masks: np.ndarray
    indices: np.ndarray
    make_time: np.ndarray
