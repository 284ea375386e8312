"""Wall time to the goal computed as env steps over one-at-a-time env steps per second."""

from __future__ import annotations

import pytest
from benchmarks.learning_pace import is_paced, paced_ratio, paced_rows
from benchmarks.learning_rows import Row
from benchmarks.learning_time import format_time_table, wall_ratios


def _row(pipeline: str, steps: list[int], seeds: int | None = None) -> Row:
    seeds = len(steps) if seeds is None else seeds
    # measured walls of runs that shared the cores: the pace replaces them
    return Row("p.yaml", pipeline, -300.0, seeds, len(steps), steps, [], [], [], [], 0,
               process_wall_s_to_goal=[999.0] * len(steps))  # fmt: skip


def _pace(pipeline: str, rates: list[float], bound: list[float] | None = None) -> dict:
    walls = [100.0] * len(rates)
    return {
        "config": "p.yaml",
        "variant": "shipped",
        "pipeline": pipeline,
        "wall_s": walls,
        "envstep_per_s": rates,
        "learner_steps_per_s": [1.0] * len(rates),
        "learner_busy_fraction": [0.5] * len(rates),
        "overlap_bound_s": bound or [],
        "phase_s": {"collect": [1.0, 3.0, 2.0], "train": [5.0, 5.0, 5.0]},
    }


def test_each_seeds_wall_is_its_env_steps_over_the_median_rate():
    rows = [_row("sync", [4000, 8000]), _row("async", [6000])]
    pace = [_pace("sync", [30.0, 40.0, 50.0], bound=[60.0, 70.0, 80.0]), _pace("async", [60.0])]
    s, a = paced_rows(rows, pace)
    assert s.process_wall_s_to_goal == [100.0, 200.0]  # 4000 / 40, 8000 / 40
    assert a.process_wall_s_to_goal == [100.0]
    # the sync bound: each wall times the pace runs' median bound over wall (0.7)
    assert s.overlap_bound_s == [70.0, 140.0]
    assert a.overlap_bound_s == []
    assert s.phase_s == {"collect": 2.0, "train": 5.0}
    assert is_paced(s) and not is_paced(rows[0])


def test_the_ratio_is_the_products_and_its_interval_widens_with_the_rates_spread():
    rows = [_row("sync", [4000, 4000, 4000]), _row("async", [4000, 4000, 4000])]
    steady = paced_rows(rows, [_pace("sync", [40.0] * 3), _pace("async", [80.0] * 3)])
    ratio = paced_ratio(*steady)
    assert (ratio.ratio, ratio.low, ratio.high) == (0.5, 0.5, 0.5)
    spread = paced_rows(rows, [_pace("sync", [20.0, 40.0, 60.0]), _pace("async", [80.0] * 3)])
    ratio = paced_ratio(*spread)
    assert ratio.ratio == 0.5
    assert ratio.low == pytest.approx(0.25) and ratio.high == pytest.approx(0.75)
    assert wall_ratios(spread)["p.yaml"] == ratio


def test_a_seed_short_of_the_threshold_counts_as_slower_than_every_other():
    rows = [_row("sync", [1000, 2000], seeds=3), _row("async", [1000], seeds=3)]
    s, a = paced_rows(rows, [_pace("sync", [10.0]), _pace("async", [10.0])])
    assert paced_ratio(s, a).ratio == float("inf")  # async: 2 of 3 never got there
    table = format_time_table([s, a])
    assert "| p (computed) | 2/3, 1/3 | 200.0 | not reached |" in table


def test_a_row_without_its_pace_is_an_error():
    with pytest.raises(ValueError, match=r"no pace row for p\.yaml async"):
        paced_rows([_row("async", [1000])], [_pace("sync", [10.0])])
