"""Sequential halving at the root of a Gumbel search: how many visits each considered action has.

Runs in: any. Plain Python and numpy, computed once per (m, n) and cached. Gumbel MuZero
(Danihelka et al. 2022, "Policy improvement by planning with Gumbel", section 4 and
appendix A) visits the m actions of largest g + logits, then repeatedly halves the set, keeping
the best by g + logits + σ(completed Q). The schedule is fixed in advance: simulation s of the
search must visit an action that has exactly `sequence[s]` visits so far (mctx
`seq_halving.get_sequence_of_considered_visits` semantics). B denotes the batch of roots, S the
simulations.
"""

from __future__ import annotations

import functools
import math

import numpy as np


def considered_visit_sequence(max_considered: int, num_simulations: int) -> tuple[int, ...]:
    """The visit count required of the root action chosen at each simulation index.

    Phase by phase, each of the k considered actions (k = m, then halved, never below 2) gets
    max(1, ⌊n / (⌈log2 m⌉ · k)⌋) more visits, listed round-robin; the list is cut at n. With
    m <= 1 a single action takes every visit, so the sequence is 0, 1, ..., n - 1.

    Args:
        max_considered: m, the number of actions considered at the start.
        num_simulations: n, the length of the sequence.

    Returns:
        n visit counts, one per simulation index.
    """
    if max_considered <= 1:
        return tuple(range(num_simulations))
    phases = math.ceil(math.log2(max_considered))
    sequence: list[int] = []
    reached = 0  # visits each still-considered action has after the phases so far
    considered = max_considered
    while len(sequence) < num_simulations:
        repeats = max(1, num_simulations // (phases * considered))
        for visit in range(reached, reached + repeats):
            sequence.extend([visit] * considered)
        reached += repeats
        considered = max(2, considered // 2)
    return tuple(sequence[:num_simulations])


@functools.lru_cache(maxsize=64)
def considered_visit_table(max_considered: int, num_simulations: int) -> np.ndarray:
    """[m + 1, n] int32: row k is the sequence for k considered actions (k = 0 .. m).

    A root with fewer legal actions than m considers all of them, so it reads row
    min(m, number of legal actions). The array is cached and read-only.
    """
    table = np.array(
        [considered_visit_sequence(k, num_simulations) for k in range(max_considered + 1)],
        dtype=np.int32,
    ).reshape(max_considered + 1, num_simulations)
    table.flags.writeable = False
    return table


def root_considered_visits(
    action_mask: np.ndarray, max_considered: int, num_simulations: int
) -> np.ndarray:
    """[B, S] int32: per root, the visit count required at each simulation index.

    Args:
        action_mask: [B, A] bool legal root actions.
        max_considered: m, `SearchConfig.max_num_considered_actions`.
        num_simulations: S.
    """
    num_legal = action_mask.sum(axis=1)  # [B]
    table = considered_visit_table(max_considered, num_simulations)
    return np.ascontiguousarray(table[np.minimum(num_legal, max_considered)])
