"""Overrides: parsed values, other types' keys, async keys in a sync run."""

from __future__ import annotations

import pytest

from zeropipe.config import ConfigError
from zeropipe.config.overrides import (
    mapping_overrides,
    parse_override,
    refuse_async_keys_in_sync_run,
    set_override,
)


def test_mapping_values_are_taken_as_they_are():
    (override,) = mapping_overrides({"policy.batch_size": "64"})
    assert override.value == "64" and override.label == "overrides['policy.batch_size']"


def test_a_key_of_another_type_names_its_owner():
    raw = {"policy": {"type": "muzero"}}
    with pytest.raises(ConfigError) as info:
        set_override(raw, parse_override("policy.gumbel.gumbel_scale=5"))
    assert str(info.value) == (
        "--set policy.gumbel.gumbel_scale=5: policy.gumbel is an option of policy.type "
        "gumbel_muzero, not of 'muzero'; remove it or change policy.type"
    )
    assert raw == {"policy": {"type": "muzero"}}


@pytest.mark.parametrize(
    ("items", "refused"),
    [
        (["policy.batch_size=8"], 0),
        (["policy.async_pipeline.enabled=false"], 0),
        (["policy.async_pipeline.num_collector_actors=2"], 1),
        (
            ["policy.async_pipeline.num_collector_actors=2", "policy.async_pipeline.enabled=false"],
            1,
        ),
        (["policy.async_pipeline.num_collector_actors=2", "policy.async_pipeline.x=1"], 2),
    ],
)
def test_async_keys_in_a_sync_run(items, refused):
    overrides = [parse_override(item) for item in items]
    if not refused:
        refuse_async_keys_in_sync_run(overrides)
        return
    with pytest.raises(ConfigError) as info:
        refuse_async_keys_in_sync_run(overrides)
    assert len(info.value.lines) == refused
    assert all("--async-pipeline" in line for line in info.value.lines)
