"""The collect schedules: the visit-count temperature and epsilon of the next collect.

Runs in: driver (both pipelines compute them before each collect request).
"""

from __future__ import annotations

import numpy as np


def visit_temperature(
    fixed_value: float, manual_decay: bool, threshold_steps: int, train_iter: int
) -> float:
    """Visit-count temperature for collection (MuZero app. D; reference defaults).

    Manual decay: 1.0 before half the threshold, 0.5 before three quarters, 0.25 after.
    """
    if not manual_decay:
        return fixed_value
    if train_iter < 0.5 * threshold_steps:
        return 1.0
    if train_iter < 0.75 * threshold_steps:
        return 0.5
    return 0.25


def epsilon_at(
    enabled: bool, kind: str, start: float, end: float, decay: int, envstep: int
) -> float:
    """Epsilon-greedy schedule over collected env steps (0 when disabled)."""
    if not enabled:
        return 0.0
    if kind == "linear":
        return max(end, start - (start - end) * envstep / decay)
    return end + (start - end) * float(np.exp(-envstep / decay))
