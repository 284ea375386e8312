"""The time accounting (outputs/phases.py): the clock's arithmetic by hand, and what a real run
of each pipeline writes to its `train` and `stop` lines."""

from __future__ import annotations

import dataclasses

import pytest

from tests.runlog import events
from tests.tiny import tiny_config
from zeropipe.outputs.phases import PhaseClock
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.sync import train_sync


def test_the_bound_is_the_longer_side_and_the_busy_fraction_is_train_over_wall():
    clock = PhaseClock()
    for phase, seconds in [("collect", 3.0), ("train", 10.0), ("driver", 1.5), ("eval", 4.0)]:
        clock.add(phase, seconds)
    fields = clock.fields(wall_s=20.0)
    assert fields.overlap_bound_s == 11.5  # max(10 + 1.5, 3 + 4)
    assert fields.learner_busy_fraction == 0.5  # 10 / 20
    assert fields.wait_s_total == 0.0
    clock.add("eval", 6.0)  # the workers' side is now the longer: 3 + 10
    assert clock.overlap_bound_s() == 13.0
    assert "perfect-overlap bound 13.0s" in clock.summary(20.0)


def test_the_goal_eval_stays_outside_what_overlap_can_hide():
    clock = PhaseClock()
    for phase, seconds in [("collect", 3.0), ("train", 10.0), ("driver", 1.0), ("eval", 6.0)]:
        clock.add(phase, seconds)
    clock.goal_eval_s = 2.0  # the last 2 s of eval scored the weights that reached the goal
    assert clock.overlap_bound_s() == 13.0  # max(10 + 1, 3 + 6 - 2) + 2
    fields = clock.fields(wall_s=25.0)
    assert fields.goal_eval_s == 2.0
    # a sync run's wall less what overlap hides: min(11, 3 + 4); the goal's 2 s stay
    assert PhaseClock.wall_bound_s(25.0, dataclasses.asdict(fields)) == 18.0


def test_timing_counts_a_block_even_when_it_raises():
    clock = PhaseClock()
    with pytest.raises(RuntimeError), clock.timing("driver"):
        raise RuntimeError("boom")
    assert clock.seconds["driver"] > 0.0


def _stop(run_dir) -> dict:
    return [e for e in events(run_dir) if e["event"] == "stop"][-1]


@pytest.mark.timeout(120)
def test_a_sync_run_accounts_for_its_wall_time_by_phase(tmp_path):
    train_sync(tiny_config(tmp_path / "run"), show_progress=False)
    stop = _stop(tmp_path / "run")
    phases = [stop[f"{p}_s_total"] for p in ("collect", "train", "driver", "eval")]
    assert all(s > 0 for s in phases) and stop["wait_s_total"] == 0.0  # sync never waits
    assert sum(phases) <= stop["time_s"]  # one process, one phase at a time
    assert stop["learner_busy_fraction"] == pytest.approx(
        stop["train_s_total"] / stop["time_s"], abs=0.05
    )
    assert stop["overlap_bound_s"] < sum(phases)
    assert stop["goal_eval_s"] == 0.0  # no eval reached the stop value


@pytest.mark.timeout(120)
def test_the_eval_that_reaches_the_goal_is_counted_as_the_goal_eval(tmp_path):
    cfg = tiny_config(tmp_path / "run")
    cfg.env.stop_value = -(10**9)  # the first eval stops the run
    train_sync(cfg, show_progress=False)
    log = events(tmp_path / "run")
    goal = [e for e in log if e["event"] == "eval"][-1]
    stop = _stop(tmp_path / "run")
    assert stop["reason"] == "stop_value"
    assert goal["eval_duration_s"] > 0
    assert stop["goal_eval_s"] == pytest.approx(goal["eval_duration_s"], abs=1e-3)
    trains = [e for e in events(tmp_path / "run") if e["event"] == "train"]
    totals = [e["train_s_total"] for e in trains]
    assert totals == sorted(totals) and totals[-1] <= stop["train_s_total"]  # running totals


@pytest.mark.timeout(180)
@pytest.mark.usefixtures("no_leaks")
async def test_an_async_run_counts_its_workers_busy_time_and_its_own_waiting(tmp_path):
    await train_async(tiny_config(tmp_path / "run"), show_progress=False)
    stop = _stop(tmp_path / "run")
    assert stop["collect_s_total"] > 0 and stop["eval_s_total"] > 0  # the workers' replies
    assert stop["train_s_total"] > 0 and stop["driver_s_total"] > 0
    assert stop["wait_s_total"] > 0  # the driver waited for the first collect at least
    # the driver's own phases happen one at a time on its clock
    driver_side = stop["train_s_total"] + stop["driver_s_total"] + stop["wait_s_total"]
    assert driver_side <= stop["time_s"]
