"""The pooled async/sync judgement of the learning benchmark, against values worked by hand."""

from __future__ import annotations

import math

import pytest
from benchmarks.learning_rows import Row
from benchmarks.learning_stats import (
    censored_median,
    format_median_ratio,
    format_pooled,
    median_ratios,
    pooled_async_ratio,
    seeds_for_tolerance,
)


def _row(config: str, pipeline: str, steps: list[int], seeds: int | None = None) -> Row:
    seeds = len(steps) if seeds is None else seeds
    return Row(config, pipeline, 195.0, seeds, len(steps), steps, [], [], [], [], 0)


def test_the_ratio_is_the_geometric_mean_over_configs_of_each_configs_ratio():
    rows = [
        _row("a.yaml", "sync", [1000, 2000, 4000]),
        _row("a.yaml", "async", [2000, 4000, 8000]),
        _row("b.yaml", "sync", [3000, 3000]),
        _row("b.yaml", "async", [1500, 1500]),
    ]
    pooled = pooled_async_ratio(rows)
    # a: async 2x sync at every seed, b: 0.5x; the geometric mean of 2.0 and 0.5 is 1.0
    assert pooled.configs == 2
    assert pooled.ratio == pytest.approx(1.0)
    # a's seeds resample apart (b's arms are constant): the interval straddles the ratio
    assert pooled.low < 1.0 < pooled.high


def test_the_spread_and_the_seeds_it_needs():
    # ln 1000 and ln 4000 in each arm: sd = ln 4 / sqrt 2 = 0.9803
    rows = [_row("a.yaml", p, [1000, 4000]) for p in ("sync", "async")]
    pooled = pooled_async_ratio(rows)
    assert pooled.ratio == pytest.approx(1.0)
    assert pooled.log_sd == pytest.approx(math.log(4) / math.sqrt(2))
    # 2 * (1.96 * 0.9803 / ln 1.25)^2 = 2 * 8.611^2 = 148.3
    assert pooled.seeds_needed == 149
    assert seeds_for_tolerance(0.0) == 2
    assert seeds_for_tolerance(math.nan) is None
    assert "interval [1.00, 1.00]" not in format_pooled(pooled)
    assert "needs ~149 seeds per pipeline" in format_pooled(pooled)


def test_configs_without_a_success_in_both_pipelines_are_left_out():
    rows = [
        _row("a.yaml", "sync", [1000]),
        _row("a.yaml", "async", [3000]),
        _row("b.yaml", "sync", []),
        _row("b.yaml", "async", [500]),
    ]
    pooled = pooled_async_ratio(rows)
    assert (pooled.configs, pooled.low, pooled.high) == (1, pytest.approx(3.0), pytest.approx(3.0))
    assert pooled.seeds_needed is None  # one seed per arm: no spread to go on
    line = format_pooled(pooled)
    assert "3.00; one success per pipeline in each config: no interval" in line
    assert "interval [" not in line
    assert pooled_async_ratio(rows[2:]) is None
    assert "no config has a success in both" in format_pooled(None)


def test_each_configs_ratio_of_medians_and_whether_its_interval_is_inside_25_percent():
    rows = [
        _row("a.yaml", "sync", [1000, 2000, 4000]),
        _row("a.yaml", "async", [2000, 4000, 8000]),
        _row("b.yaml", "sync", [1000, 1000, 1000, 1000]),
        _row("b.yaml", "async", [1100, 1100]),
        _row("c.yaml", "sync", [1000]),  # no async success: no ratio
    ]
    a, b = median_ratios(rows)
    # a: medians 4000 / 2000. A resampled median of three is the arm's largest value when two or
    # three draws are (7 of 27), so the ratio's extremes 8000/1000 and 2000/4000 each have
    # probability (7/27)^2 = 6.7% > 2.5%: the interval is [0.5, 8]
    assert (a.config, a.ratio, a.seeds) == ("a.yaml", pytest.approx(2.0), (3, 3))
    assert (a.low, a.high) == (pytest.approx(0.5), pytest.approx(8.0))
    assert "inside" not in format_median_ratio(a)
    # b: constant arms, so the interval is the point, 1.1, inside [1/1.25, 1.25]
    assert (b.ratio, b.low, b.high) == (pytest.approx(1.1),) * 3
    line = format_median_ratio(b)
    assert "b.yaml: 1.10" in line and "(4 and 2 successes); inside ±25%" in line


def test_a_seed_that_never_reached_the_threshold_counts_as_the_slowest():
    # sync: 3 of 4 seeds at 1000, 2000, 3000; the median over every seed is (2000 + 3000) / 2,
    # not the successes' 2000. Async: 4 of 4
    rows = [_row("a.yaml", "sync", [1000, 2000, 3000], 4), _row("a.yaml", "async", [2500] * 4)]
    assert censored_median(rows[0]) == 2500.0
    assert median_ratios(rows)[0].ratio == pytest.approx(1.0)
    assert median_ratios(rows)[0].seeds == (3, 4)
    # half of async's seeds failing: its median is past every success
    rows[1] = _row("a.yaml", "async", [2500, 2500], 4)
    ratio = median_ratios(rows)[0]
    assert math.isinf(ratio.ratio) and censored_median(rows[1]) == math.inf
    assert math.isinf(ratio.high)


def test_an_even_count_takes_the_tables_median_of_env_steps():
    rows = [_row("a.yaml", "sync", [1000, 3000]), _row("a.yaml", "async", [2000, 2000])]
    # the median of 1000 and 3000 is 2000 (the table's), not exp(mean(ln)) = 1732
    assert median_ratios(rows)[0].ratio == pytest.approx(1.0)


def test_a_configs_interval_does_not_depend_on_the_configs_beside_it():
    # few draws, so that a shared generator's other stream would move the quantiles
    sync = [1000, 1100, 1300, 1500, 2000, 2600, 4000, 4100]
    async_ = [900, 1200, 1700, 2000, 2400, 3100, 5000, 7000]
    a = [_row("a.yaml", "sync", sync), _row("a.yaml", "async", async_)]
    b = [_row("b.yaml", "sync", [700, 3000]), _row("b.yaml", "async", [800, 6000])]
    assert median_ratios(a, draws=200) == median_ratios(b + a, draws=200)[1:]
