"""SumTree: prefix-sum tree over a fixed number of slots for O(log N) proportional sampling.

Runs in: driver. Vectorised numpy over the batch: an update rewrites only the ancestors of the
changed leaves, level by level, and a batch of B draws descends all B paths at once, so a
sample costs O(B log N) numpy work instead of an O(N) pass over the priorities. Every inner node
is recomputed as `left + right` (never updated by deltas), so the tree is a pure function of its
leaves: no floating-point drift, and a rebuilt tree equals an incrementally updated one bit for bit.
"""

from __future__ import annotations

import numpy as np


class SumTree:
    """Complete binary tree whose leaves hold non-negative masses.

    Args:
        num_slots: number of leaves; rounded up to a power of two.
    """

    def __init__(self, num_slots: int) -> None:
        self.depth = max(0, int(num_slots - 1).bit_length())
        self.capacity = 1 << self.depth
        self._nodes = np.zeros(2 * self.capacity, dtype=np.float64)  # [2C]; leaves at [C, 2C)

    @property
    def total(self) -> float:
        """Sum of all leaves."""
        return float(self._nodes[1])

    def leaves(self, slots: np.ndarray) -> np.ndarray:
        """Masses at `slots` ([B] int) as float64 [B]."""
        return self._nodes[self.capacity + np.asarray(slots, dtype=np.int64)]

    def update(self, slots: np.ndarray, masses: np.ndarray) -> None:
        """Set leaves `slots` [M] to `masses` [M] (last write wins for duplicates)."""
        slots = np.asarray(slots, dtype=np.int64)
        if slots.size == 0:
            return
        self._nodes[self.capacity + slots] = np.asarray(masses, dtype=np.float64)
        nodes = np.unique((self.capacity + slots) >> 1)
        for _ in range(self.depth):
            self._nodes[nodes] = self._nodes[2 * nodes] + self._nodes[2 * nodes + 1]
            nodes = np.unique(nodes >> 1)

    def rebuild(self, leaf_masses: np.ndarray) -> None:
        """Replace all leaves ([C] float) and recompute every inner node."""
        c = self.capacity
        self._nodes[:] = 0.0
        self._nodes[c : 2 * c] = leaf_masses
        level = c
        while level > 1:
            half = level >> 1
            self._nodes[half:level] = (
                self._nodes[level : 2 * level : 2] + self._nodes[level + 1 : 2 * level : 2]
            )
            level = half

    def find(self, prefix_sums: np.ndarray) -> np.ndarray:
        """Leaf slot [B] int64 whose cumulative range holds each of `prefix_sums` [B].

        Never descends into a zero-mass subtree, so rounding at a boundary cannot return an
        empty slot as long as the total is positive.
        """
        u = np.array(prefix_sums, dtype=np.float64)
        node = np.ones(u.shape, dtype=np.int64)
        for _ in range(self.depth):
            left = self._nodes[2 * node]
            right = self._nodes[2 * node + 1]
            go_right = (u >= left) & (right > 0.0)
            u = np.where(go_right, u - left, u)
            node = 2 * node + go_right
        return node - self.capacity
