"""SumTree draws match a linear scan of the cumulative masses."""

from __future__ import annotations

import numpy as np

from zeropipe.buffer.sumtree import SumTree


def test_find_matches_cumsum_and_skips_empty_slots():
    rng = np.random.default_rng(0)
    tree = SumTree(100)
    masses = rng.random(tree.capacity) * (rng.random(tree.capacity) > 0.3)
    tree.update(np.arange(tree.capacity), masses)
    np.testing.assert_allclose(tree.total, masses.sum())
    prefix = np.sort(rng.random(1000)) * masses.sum()
    expected = np.searchsorted(np.cumsum(masses), prefix, side="right")
    np.testing.assert_array_equal(tree.find(prefix), expected)
    assert np.all(masses[tree.find(np.array([masses.sum() * (1 - 1e-16)]))] > 0)


def test_incremental_update_equals_rebuild():
    rng = np.random.default_rng(1)
    a, b = SumTree(37), SumTree(37)
    masses = np.zeros(a.capacity)
    for _ in range(20):
        slots = rng.integers(0, a.capacity, size=5)
        values = rng.random(5)
        a.update(slots, values)
        masses[slots] = values
    b.rebuild(masses)
    np.testing.assert_array_equal(a._nodes, b._nodes)
