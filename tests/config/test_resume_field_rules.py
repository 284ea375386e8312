"""What a resume may change is read from the fields (config/section.py's marks), written out
here by hand: the boundary rows of each section."""

from __future__ import annotations

import pytest

from zeropipe.config.resume import _collect_rule, resumable


@pytest.mark.parametrize(
    ("key", "may_change", "collect_rule"),
    [
        ("max_env_step", True, None),
        ("max_train_iter", True, None),
        ("seed", False, None),
        ("exp_name", False, None),
        ("env.stop_value", True, None),
        ("env.eval_max_episode_steps", True, None),
        ("env.env_id", False, None),
        ("env.collector_env_num", False, None),
        ("policy.eval_freq", True, None),
        ("policy.device", True, None),
        ("policy.learning_rate", False, None),
        ("policy.gumbel.prior_term", False, None),  # a type's own option
        ("policy.async_pipeline.num_collector_actors", True, None),  # the section's default
        ("policy.async_pipeline.backend", True, None),
        ("policy.async_pipeline.max_policy_lag", False, "max_policy_lag"),
        ("policy.async_pipeline.collect_freshness", False, "collect_freshness"),
        ("checkpoint.latest_interval_s", True, None),
        ("wandb.project", True, None),
        ("policy.no_such_key", False, None),
    ],
)
def test_a_fields_rule_on_resume(key: str, may_change: bool, collect_rule: str | None):
    assert (resumable(key), _collect_rule(key)) == (may_change, collect_rule)
