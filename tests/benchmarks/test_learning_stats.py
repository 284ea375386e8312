"""The pooled async/sync judgement of the learning benchmark, against values worked by hand."""

from __future__ import annotations

import math

import pytest
from benchmarks.learning import Row
from benchmarks.learning_stats import format_pooled, pooled_async_ratio, seeds_for_tolerance


def _row(config: str, pipeline: str, steps: list[int]) -> Row:
    return Row(config, pipeline, 195.0, 3, len(steps), steps, [], [], [], [], 0)


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
