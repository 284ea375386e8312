"""The config format's versions, and the ordered migrations that bring an older run's
config.yaml to the current one.

Runs in: driver (the CLI, before anything is written). A run's config.yaml carries the version
it was written at (`config_version`; `ckpt_latest` carries it too). Resuming or scoring an
older run first migrates its config, step by step, so that the run goes on with the behaviour
it started with; a file of a newer version than this zeropipe reads is refused.

- 1: no stamp (0.1.0, and every run written before the files carried one). Options added since
  it was written are missing from it and mean their older behaviour (each policy section's
  `OLDER_VALUES`); the async collect's freshness was two options; `policy.eval_grid: null` meant
  each pipeline's own grid.
- 2: stamped; every option is written out, so a key missing from such a file is an option added
  after the file was written: it too means its older behaviour (`OLDER_VALUES`), filled in on
  every migration without a new version.
"""

from __future__ import annotations

from typing import Any

from zeropipe.config.errors import ConfigError
from zeropipe.config.policy import PolicyConfig, default_policy_type, policy_config_class

CONFIG_VERSION = 2


def migrate_config(raw: dict[str, Any], command: str = "--resume") -> list[str]:
    """Bring a run's config (read from its config.yaml) to `CONFIG_VERSION`, in place.

    Args:
        raw: the YAML's mapping.
        command: starts each note (`--resume`, `eval`).

    Returns:
        One note per setting a migration filled in or rewrote.

    Raises:
        ConfigError: the file's version is not a version, or newer than this zeropipe's.
    """
    version = raw.get("config_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ConfigError(f"config_version {version!r} is not a config version (1, 2, ...)")
    if version > CONFIG_VERSION:
        raise ConfigError(
            f"config_version {version}: the run was written by a newer zeropipe (this one reads "
            f"up to {CONFIG_VERSION}); upgrade zeropipe to continue it"
        )
    notes: list[str] = []
    for target, step in MIGRATIONS:
        if version < target:
            notes += step(raw, command)
    if version >= 2:
        notes += _fill_older_values(raw, command)
    raw["config_version"] = CONFIG_VERSION
    return notes


def _to_2(raw: dict[str, Any], command: str) -> list[str]:
    """1 -> 2: give a run's config.yaml the behaviour of its time for options it predates (in
    place). `command` starts each note.

    Returns:
        One note per key filled in.
    """
    notes = _one_lag_control(raw, command)  # first: the old keys name the option's value
    notes += _fill_older_values(raw, command)
    notes += _each_pipelines_own_eval_grid(raw, command)
    return notes


def _fill_older_values(raw: dict[str, Any], command: str) -> list[str]:
    """Give each option of the run's `OLDER_VALUES` that its config.yaml lacks (written before
    the option existed) the behaviour of its time, in place.

    Returns:
        One note per key filled in.
    """
    notes = []
    for name, value in _older_values(raw).items():
        key = f"policy.{name}"
        if not _has(raw, key):
            _set(raw, key, value)
            notes.append(
                f"{command}: {key} is not in the run's config.yaml (written before the option "
                f"existed): {value!r}, the behaviour the run started with"
            )
    return notes


def _older_values(raw: dict[str, Any]) -> dict[str, Any]:
    """The run's policy section's `OLDER_VALUES` (its type's own and every type's), by key
    under `policy.`; a type that is not registered has none here (validation names it)."""
    policy_type = (raw.get("policy") or {}).get("type", default_policy_type())
    try:
        return policy_config_class(str(policy_type)).OLDER_VALUES
    except ValueError:
        return PolicyConfig.OLDER_VALUES


def _one_lag_control(raw: dict[str, Any], command: str) -> list[str]:
    """A config.yaml written when the collect's freshness was two options (`collect_launch`,
    `collect_refresh_steps`): the one option that does what they did. A refresh every N steps
    becomes 'refresh', every game_segment_length // 5 steps (the note says when N differs)."""
    ap = ((raw.get("policy") or {}).get("async_pipeline")) or {}
    if "collect_launch" not in ap and "collect_refresh_steps" not in ap:
        return []
    launch, steps = ap.pop("collect_launch", "eager"), ap.pop("collect_refresh_steps", None)
    value = "refresh" if steps is not None else launch if launch == "just_in_time" else None
    if value is None:
        return []  # the reference's rule: OLDER_VALUES fill it in
    ap["collect_freshness"] = value
    return [
        f"{command}: policy.async_pipeline.collect_launch and collect_refresh_steps are one "
        f"option now: collect_freshness: {value} (refresh steps given: {steps})"
    ]


def _each_pipelines_own_eval_grid(raw: dict[str, Any], command: str) -> list[str]:
    """A config.yaml written when `policy.eval_grid: null` meant each pipeline's own grid
    (sync 'budget_end', async 'learner_step'): the grid its pipeline used. (Async's own did not
    wait for a busy evaluator; 'learner_step' does, so an old async run resumed may score a few
    versions more.)"""
    policy = raw.get("policy") or {}
    if "eval_grid" not in policy or policy["eval_grid"] is not None:
        return []
    async_run = bool((policy.get("async_pipeline") or {}).get("enabled"))
    policy["eval_grid"] = "learner_step" if async_run else "budget_end"
    return [
        f"{command}: policy.eval_grid is null in the run's config.yaml (each pipeline's own "
        f"grid, before both used one): {policy['eval_grid']!r}, the grid the run started with"
    ]


def _has(raw: dict[str, Any], key: str) -> bool:
    node: Any = raw
    *parents, last = key.split(".")
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    return isinstance(node, dict) and last in node


def _set(raw: dict[str, Any], key: str, value: Any) -> None:
    *parents, last = key.split(".")
    node = raw
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value


# (the version a step brings a file to, the step), in order
MIGRATIONS = ((2, _to_2),)
