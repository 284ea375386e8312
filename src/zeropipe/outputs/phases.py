"""Where a run's time goes: seconds per phase, the learner's busy fraction, the overlap bound.

Runs in: driver. One `PhaseClock` per run (this process's part of it: a resumed run counts
afresh, as its rates do). Phases:

- `collect`: acting in the envs to collect data. Sync: the in-process collect (its weight load
  included). Async: the collectors' busy seconds, as their replies report them (worker time,
  beside the driver's).
- `train`: the learner's steps (forward, backward, optimizer) — the work the pipeline exists to
  keep busy.
- `driver`: the driver's own work around them: sampling batches, priority and reanalysis
  write-back, buffer reanalysis, pushing and decoding collects, publishing snapshots, checkpoints.
- `eval`: scoring weights. Sync: the in-process eval. Async: the evaluators' busy seconds.
- `wait`: async only, the driver idle, waiting for a worker's reply (nothing it could train on).

The perfect-overlap bound is the wall time the same work would take if collect and eval hid
fully behind the driver's training (or the driver behind them, whichever side is longer):
`max(train + driver, collect + eval - goal_eval) + goal_eval`. Collect and eval are added, not
overlapped with each other: beside the learner's core, a 2-core machine has one core for both
workers. `goal_eval` is the eval whose result reached the stop value (0 until one does): it scores
weights training has made, and the run ends when its result is known, so no pipeline can hide it.
From a sync run's phases it says how much an async run of the same work can save at best; an
async run's wall time beside its own bound says how much of that it did save.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

PHASES = ("collect", "train", "driver", "eval", "wait")


@dataclass(frozen=True)
class PhaseTotals:
    """The run's time accounting so far: seconds per phase, the learner's busy
    fraction, the goal eval's seconds and the perfect-overlap bound."""

    collect_s_total: float
    train_s_total: float
    driver_s_total: float
    eval_s_total: float
    wait_s_total: float
    learner_busy_fraction: float
    goal_eval_s: float
    overlap_bound_s: float


class PhaseClock:
    """Seconds spent per phase (see the module docstring)."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self.goal_eval_s = 0.0  # the eval that reached the stop value (see the docstring)

    def add(self, phase: str, seconds: float) -> None:
        """Count `seconds` to `phase` (an async worker's reported busy time, for one)."""
        self.seconds[phase] += seconds

    @contextmanager
    def timing(self, phase: str) -> Iterator[None]:
        """Count the time the block takes to `phase`."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] += time.perf_counter() - start

    def overlap_bound_s(self) -> float:
        """max(train + driver, collect + eval - goal_eval) + goal_eval: the module docstring."""
        s, goal = self.seconds, self.goal_eval_s
        return max(s["train"] + s["driver"], s["collect"] + s["eval"] - goal) + goal

    def fields(self, wall_s: float) -> PhaseTotals:
        """The totals a train or stop line carries: `<phase>_s_total` each, `learner_busy_fraction`
        (train seconds over this process's wall seconds), `goal_eval_s` and `overlap_bound_s`."""
        return PhaseTotals(
            **{f"{phase}_s_total": round(value, 3) for phase, value in self.seconds.items()},
            learner_busy_fraction=round(self.seconds["train"] / max(wall_s, 1e-9), 4),
            goal_eval_s=round(self.goal_eval_s, 3),
            overlap_bound_s=round(self.overlap_bound_s(), 3),
        )

    @staticmethod
    def wall_bound_s(wall_s: float, fields: dict[str, float]) -> float:
        """A sync run's perfect-overlap wall time from its wall seconds and its `stop` line's
        fields: the wall less the shorter side, the time overlap could hide (start-up, teardown,
        what no phase counts and the goal's eval stay in it)."""
        t = {p: fields.get(f"{p}_s_total", 0.0) for p in PHASES}
        hideable_eval = t["eval"] - fields.get("goal_eval_s", 0.0)
        return wall_s - min(t["train"] + t["driver"], t["collect"] + hideable_eval)

    def summary(self, wall_s: float) -> str:
        """One line for the end of a run: the phases, the busy fraction, the bound."""
        s = self.seconds
        parts = ", ".join(f"{phase} {s[phase]:.1f}s" for phase in PHASES if s[phase] > 0)
        busy = s["train"] / max(wall_s, 1e-9)
        return (
            f"time: {parts or 'nothing timed'}; learner busy {busy:.0%} of {wall_s:.1f}s; "
            f"perfect-overlap bound {self.overlap_bound_s():.1f}s"
        )
