"""SegmentStore: the stored GameSegments as flat rings plus a per-segment table, oldest first.

Runs in: driver. Two rings hold the data: `frames` (n + S rows per segment: S-1 history frames, one
frame per stored step, the final observation) and `steps` (n + 1 rows per segment: actions, rewards,
child visits and root values of the n stored steps plus one zero row, and the n + 1 action masks;
the optional root sampled actions and chance labels likewise).
The table keeps, per live segment, its logical offsets into both rings and its scalars. Each own
transition also has an ever-increasing absolute id; the flat index the public API speaks of is
`absolute id - base`, where `base` is the absolute id of the oldest live transition.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zeropipe.buffer.ring import RingColumns
from zeropipe.buffer.segment import GameSegment

TABLE_FIELDS = (
    "abs_start",  # absolute id of transition 0
    "frame_offset",  # logical row of obs[0] in the frames ring
    "step_offset",  # logical row of step 0 in the steps ring
    "num_stored",  # n
    "length",  # own transitions
    "ends_episode",
    "terminated",
    "reanalyze_count",
    "episode_id",
    "start_step",
)


@dataclass(frozen=True)
class DataSpec:
    """What every stored segment must agree on (fixed by the first push)."""

    frame_shape: tuple[int, ...]
    frame_dtype: np.dtype
    frame_stack: int
    num_actions: int  # width of the policy targets (A, or K over the root sampled actions)
    action_dim: int = 0  # D of continuous [n, D] float actions; 0 for discrete [n] indices
    mask_width: int = -1  # width of the action masks; -1: num_actions
    sampled_shape: tuple[int, ...] | None = None  # one step's root sampled actions, if stored
    chance_labels: bool = False  # the env's per-step chance outcomes are stored

    @classmethod
    def of(cls, segment: GameSegment) -> DataSpec:
        """The spec a segment implies."""
        sampled = segment.root_sampled_actions
        return cls(
            frame_shape=tuple(segment.obs.shape[1:]),
            frame_dtype=np.dtype(segment.obs.dtype),
            frame_stack=segment.frame_stack,
            num_actions=int(segment.child_visits.shape[1]),
            action_dim=int(segment.actions.shape[1]) if segment.actions.ndim == 2 else 0,
            mask_width=int(segment.action_masks.shape[1]),
            sampled_shape=None if sampled is None else tuple(int(x) for x in sampled.shape[1:]),
            chance_labels=segment.chance_labels is not None,
        )

    @property
    def masks(self) -> int:
        """Width of the stored action masks."""
        return self.num_actions if self.mask_width < 0 else self.mask_width

    def as_tuple(self) -> tuple:
        """Plain data for a state dict (read back by `from_tuple`)."""
        shape, dtype, stack = self.frame_shape, self.frame_dtype.str, self.frame_stack
        return (
            shape,
            dtype,
            stack,
            self.num_actions,
            self.action_dim,
            self.masks,
            self.sampled_shape,
            self.chance_labels,
        )

    @classmethod
    def from_tuple(cls, data: tuple) -> DataSpec:
        """The spec of `as_tuple` (the shorter tuple of an older state dict: discrete actions, no
        sampled actions, no chance labels)."""
        shape, dtype, stack, num_actions, *rest = data
        action_dim, mask_width, sampled, chances = list(rest) + [0, -1, None, False][len(rest) :]
        if int(mask_width) < 0:  # written before the masks' width was stored: num_actions wide
            mask_width = num_actions
        return cls(
            tuple(shape),
            np.dtype(dtype),
            int(stack),
            int(num_actions),
            int(action_dim),
            int(mask_width),
            None if sampled is None else tuple(int(x) for x in sampled),
            bool(chances),
        )


@dataclass(frozen=True)
class SegmentRows:
    """Table columns gathered for a batch of roots (each array [B], one entry per root)."""

    frame_offset: np.ndarray
    step_offset: np.ndarray
    num_stored: np.ndarray
    length: np.ndarray
    ends_episode: np.ndarray
    terminated: np.ndarray
    flat_start: np.ndarray  # flat index of the segment's transition 0


class SegmentStore:
    """FIFO storage of segments; see the module docstring for the layout."""

    def __init__(self) -> None:
        self.spec: DataSpec | None = None
        self.frames: RingColumns | None = None
        self.steps: RingColumns | None = None
        self.table = {name: np.zeros(0, dtype=np.int64) for name in TABLE_FIELDS}
        self.next_abs = 0  # absolute id the next pushed transition gets

    @property
    def num_segments(self) -> int:
        """Live segments."""
        return int(self.table["abs_start"].shape[0])

    @property
    def base(self) -> int:
        """Absolute id of the oldest live transition (== next_abs when empty)."""
        return int(self.table["abs_start"][0]) if self.num_segments else self.next_abs

    @property
    def num_transitions(self) -> int:
        """Live own transitions."""
        return self.next_abs - self.base

    def nbytes(self) -> int:
        """Bytes of the live stored data (frames, steps, table)."""
        rings = [r.nbytes() for r in (self.frames, self.steps) if r is not None]
        return sum(rings) + sum(a.nbytes for a in self.table.values())

    def allocated_nbytes(self) -> int:
        """Bytes allocated by the rings and the table."""
        rings = [r.allocated_nbytes() for r in (self.frames, self.steps) if r is not None]
        return sum(rings) + sum(a.nbytes for a in self.table.values())

    def check(self, segments: list[GameSegment]) -> None:
        """Validate segments and that they match the stored data (and each other).

        Raises:
            ValueError: naming the first broken invariant or mismatching field.
        """
        for segment in segments:
            segment.validate()
            expected = self.spec or DataSpec.of(segments[0])
            if DataSpec.of(segment) != expected:
                raise ValueError(
                    f"GameSegment of episode {segment.episode_id} does not match the buffer's "
                    f"data: {DataSpec.of(segment)} vs {expected}; all segments pushed into one "
                    "buffer need the same frame shape, frame dtype, frame stack, action count, "
                    "action kind, root sampled actions and chance labels"
                )

    def append(self, segment: GameSegment) -> None:
        """Store one (already checked) segment as the newest."""
        if self.spec is None:
            self._allocate(DataSpec.of(segment))
        n = segment.num_stored
        a = self.spec.num_actions
        frame_offset = self.frames.append({"obs": segment.obs})
        columns = {
            "actions": _with_zero_row(segment.actions, self.steps.row_specs["actions"][1]),
            "rewards": np.append(segment.rewards.astype(np.float32), 0.0),
            "child_visits": np.concatenate(
                [segment.child_visits, np.zeros((1, a))], axis=0, dtype=np.float32
            ),
            "root_values": np.append(segment.root_values.astype(np.float32), 0.0),
            "action_masks": segment.action_masks.astype(bool),
        }
        if self.spec.sampled_shape is not None:
            sampled, dtype = segment.root_sampled_actions, self.steps.row_specs["actions"][1]
            columns["root_sampled_actions"] = _with_zero_row(sampled, dtype)
        if self.spec.chance_labels:
            columns["chance_labels"] = _with_zero_row(segment.chance_labels, np.dtype(np.int64))
        step_offset = self.steps.append(columns)
        row = (self.next_abs, frame_offset, step_offset, n, segment.length)
        row += (segment.ends_episode, segment.terminated, 0, segment.episode_id)
        row += (segment.start_step,)
        for name, value in zip(TABLE_FIELDS, row, strict=True):
            self.table[name] = np.append(self.table[name], np.int64(value))
        self.next_abs += segment.length

    def reserve(self, num_transitions: int) -> None:
        """Size the rings for `num_transitions` own transitions shaped like the stored ones.

        Called once after the first push: the rings then rarely grow (each growth copies the live
        data), and the allocation stays close to what a full buffer needs.
        """
        if self.num_transitions == 0:
            return
        for ring in (self.frames, self.steps):
            ring.reserve(int(np.ceil(num_transitions * ring.num_rows / self.num_transitions)))

    def evict_oldest(self, num_segments: int) -> int:
        """Drop the `num_segments` oldest segments; returns the own transitions dropped."""
        if num_segments <= 0:
            return 0
        before = self.base
        for name in TABLE_FIELDS:
            self.table[name] = self.table[name][num_segments:]
        if self.num_segments:
            self.frames.release(int(self.table["frame_offset"][0]))
            self.steps.release(int(self.table["step_offset"][0]))
        else:
            self.frames.release(self.frames.tail)
            self.steps.release(self.steps.tail)
        return self.base - before

    def locate(self, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Map flat transition indices [B] to (table row [B], position in segment [B])."""
        absolute = np.asarray(flat, dtype=np.int64) + self.base
        rows = np.searchsorted(self.table["abs_start"], absolute, side="right") - 1
        return rows, absolute - self.table["abs_start"][rows]

    def rows_of(self, rows: np.ndarray) -> SegmentRows:
        """Table columns for a batch of table rows [B]."""
        t = self.table
        return SegmentRows(
            frame_offset=t["frame_offset"][rows],
            step_offset=t["step_offset"][rows],
            num_stored=t["num_stored"][rows],
            length=t["length"][rows],
            ends_episode=t["ends_episode"][rows].astype(bool),
            terminated=t["terminated"][rows].astype(bool),
            flat_start=t["abs_start"][rows] - self.base,
        )

    def state_dict(self) -> dict:
        """Plain-data copy of the contents."""
        if self.spec is None:
            return {"spec": None, "next_abs": self.next_abs}
        spec = self.spec
        return {
            "spec": spec.as_tuple(),
            "next_abs": self.next_abs,
            "table": {k: v.copy() for k, v in self.table.items()},
            "frames": {"head": self.frames.head, "obs": self.frames.live("obs")},
            "steps": {"head": self.steps.head}
            | {k: self.steps.live(k) for k in self.steps.row_specs},
        }

    def load_state_dict(self, state: dict) -> None:
        """Replace the contents with those of `state_dict()`."""
        self.spec = self.frames = self.steps = None
        self.table = {name: np.zeros(0, dtype=np.int64) for name in TABLE_FIELDS}
        self.next_abs = int(state["next_abs"])
        if state["spec"] is None:
            return
        self._allocate(DataSpec.from_tuple(tuple(state["spec"])))
        self.table = {k: np.asarray(v, dtype=np.int64).copy() for k, v in state["table"].items()}
        frames, steps = dict(state["frames"]), dict(state["steps"])
        self.frames.restore(frames.pop("head"), frames)
        self.steps.restore(steps.pop("head"), steps)

    def _allocate(self, spec: DataSpec) -> None:
        self.spec = spec
        a = (spec.num_actions,)
        continuous = spec.action_dim > 0
        action = ((spec.action_dim,), np.float32) if continuous else ((), np.int64)
        columns = {
            "actions": action,
            "rewards": ((), np.float32),
            "child_visits": (a, np.float32),
            "root_values": ((), np.float32),
            "action_masks": ((spec.masks,), np.bool_),
        }
        if spec.sampled_shape is not None:
            columns["root_sampled_actions"] = (spec.sampled_shape, action[1])
        if spec.chance_labels:
            columns["chance_labels"] = ((), np.int64)
        self.frames = RingColumns({"obs": (spec.frame_shape, spec.frame_dtype)})
        self.steps = RingColumns(columns)


def _with_zero_row(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """[n, ...] values as `dtype` with one zero row appended: [n + 1, ...]."""
    zero = np.zeros((1, *values.shape[1:]), dtype=dtype)
    return np.concatenate([values.astype(dtype, copy=False), zero], axis=0)
