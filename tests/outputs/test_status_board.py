"""The status board's windowed rates and live clock, from events and a controlled clock."""

from __future__ import annotations

import dataclasses
import math

from zeropipe.outputs.events import CollectEvent, StopEvent, StopReason, TrainEvent
from zeropipe.outputs.phases import PhaseTotals
from zeropipe.outputs.status import StatusBoard
from zeropipe.outputs.status_server import _StatusCollector


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def at(cls: type, time_s: float, envstep: int, train_iter: int, **fields):
    return cls(time_s=time_s, envstep=envstep, train_iter=train_iter, **fields)


def test_rates_are_over_the_last_10_and_60_seconds_and_fall_when_the_run_stalls():
    clock = Clock()
    board = StatusBoard(clock)
    # 0-50 s: 10 env steps and 2 learner steps a second; 50-70 s: 40 and 4
    for t in range(0, 51, 5):
        clock.now = 100.0 + t
        board.update(at(CollectEvent, float(t), 10 * t, 2 * t))
    for t in range(55, 71, 5):
        clock.now = 100.0 + t
        board.update(at(TrainEvent, float(t), 500 + 40 * (t - 50), 100 + 4 * (t - 50)))
    snap = board.snapshot()
    assert snap["time_s"] == 70.0
    assert snap["envstep_per_s_10s"] == 40.0 and snap["learner_steps_per_s_10s"] == 4.0
    # the last 60 s: from (10 s, 100, 20) to (70 s, 1300, 180)
    assert snap["envstep_per_s_60s"] == 1200 / 60 and snap["learner_steps_per_s_60s"] == 160 / 60
    clock.now = 100.0 + 90  # no record for 20 s: the clock goes on and the 10 s rate is 0
    snap = board.snapshot()
    assert snap["time_s"] == 90.0 and snap["envstep_per_s_10s"] == 0.0
    assert snap["envstep_per_s_60s"] == (1300 - 300) / 60  # from the sample at 30 s


def test_losses_and_unknown_gauges_reach_the_metrics():
    board = StatusBoard(Clock())
    learner = {"total_loss": 2.5, "value_loss": 1.0, "grad_norm": 3.0}
    board.update(at(TrainEvent, 1.0, 8, 4, learner=learner, learner_steps=4))
    families = {f.name: f for f in _StatusCollector(board.snapshot).collect()}
    losses = {s.labels["term"]: s.value for s in families["zeropipe_loss"].samples}
    assert losses == {"total_loss": 2.5, "value_loss": 1.0}
    last_eval = families["zeropipe_eval_reward_mean_last"].samples[0].value
    assert math.isnan(last_eval)  # present before the first eval, NaN until one
    assert families["zeropipe_envsteps"].type == "counter"


def test_the_time_accounting_reaches_the_metrics_from_train_and_stop_lines():
    board = StatusBoard(Clock())
    phases = PhaseTotals(
        collect_s_total=3.0,
        train_s_total=10.0,
        driver_s_total=1.0,
        eval_s_total=2.0,
        wait_s_total=0.5,
        learner_busy_fraction=0.5,
        goal_eval_s=0.0,
        overlap_bound_s=10.5,
    )
    board.update(at(TrainEvent, 20.0, 800, 40, phases=phases))
    final = dataclasses.replace(phases, overlap_bound_s=11.0)
    board.update(at(StopEvent, 21.0, 800, 40, reason=StopReason.MAX_ENV_STEP, phases=final))
    families = {f.name: f for f in _StatusCollector(board.snapshot).collect()}
    seconds = {s.labels["phase"]: s.value for s in families["zeropipe_phase_seconds"].samples}
    assert seconds == {"collect": 3.0, "train": 10.0, "driver": 1.0, "eval": 2.0, "wait": 0.5}
    assert families["zeropipe_learner_busy_fraction"].samples[0].value == 0.5
    assert families["zeropipe_overlap_bound_seconds"].samples[0].value == 11.0
    assert board.snapshot()["stop_reason"] == "max_env_step"
