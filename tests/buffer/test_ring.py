"""RingColumns wrap-around and growth keep logical rows intact."""

from __future__ import annotations

import numpy as np

from zeropipe.buffer.ring import RingColumns


def test_rows_survive_wrap_and_growth():
    ring = RingColumns({"x": ((2,), np.int64)}, initial_rows=8)
    live: list[int] = []
    rng = np.random.default_rng(0)
    for _ in range(200):
        count = int(rng.integers(1, 6))
        start = ring.append({"x": np.stack([np.arange(ring.tail, ring.tail + count)] * 2, axis=1)})
        live += list(range(start, start + count))
        if len(live) > 20:
            ring.release(live[len(live) - 15])
            live = live[len(live) - 15 :]
        np.testing.assert_array_equal(ring.live("x")[:, 0], live)
        np.testing.assert_array_equal(ring.take("x", np.array(live))[:, 1], live)
    assert ring.num_rows == len(live)
    assert ring.allocated_nbytes() <= 32 * 16  # grew once or twice, not per append
