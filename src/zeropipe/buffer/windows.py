"""Unroll windows: gather a ReplayBatch for B roots from the store with one gather per field.

Runs in: driver. No per-sample Python: every field is an index array [B, ...] built from the roots'
segment offsets, clamped into the stored data, and gathered from the rings by fancy indexing.

Value targets are n-step returns; `WindowSpec.horizon` picks the horizon and when the bootstrap is
dropped. 'per_step' (with the terminal/truncation distinction the reference lacks): for
c = pos + k <= n, td = min(T, n - c), the reward sum over [c, c+td) is bootstrapped at state c+td
with discount^td, unless c+td == n is a true terminal (ends_episode and terminated), where the
return is Monte-Carlo (discount 0); a time-limit truncation bootstraps from the final observation
obs[n]. 'reference' (`MuZeroGameBuffer._prepare_reward_value_context` and
`_compute_target_reward_value`): td = min(T, n - pos) once per root, the same for all K+1 steps;
step c bootstraps at c+td only if c+td < n, whatever ended the data, else its target is the
reward sum over [c, min(c+td, n)) alone. The two give the same reward sums and bootstrap states;
they differ only where c + T >= n and the data does not end in a true terminal: 'per_step' then
bootstraps discount^(n-c) v(obs[n]), 'reference' does not. States past a true terminal (c > n)
are marked `absorbing` (value_mask stays 0 there): whether they are trained (value and reward 0,
MuZero app. G) is the family's choice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zeropipe.buffer.batch import ReplayBatch
from zeropipe.buffer.store import SegmentRows, SegmentStore


@dataclass(frozen=True)
class WindowSpec:
    """Geometry shared by every window of one buffer."""

    num_unroll_steps: int  # K
    td_steps: int  # T
    discount: float
    # 'per_step' or 'reference': the n-step horizon rule (module docstring; `policy.n_step_horizon`)
    horizon: str = "per_step"


def frame_stacks(store: SegmentStore, seg: SegmentRows, states: np.ndarray) -> np.ndarray:
    """Frame stacks of stored states: [...] positions -> [..., S, *frame].

    The stack of state t is obs[t : t+S] of its segment (obs[t+S-1] is the newest frame); frame
    indices past the stored data repeat the last stored frame. `seg` arrays must broadcast
    against `states` after adding a trailing axis.
    """
    s = store.spec.frame_stack
    last = seg.num_stored + s - 1
    frame = np.minimum(states[..., None] + np.arange(s), last[..., None])
    return store.frames.take("obs", seg.frame_offset[..., None] + frame)


def build_batch(
    store: SegmentStore,
    roots: tuple[np.ndarray, np.ndarray],
    spec: WindowSpec,
    rng: np.random.Generator,
    **sampling: np.ndarray,
) -> ReplayBatch:
    """ReplayBatch for roots given as (table rows [B], positions [B]).

    Args:
        store: the stored segments.
        roots: table rows and positions (< length) of the roots.
        spec: unroll and n-step geometry.
        rng: source of the random actions that pad unrolls past the stored data.
        **sampling: weights, indices and make_time, passed through.

    Returns:
        The batch; see ReplayBatch for every field's meaning and shape.
    """
    rows, pos = roots
    seg = store.rows_of(rows)
    fields = _unroll_fields(store, seg, pos, spec, rng)
    fields.update(_value_fields(store, seg, pos, spec))
    return ReplayBatch(**fields, **sampling)


def _unroll_fields(
    store: SegmentStore,
    seg: SegmentRows,
    pos: np.ndarray,
    spec: WindowSpec,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    k = spec.num_unroll_steps
    s = store.spec.frame_stack
    n = seg.num_stored[:, None]
    last_frame = n + s - 1
    frame = np.minimum(pos[:, None] + np.arange(s + k), last_frame)  # [B, S+K]
    obs = store.frames.take("obs", seg.frame_offset[:, None] + frame)

    c = pos[:, None] + np.arange(k + 1)  # [B, K+1]
    step = seg.step_offset[:, None] + np.minimum(c, n)  # row n of a segment is its zero row
    in_data = c < n
    stored_actions = store.steps.take("actions", step[:, :k])  # [B, K] or [B, K, D]
    visits = store.steps.take("child_visits", step)
    legal = store.steps.take("action_masks", step)
    fields = _action_fields(store, step, in_data, stored_actions, rng)
    return fields | {
        "obs": obs,
        "reward_targets": np.where(
            in_data[:, :k], store.steps.take("rewards", step[:, :k]), 0.0
        ).astype(np.float32),
        "reward_mask": in_data[:, :k].astype(np.float32),
        "policy_targets": np.where(in_data[..., None], visits, 0.0).astype(np.float32),
        "policy_mask": in_data.astype(np.float32),
        "legal_masks": np.where((c <= n)[..., None], legal, True),
        "target_indices": np.where(c < seg.length[:, None], seg.flat_start[:, None] + c, -1),
    }


def _action_fields(
    store: SegmentStore,
    step: np.ndarray,
    in_data: np.ndarray,
    stored: np.ndarray,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """The unroll actions (random past the stored data: uniform indices, or uniform in [-1, 1]^D
    for continuous actions) and, when stored, the root sampled actions of every state (zeros
    where c >= n, which `policy_mask` masks) and the chance labels of the unroll steps (zeros
    where c >= n, which `reward_mask` masks)."""
    k = stored.shape[1]
    inside = in_data[:, :k].reshape(in_data.shape[0], k, *([1] * (stored.ndim - 2)))
    if store.spec.action_dim > 0:
        random = rng.uniform(-1.0, 1.0, size=stored.shape).astype(np.float32)
        actions = np.where(inside, stored, random).astype(np.float32)
    else:
        random = rng.integers(store.spec.num_actions, size=stored.shape)
        actions = np.where(inside, stored, random).astype(np.int64)
    fields = {"actions": actions}
    if store.spec.sampled_shape is not None:
        sampled = store.steps.take("root_sampled_actions", step)  # [B, K+1, Ks(, D)]
        extra = (1,) * (sampled.ndim - 2)
        mask = in_data.reshape(*in_data.shape, *extra)
        fields["root_sampled_actions"] = np.where(mask, sampled, 0).astype(sampled.dtype)
    if store.spec.chance_labels:
        chances = store.steps.take("chance_labels", step[:, :k])  # [B, K]
        fields["chance_labels"] = np.where(in_data[:, :k], chances, 0).astype(np.int64)
    return fields


def _value_fields(
    store: SegmentStore, seg: SegmentRows, pos: np.ndarray, spec: WindowSpec
) -> dict[str, np.ndarray]:
    k, t = spec.num_unroll_steps, spec.td_steps
    n = seg.num_stored[:, None]
    c = pos[:, None] + np.arange(k + 1)  # [B, K+1]
    exists = c <= n
    ends_terminal = (seg.ends_episode & seg.terminated)[:, None]  # [B, 1]
    td, bootstraps = _horizons(spec, c, n, ends_terminal)  # [B, K+1] each

    i = np.arange(t)  # [T]
    reward_rows = seg.step_offset[:, None, None] + np.minimum(c[..., None] + i, n[..., None])
    rewards = store.steps.take("rewards", reward_rows).astype(np.float64)  # [B, K+1, T]
    powers = spec.discount ** i.astype(np.float64)
    summed = (i < td[..., None]) & (c[..., None] + i < n[..., None])  # the rewards that exist
    reward_sum = np.sum(np.where(summed, rewards * powers, 0.0), axis=-1)

    target = np.minimum(c + td, n)  # state c+td, clamped into the data where c+td > n
    discount = np.where(exists & bootstraps, spec.discount ** td.astype(np.float64), 0.0)
    absorbing = (c > n) & ends_terminal
    bootstrap_obs = frame_stacks(store, _expand(seg), target)  # [B, K+1, S, *frame]
    # a[target] for the first K states; row n of a segment is its zero row (action 0)
    bootstrap_actions = store.steps.take("actions", seg.step_offset[:, None] + target[:, :k])
    return {
        "value_reward_sum": np.where(exists, reward_sum, 0.0).astype(np.float32),
        "bootstrap_discount": discount.astype(np.float32),
        "bootstrap_obs": bootstrap_obs,
        "bootstrap_actions": bootstrap_actions,
        "bootstrap_positions": (target - target[:, :1]).astype(np.int64),
        "value_mask": exists.astype(np.float32),
        "absorbing": absorbing.astype(np.float32),
    }


def _horizons(
    spec: WindowSpec, c: np.ndarray, n: np.ndarray, ends_terminal: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(td, whether state c+td is bootstrapped) for the states c [B, K+1] of roots whose data
    holds n [B, 1] steps, under `spec.horizon` (module docstring).

    'per_step' reaches the data's end from every step and tells a true terminal (no value after
    it) from a time limit (the final observation's value). 'reference' fixes td at the root
    (the reference clips it to [1, n - pos], `MuZeroGameBuffer._prepare_reward_value_context`;
    pos < n here, so min(T, n - pos) >= 1) and keeps the bootstrap only strictly inside the
    data, the same after a terminal as after a time limit."""
    t = spec.td_steps
    if spec.horizon == "reference":
        td = np.broadcast_to(np.minimum(t, n - c[:, :1]), c.shape)
        return td, c + td < n
    td = np.clip(np.minimum(t, n - c), 0, t)
    terminal = (np.minimum(c + td, n) == n) & ends_terminal
    return td, ~terminal


def _expand(seg: SegmentRows) -> SegmentRows:
    """Add a trailing axis to every per-root array so it broadcasts against [B, K+1]."""
    return SegmentRows(**{name: value[:, None] for name, value in vars(seg).items()})
