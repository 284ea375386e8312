"""Synthetic GameSegments whose every field encodes where it came from, for hand-checked tests.

Step e of episode `episode_id` (counted from the episode start) has:
frame value `frame_value(episode_id, e)` (history frames before the start repeat step 0's frame),
action e % A, reward e + 1, one-hot visits on action e % A, legal mask all True except the last
action, which is legal only on even steps.
"""

from __future__ import annotations

import numpy as np

from zeropipe.buffer import GameSegment, ReplayBuffer


def frame_value(episode_id: int, step: int) -> float:
    """The constant every element of the frame of `step` holds (before dtype conversion)."""
    return float(episode_id * 1000 + max(step, 0))


def make_segment(
    length: int,
    *,
    pad: int = 0,
    frame_stack: int = 1,
    frame_shape: tuple[int, ...] = (4,),
    num_actions: int = 2,
    ends_episode: bool = False,
    terminated: bool = False,
    episode_id: int = 0,
    start_step: int = 0,
    priorities: np.ndarray | None = None,
    dtype: np.dtype = np.float32,
) -> GameSegment:
    """One segment: `length` own steps from `start_step` plus `pad` steps of padding."""
    n = length + pad
    steps = start_step + np.arange(n)
    frame_steps = start_step + np.arange(-(frame_stack - 1), n + 1)
    values = np.array([frame_value(episode_id, e) for e in frame_steps])
    if np.dtype(dtype) == np.uint8:
        values = values % 256
    obs = np.broadcast_to(
        values.reshape(-1, *([1] * len(frame_shape))), (len(values), *frame_shape)
    )
    visits = np.zeros((n, num_actions), dtype=np.float32)
    visits[np.arange(n), steps % num_actions] = 1.0
    masks = np.ones((n + 1, num_actions), dtype=bool)
    masks[:, -1] = (start_step + np.arange(n + 1)) % 2 == 0
    return GameSegment(
        obs=np.ascontiguousarray(obs, dtype=dtype),
        actions=(steps % num_actions).astype(np.int64),
        rewards=(steps + 1).astype(np.float32),
        child_visits=visits,
        root_values=np.zeros(n, dtype=np.float32),
        action_masks=masks,
        length=length,
        ends_episode=ends_episode,
        terminated=terminated,
        priorities=priorities,
        episode_id=episode_id,
        start_step=start_step,
    )


def make_episode(
    episode_len: int,
    segment_length: int,
    pad: int,
    *,
    terminated: bool = True,
    **kwargs,
) -> list[GameSegment]:
    """An episode cut into segments as the collector cuts it: each padded with up to `pad`
    steps of its successor; the last reaches the episode end."""
    segments = []
    for start in range(0, episode_len, segment_length):
        length = min(segment_length, episode_len - start)
        own_pad = min(pad, episode_len - start - length)
        ends = start + length + own_pad == episode_len
        segments.append(
            make_segment(
                length,
                pad=own_pad,
                start_step=start,
                ends_episode=ends,
                terminated=terminated and ends,
                **kwargs,
            )
        )
    return segments


def plain_buffer(num_unroll_steps: int) -> ReplayBuffer:
    """A small uniform-sampling buffer (capacity 100, td 2, discount 0.99, seed 0)."""
    return ReplayBuffer(
        100,
        num_unroll_steps=num_unroll_steps,
        td_steps=2,
        discount=0.99,
        use_priority=False,
        alpha=0.6,
        beta=0.4,
        seed=0,
    )
