"""Which env a config file's values were written for, when an override changes `env.env_id`."""

from __future__ import annotations

import pytest

from zeropipe.config.env_swap import EnvSwap, env_swap

FILE = {"env": {"env_id": "Pendulum-v1", "stop_value": -150}, "policy": {"type": "muzero"}}


@pytest.mark.parametrize(
    ("raw", "env_id", "overrides", "want"),
    [
        # the file's own id, set again or not at all: no swap
        (FILE, "Pendulum-v1", [], None),
        (FILE, "Pendulum-v1", ["env.env_id=Pendulum-v1"], None),
        # moved: the file's stop value and the keys set beside the id are recorded
        (
            FILE,
            "MountainCarContinuous-v0",
            ["env.env_id=MountainCarContinuous-v0"],
            EnvSwap("Pendulum-v1", "MountainCarContinuous-v0", -150.0, frozenset({"env.env_id"})),
        ),
        (
            FILE,
            "MountainCarContinuous-v0",
            ["env.env_id=MountainCarContinuous-v0", " env.stop_value = 80"],
            EnvSwap(
                "Pendulum-v1",
                "MountainCarContinuous-v0",
                -150.0,
                frozenset({"env.env_id", "env.stop_value"}),
            ),
        ),
        # a file that leaves the stop value at its default has none to adapt
        (
            {"env": {"env_id": "CartPole-v1"}},
            "zeropipe/Chain-v0",
            ["env.env_id=zeropipe/Chain-v0"],
            EnvSwap("CartPole-v1", "zeropipe/Chain-v0", None, frozenset({"env.env_id"})),
        ),
        # a file without an env id (the override names it) was written for no env
        ({"env": {}}, "CartPole-v1", ["env.env_id=CartPole-v1"], None),
        ({}, "CartPole-v1", ["env.env_id=CartPole-v1"], None),
    ],
)
def test_env_swap_records_the_files_env_and_the_keys_set_beside_it(raw, env_id, overrides, want):
    assert env_swap(raw, env_id, overrides) == want
