"""Which env a config file's env-specific values were written for, when `--set env.env_id=...`
moves the config to another env.

Runs in: driver (the CLI, before anything is written). A config file's stop value, model kind and
action head are chosen for its own `env.env_id`; an override that changes only the id would keep
them silently (Pendulum's `stop_value: -150` on MountainCarContinuous-v0 is reached by a random
policy, and the run reported a false success). This module only records the swap; the CLI, which
knows the new env's spaces, checks and adapts the config (`cli/env_fit.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class EnvSwap:
    """An override moved a config away from the env its file was written for.

    Attributes:
        written_for: the file's own `env.env_id`.
        env_id: the id after the overrides.
        file_stop_value: the file's `env.stop_value`, None when the file leaves the default.
        overridden: dotted keys the overrides set (e.g. ``env.stop_value``), which are the
            user's choice for the new env and are never adapted.
    """

    written_for: str
    env_id: str
    file_stop_value: float | None
    overridden: frozenset[str]


def overridden_keys(overrides: Sequence[str]) -> frozenset[str]:
    """The dotted keys of `KEY=VALUE` overrides (a malformed one is the loader's error)."""
    return frozenset(item.partition("=")[0].strip() for item in overrides)


def env_swap(raw: dict[str, Any], env_id: str, overrides: Sequence[str]) -> EnvSwap | None:
    """The swap of a config file to `env_id`, or None when the id is the file's own.

    Args:
        raw: the config file's mapping, before overrides (`loader.read_yaml`).
        env_id: `env.env_id` after the overrides.
        overrides: the `--set` strings.
    """
    env = raw.get("env")
    written_for = env.get("env_id") if isinstance(env, dict) else None
    if not isinstance(written_for, str) or written_for == env_id:
        return None
    stop = env.get("stop_value")
    return EnvSwap(
        written_for,
        env_id,
        float(stop) if isinstance(stop, int | float) else None,
        overridden_keys(overrides),
    )
