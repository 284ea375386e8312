"""The scalar constants of one search, as the compiled kernels read them.

Runs in: collector, evaluator, driver (reanalysis). A module of its own so that the kernels'
modules (selection, backup, qtransform, chance) all import it without importing each other.
numba's on-disk cache names this type by its module and name: `selection.SearchParams` stays an
alias, so that caches written by earlier checkouts resolve and are found stale, not broken.
"""

from __future__ import annotations

from typing import NamedTuple


class SearchParams(NamedTuple):
    """Scalar constants the compiled kernels read (from `SearchConfig`)."""

    discount: float
    pb_c_base: float
    pb_c_init: float
    value_delta_max: float
    maxvisit_init: float
    value_scale: float
    # PUCT: break ties with a draw from the tree's `tie_seed` (LightZero's `rand()`), rather
    # than taking the first maximal action (its `deterministic` flag).
    random_ties: bool = False
