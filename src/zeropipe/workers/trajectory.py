"""Per-env trajectory that cuts an episode into GameSegments.

Runs in: collector. The trajectory lives as long as the collector, so a segment that is still
filling when one collect call returns is continued by the next call (the reference dropped such
partial segments). A segment is emitted once its successor has K+T
transitions to pad it with, or when the episode ends. A new episode starts from its *reset*
observation, with the history frames filled by copies of it (the reference seeded the new
segment with the previous episode's terminal frames).
"""

from __future__ import annotations

import numpy as np

from zeropipe.buffer.segment import GameSegment

_STATE = (
    "_episode_id",
    "_start_step",
    "_frames",
    "_masks",
    "_actions",
    "_sampled",
    "_chances",
    "_rewards",
    "_visits",
    "_root_values",
    "_pred_values",
)


def _copy(value):
    return list(value) if isinstance(value, list) else value


class Trajectory:
    """The not-yet-emitted part of one env's current episode.

    Args:
        segment_length: L, own transitions per segment.
        pad_length: K+T, successor transitions copied into a segment.
        frame_stack: S.
        use_priority: compute initial priorities |predicted − searched value| (else None).
    """

    def __init__(
        self, segment_length: int, pad_length: int, frame_stack: int, use_priority: bool
    ) -> None:
        self.segment_length = segment_length
        self.pad_length = pad_length
        self.frame_stack = frame_stack
        self.use_priority = use_priority
        self._episode_id = -1
        self._start_step = 0
        self._frames: list[np.ndarray] = []
        self._masks: list[np.ndarray] = []
        self._actions: list[int | np.ndarray] = []
        self._sampled: list[np.ndarray | None] = []
        self._chances: list[int | None] = []
        self._rewards: list[float] = []
        self._visits: list[np.ndarray] = []
        self._root_values: list[float] = []
        self._pred_values: list[float] = []

    def start_episode(self, frame: np.ndarray, action_mask: np.ndarray, episode_id: int) -> None:
        """Begin a new episode at its reset observation."""
        self._episode_id = episode_id
        self._start_step = 0
        self._frames = [frame] * self.frame_stack
        self._masks = [action_mask]
        for buf in (self._actions, self._rewards, self._visits, self._root_values):
            buf.clear()
        self._pred_values.clear()
        self._sampled.clear()
        self._chances.clear()

    def state_dict(self) -> dict[str, object]:
        """The unemitted part of the episode, as plain data (a collector's checkpoint)."""
        return {name: _copy(getattr(self, name)) for name in _STATE}

    def load_state_dict(self, state: dict[str, object]) -> None:
        """Continue from a `state_dict()`."""
        for name in _STATE:
            setattr(self, name, _copy(state[name]))

    def stacked_obs(self) -> np.ndarray:
        """The current model input frames [S, *frame]."""
        return np.stack(self._frames[-self.frame_stack :])

    def action_mask(self) -> np.ndarray:
        """Legal actions at the current observation."""
        return self._masks[-1]

    def append(
        self,
        action: int | np.ndarray,
        reward: float,
        visits: np.ndarray,
        root_value: float,
        predicted_value: float,
        next_frame: np.ndarray,
        next_mask: np.ndarray,
        sampled_actions: np.ndarray | None = None,
        chance: int | None = None,
    ) -> list[GameSegment]:
        """Record one step; returns the segments that became complete.

        Args:
            action: the action index, or a [D] float continuous action.
            reward: the step's training reward.
            visits: [A] policy target (sampled search over continuous actions: [K]).
            root_value: the search value of the root.
            predicted_value: the network's value of the root.
            next_frame: the observation after the step.
            next_mask: legal actions at `next_frame`.
            sampled_actions: sampled search: the root's K sampled actions ([K] or [K, D]), the
                actions `visits` belongs to; None for searches over the full action set.
            chance: the env's chance outcome of the step (`info["chance"]`), if it reports one.
        """
        action = np.asarray(action)
        self._actions.append(int(action) if action.ndim == 0 else action.astype(np.float32))
        self._sampled.append(sampled_actions)
        self._chances.append(chance)
        self._rewards.append(float(reward))
        self._visits.append(visits)
        self._root_values.append(float(root_value))
        self._pred_values.append(float(predicted_value))
        self._frames.append(next_frame)
        self._masks.append(next_mask)
        ready = []
        while len(self._actions) >= self.segment_length + self.pad_length:
            ready.append(self._emit(self.segment_length, self.pad_length, False, False))
        return ready

    def end_episode(self, terminated: bool) -> list[GameSegment]:
        """The episode ended (terminal or time limit): emit everything left."""
        ready = []
        while self._actions:
            remaining = len(self._actions)
            length = min(self.segment_length, remaining)
            pad = min(self.pad_length, remaining - length)
            ends = length + pad == remaining
            ready.append(self._emit(length, pad, ends, terminated and ends))
        return ready

    def _emit(self, length: int, pad: int, ends: bool, terminated: bool) -> GameSegment:
        n = length + pad
        s = self.frame_stack
        priorities = None
        if self.use_priority:
            diff = np.subtract(self._pred_values[:length], self._root_values[:length])
            priorities = (np.abs(diff) + 1e-6).astype(np.float32)
        continuous = isinstance(self._actions[0], np.ndarray)
        sampled = self._sampled[:n]
        chances = self._chances[:n]
        segment = GameSegment(
            obs=np.stack(self._frames[: s + n]),
            actions=np.asarray(self._actions[:n], dtype=np.float32 if continuous else np.int64),
            rewards=np.asarray(self._rewards[:n], dtype=np.float32),
            child_visits=np.stack(self._visits[:n]).astype(np.float32),
            root_values=np.asarray(self._root_values[:n], dtype=np.float32),
            action_masks=np.stack(self._masks[: n + 1]).astype(bool),
            length=length,
            ends_episode=ends,
            terminated=terminated,
            priorities=priorities,
            episode_id=self._episode_id,
            start_step=self._start_step,
            root_sampled_actions=None if sampled[0] is None else np.stack(sampled),  # type: ignore[arg-type]
            chance_labels=None if None in chances else np.asarray(chances, dtype=np.int64),
        )
        self._drop(length)
        return segment

    def _drop(self, count: int) -> None:
        """Forget the first `count` transitions, keeping S-1 history frames."""
        del self._frames[:count]
        del self._masks[:count]
        for buf in (self._actions, self._rewards, self._visits, self._root_values):
            del buf[:count]
        del self._pred_values[:count]
        del self._sampled[:count]
        del self._chances[:count]
        self._start_step += count
