"""Counter-based random draws for the compiled search kernels.

Runs in: any. A kernel that needs randomness (a chance outcome, a PUCT tie-break) cannot share a
stateful generator across numba calls cheaply, so it hashes a key instead: a per-search seed
(drawn from the actor's `np.random.Generator`, so a run is reproducible from its seed), the tree
b (one stream per env's root) and what identifies the draw within that tree (a node and its
visit count, so every visit draws afresh and the same search replays the same draws).
"""

from __future__ import annotations

import numpy as np
from numba import njit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, inline="always", error_model="numpy")
def _splitmix(z: np.uint64) -> np.uint64:
    """The splitmix64 finaliser (Steele et al. 2014): a bijective 64-bit mix."""
    z = (z ^ (z >> np.uint64(30))) * _MIX_1
    z = (z ^ (z >> np.uint64(27))) * _MIX_2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always", error_model="numpy")
def keyed_uniform(seed: np.uint64, b: int, node: int, visit: int) -> float:
    """A uniform draw in [0, 1) keyed by (seed, tree b, node, the node's visit count)."""
    z = _splitmix(seed + np.uint64(b) * _GOLDEN)
    z = _splitmix(z + np.uint64(node) * _GOLDEN)
    z = _splitmix(z + np.uint64(visit) * _GOLDEN)
    return float(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)  # 53 bits / 2**53
