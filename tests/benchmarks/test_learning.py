"""The learning benchmark's judgement of eval curves: success, spread and collapse after a peak."""

from __future__ import annotations

from pathlib import Path

from benchmarks.learning import Curve, RunSpec, format_table, judge


def _curve(seed: int, envsteps: list[int], rewards: list[float], code: int = 0) -> Curve:
    spec = RunSpec("configs/cartpole_muzero.yaml", "sync", seed, Path(f"/nowhere/{seed}"))
    wall = [float(e) / 100 for e in envsteps]
    return Curve(spec, envsteps, wall, rewards, code)


def test_success_rate_steps_to_threshold_and_the_largest_drop_after_success():
    curves = [
        _curve(0, [1000, 2000, 3000, 4000], [100, 480, 300, 490]),  # peak 480, falls to 300
        _curve(1, [1000, 2000], [200, 500]),  # succeeds at 2000, never falls
        _curve(2, [1000, 2000, 3000], [100, 409, 262]),  # never reaches 475
    ]
    row = judge(curves, threshold=475)
    assert (row.seeds, row.successes) == (3, 2)
    assert row.envsteps_to_threshold == [2000, 2000]
    assert row.wall_s_to_threshold == [20.0, 20.0]
    assert row.best == [490, 500, 409] and row.final == [490, 500, 262]
    assert row.largest_drop_after_success == [180, 0]


def test_a_run_without_evals_counts_as_a_failed_seed():
    row = judge([_curve(0, [], [], code=1), _curve(1, [500], [480])], threshold=475)
    assert (row.seeds, row.successes, row.failed_runs) == (2, 1, 1)
    assert "1/2" in format_table([row])


def test_the_lowest_eval_in_the_hold_window_after_success():
    curves = [
        # success at 2000; window (2000, 4000]: 430, 480; the 100 at 5000 is past it
        _curve(0, [1000, 2000, 3000, 4000, 5000], [100, 480, 430, 480, 100]),
        _curve(1, [1000, 2000, 3000], [200, 500, 500]),  # stopped before 4000: not covered
        _curve(2, [1000, 2000], [100, 409]),  # never succeeds: no entry
    ]
    row = judge(curves, threshold=475, hold_envsteps=2000)
    assert row.lowest_in_hold == [430, None]
    table = format_table([row])
    assert "lowest eval in 2,000 env steps after success" in table
    assert table.splitlines()[-1].endswith("| 430, n/c |")
    assert judge(curves, threshold=475).lowest_in_hold == []
