"""The schedule rules as tables (lightzero_facts §8.1)."""

from __future__ import annotations

import pytest

from zeropipe.learner.budget import is_trainable, reanalyze_interval, reanalyze_period
from zeropipe.pipeline.schedule import needs_final_eval, should_eval, should_publish


@pytest.mark.parametrize(
    ("train_iter", "last", "freq", "expected"),
    [(0, 0, 5, False), (4, 0, 5, False), (5, 0, 5, True), (5, 5, 5, False), (10, 5, 5, True)],
)
def test_eval_gate(train_iter, last, freq, expected):
    assert should_eval(train_iter, last, freq) is expected


@pytest.mark.parametrize(
    ("stop_reason", "last_eval_version", "train_iter", "expected"),
    [
        ("max_env_step", None, 0, True),  # never evaluated, not even at train_iter 0
        ("max_env_step", 90, 100, True),
        ("max_env_step", 100, 100, False),  # these exact weights were scored
        ("max_train_iter", 99, 100, True),
        ("max_train_iter", 100, 100, False),
        ("stop_value", 90, 100, False),  # the eval that stopped the run is the last word
        ("cancelled", 90, 100, False),
        (None, 90, 100, False),  # an error ended the run
    ],
)
def test_final_eval_rule(stop_reason, last_eval_version, train_iter, expected):
    assert needs_final_eval(stop_reason, last_eval_version, train_iter) is expected


@pytest.mark.parametrize(
    ("current", "last", "interval", "lag", "expected"),
    [
        (0, None, 10, 0, True),
        (1, 0, 10, 0, True),
        (1, 0, 10, 2, False),
        (3, 0, 10, 2, True),
        (9, 0, 10, -1, False),
        (10, 0, 10, -1, True),
        # the lag is a bound the collectors may reach, not one they must stay below: a gap equal
        # to max_policy_lag is allowed, one past it forces the publish
        (3, 0, 10, 3, False),  # gap == lag
        (4, 0, 10, 3, True),  # gap == lag + 1
        (13, 10, 10, 3, False),  # the same two rows after an earlier publish
        (14, 10, 10, 3, True),
        (5, 5, 10, 0, False),  # lag 0: the version already published is not republished
        (6, 5, 10, 0, True),  # lag 0: every new version goes out
        (0, 0, 10, -1, False),  # a negative lag never forces, not even at gap 0
        (1, 0, 10, -1, False),
        # the interval publishes whatever the lag says; the lag forces earlier than the interval
        (5, 0, 5, 10, True),  # gap == interval < lag
        (4, 0, 5, 10, False),  # below both
        (3, 0, 3, 3, True),  # gap == interval == lag: the interval decides
        (2, 0, 5, 1, True),  # gap == lag + 1 < interval: the lag decides
        (1, 0, 5, 1, False),  # gap == lag < interval
    ],
)
def test_publish_rule(current, last, interval, lag, expected):
    assert should_publish(current, last, interval, lag) is expected


def test_reanalysis_interval_never_zero():
    assert reanalyze_interval(1, 10) == 1
    assert reanalyze_interval(25, 10) == 2
    assert reanalyze_interval(25, 0) is None


def test_reanalysis_period_is_not_off_by_one():
    assert reanalyze_period(0.1) == 10
    assert reanalyze_period(1e-4) == 10000
    assert reanalyze_period(0) is None and reanalyze_period(2) is None


def test_trainable_is_strict():
    assert is_trainable(envstep=11, num_transitions=5, train_start_after_envsteps=10, batch_size=4)
    assert not is_trainable(10, 5, 10, 4)
    assert not is_trainable(11, 4, 10, 4)
