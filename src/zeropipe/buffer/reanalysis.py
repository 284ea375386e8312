"""Reanalysis root choice: which stored positions a periodic buffer reanalysis pass refreshes.

Runs in: driver. Follows the reference's `_sample_orig_reanalyze_batch`: candidates are the oldest
`partition` fraction of the segments (partition <= 0.75: the newest data was searched with recent
weights and gains least), segments are drawn without replacement with weights exp(-(100 /
num_candidates) * reanalyze_count) so rarely reanalysed segments come first, and each chosen segment
contributes the positions 0, K, 2K, ... < length. Unlike the reference, roots are transition indices
(so write-back is per position) and the result is trimmed to exactly the requested number of roots.
"""

from __future__ import annotations

import numpy as np

MAX_PARTITION = 0.75


def choose_reanalysis_roots(
    lengths: np.ndarray,
    reanalyze_counts: np.ndarray,
    num_sequences: int,
    partition: float,
    stride: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pick reanalysis roots among the oldest segments.

    Args:
        lengths: [G] own transitions of every live segment, oldest first.
        reanalyze_counts: [G] how often each segment was chosen before.
        num_sequences: roots wanted (R); fewer come back when the candidates hold fewer.
        partition: fraction of the oldest segments that are candidates, in (0, 0.75].
        stride: distance between roots in a segment (K, the unroll length).
        rng: random source.

    Returns:
        (chosen segment rows [C], root rows [R], root positions [R]).

    Raises:
        ValueError: partition outside (0, 0.75], no segments, or a non-positive request.
    """
    if not 0.0 < partition <= MAX_PARTITION:
        raise ValueError(f"reanalysis partition must be in (0, {MAX_PARTITION}], got {partition}")
    if num_sequences <= 0 or len(lengths) == 0:
        raise ValueError(
            f"reanalysis needs stored segments and num_sequences > 0 "
            f"(have {len(lengths)} segments, asked for {num_sequences})"
        )
    num_candidates = max(1, int(len(lengths) * partition))
    log_weights = -(100.0 / num_candidates) * reanalyze_counts[:num_candidates]
    # Gumbel-top-k: sorting log-weights plus Gumbel noise is a weighted draw without replacement,
    # and stays exact where exp(log_weights) would underflow.
    order = np.argsort(-(log_weights + rng.gumbel(size=num_candidates)), kind="stable")
    roots_per_segment = -(-lengths[order] // stride)  # ceil(length / K)
    needed = int(np.searchsorted(np.cumsum(roots_per_segment), num_sequences)) + 1
    chosen = order[:needed]
    counts = roots_per_segment[:needed]
    rows = np.repeat(chosen, counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    pos = (np.arange(rows.size) - first) * stride
    return chosen, rows[:num_sequences], pos[:num_sequences]
