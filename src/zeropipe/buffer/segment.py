"""GameSegment: a run of consecutive transitions of one episode, the unit the collector emits.

Runs in: collector (built), driver (stored). A segment owns `length` transitions and carries up to
K+T transitions of its successor as padding, so that unroll windows and n-step targets rooted in
its own positions never need another segment. Frames are stored once: the model input for
transition t is the stack `obs[t : t + S]` (S = frame_stack), never a stored stacked copy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GameSegment:
    """Consecutive transitions of one episode plus the context their targets need.

    Let n = len(actions) (own transitions plus padding) and S the frame stack.

    Attributes:
        obs: [S-1 + n + 1, *frame] frames. The first S-1 are history (the episode's earlier frames,
            or copies of the reset frame at an episode start); obs[t + S - 1] is the observation
            before action t, and obs[-1] the observation after the last stored action.
        actions: [n] int64, the action taken at each step; or [n, D] float32 continuous actions
            in [-1, 1] (scaled to the env's bounds by the env).
        rewards: [n] float32, the (training) reward of each step.
        child_visits: [n, A] float32, normalised root visit distribution (policy target).
        root_values: [n] float32, the search root value at each step.
        action_masks: [n + 1, A] bool, legal actions at each stored observation.
        length: own transitions (≤ game_segment_length); the remaining n - length are padding.
        ends_episode: the stored data reaches the episode end: obs[-1] is the final observation.
        terminated: with ends_episode, the end is a true terminal (value 0 after it); False means
            a time-limit truncation, after which the final observation is bootstrapped.
        priorities: [length] float32 initial priorities, or None for the buffer's max priority.
        episode_id: collector-unique id of the episode (for diagnostics and tests).
        start_step: index of transition 0 within its episode.
        root_sampled_actions: sampled search only: the K actions the root search sampled at
            each step ([n, K] int64 discrete, [n, K, D] float32 continuous), the actions the
            policy target's K entries belong to; None for searches over the full action set.
            Carried on the wire; the replay buffer refuses it (and continuous actions) until it
            stores them.
        chance_labels: [n] int64, the env's chance outcome of each stored step (`info["chance"]`,
            e.g. 2048's spawn code) when the env reports one; None otherwise. Read by
            stochastic_muzero with `use_true_chance_label`.
    """

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    child_visits: np.ndarray
    root_values: np.ndarray
    action_masks: np.ndarray
    length: int
    ends_episode: bool
    terminated: bool
    priorities: np.ndarray | None = None
    episode_id: int = 0
    start_step: int = 0
    root_sampled_actions: np.ndarray | None = None
    chance_labels: np.ndarray | None = None

    @property
    def num_stored(self) -> int:
        """n: own transitions plus padding."""
        return int(self.actions.shape[0])

    @property
    def frame_stack(self) -> int:
        """S, derived from the frame count."""
        return int(self.obs.shape[0]) - self.num_stored

    def validate(self) -> None:
        """Check the shape invariants; raises ValueError naming the first broken one."""
        n = self.num_stored
        checks = {
            "rewards": self.rewards.shape[0] == n,
            "child_visits": self.child_visits.shape[0] == n,
            "root_values": self.root_values.shape[0] == n,
            "action_masks": self.action_masks.shape[0] == n + 1,
            "obs": self.obs.shape[0] >= n + 1,
            "length": 0 < self.length <= n,
            "priorities": self.priorities is None or self.priorities.shape[0] == self.length,
            "terminated": self.ends_episode or not self.terminated,
            "actions kind": _actions_ok(self.actions),
            "root_sampled_actions": self.root_sampled_actions is None
            or (
                self.root_sampled_actions.ndim == self.actions.ndim + 1
                and self.root_sampled_actions.shape[0] == n
                and self.root_sampled_actions.dtype.kind == self.actions.dtype.kind
            ),
            "chance_labels": self.chance_labels is None
            or (self.chance_labels.shape == (n,) and self.chance_labels.dtype.kind in "iu"),
        }
        for name, ok in checks.items():
            if not ok:
                raise ValueError(
                    f"GameSegment invariant broken: {name} (n={n}, length={self.length})"
                )


def _actions_ok(actions: np.ndarray) -> bool:
    """[n] integer (discrete) or [n, D] float (continuous) actions."""
    if actions.ndim == 1:
        return actions.dtype.kind in "iu"
    return actions.ndim == 2 and actions.dtype.kind == "f"
