"""numba's one-time set-up, paid before an evaluator's first eval rather than inside it.

Runs in: evaluator (a worker, at its start). A process's first call of any numba-compiled
function pays for numba's set-up of its CPU target (its typing and lowering registries: about
0.2 s on a 2-core AMD EPYC, measured), whichever kernel it is; after that each search kernel's
cached machine code loads in milliseconds. An evaluator waits seconds for its first request, and
that eval's result may be the one that ends the run, so it pays the set-up while it waits
(measured on CartPole, a fresh evaluator: unizero's first eval 0.62 s, then 0.37 s for the same
weights, and 0.40 s after this set-up; sampled_muzero 0.46, 0.20 and 0.31 s). It computes
nothing a search uses: a run's results are the same with or without it.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True)
def _next(x: int) -> int:  # pragma: no cover - compiled
    return x + 1


def prepare_compiled_search() -> None:
    """Set numba's CPU target up now (loads a trivial cached kernel)."""
    _next(0)
