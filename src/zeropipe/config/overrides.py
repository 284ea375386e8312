"""Overrides of config keys: `--set a.b=c` items and the Python API's `{"a.b": value}` mappings.

Runs in: driver. Every override names a field by its dotted key; a key that names no field is a
problem blamed on the override (with LightZero's name, the policy type that owns it, or a close
match), and the rest are still applied, so one run reports every bad key at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from zeropipe.config.errors import ConfigError
from zeropipe.config.experiment import ExperimentConfig
from zeropipe.config.names import fields_at, other_types_owning, unknown_key_help
from zeropipe.config.policy import default_policy_type

ASYNC_PREFIX = "policy.async_pipeline."


@dataclass(frozen=True)
class Override:
    """One key set on top of a config file."""

    key: str  # dotted, e.g. "policy.batch_size"
    value: Any
    label: str  # how the user wrote it, for messages: "--set policy.batch_size=64"

    @property
    def parts(self) -> tuple[str, ...]:
        """The key's path."""
        return tuple(self.key.split("."))


def parse_override(item: str, loader: type[yaml.SafeLoader] = yaml.SafeLoader) -> Override:
    """A `dotted.key=value` item, its value parsed as YAML with `loader` (text that is not valid
    YAML stays text).

    Raises:
        ConfigError: not KEY=VALUE.
    """
    key, sep, text = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. policy.batch_size=64")
    try:
        value = yaml.load(text, Loader=loader) if text.strip() else None  # a SafeLoader
    except yaml.YAMLError:
        value = text
    return Override(key.strip(), value, f"--set {item}")


def mapping_overrides(overrides: Mapping[str, Any] | None) -> list[Override]:
    """The Python API's overrides: dotted keys to values, taken as they are (not parsed)."""
    return [
        Override(str(key), value, f"overrides[{key!r}]") for key, value in (overrides or {}).items()
    ]


def apply_overrides(raw: dict[str, Any], overrides: Sequence[Override]) -> list[str]:
    """Set each override's key in `raw` (in place); one problem line per override refused.

    Returns:
        The problems: a key that names no field, or a path through a value that is not a section.
    """
    problems = []
    for override in overrides:
        try:
            set_override(raw, override)
        except ConfigError as exc:
            problems.append(str(exc))
    return problems


def set_override(raw: dict[str, Any], override: Override) -> None:
    """Set one override's key in `raw` (in place).

    Raises:
        ConfigError: a key that names no field, or a path through a value that is not a section.
    """
    parts = override.parts
    _check_path(override, policy_type(raw))
    node = raw
    for part in parts[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ConfigError(f"{override.label}: {part!r} is not a section")
        node = child
    node[parts[-1]] = override.value


def policy_type(raw: dict[str, Any]) -> str:
    """The policy type a raw config mapping names (the default one where it names none)."""
    policy = raw.get("policy")
    if not isinstance(policy, dict):
        return default_policy_type()
    return str(policy.get("type", default_policy_type()))


def check_known_key(item: str, raw: dict[str, Any]) -> None:
    """Refuse a `--set KEY=VALUE` whose key names no field of the config `raw` (its policy
    type's section for `policy.*`), with the message a new run gives.

    Raises:
        ConfigError: not KEY=VALUE, or an unknown key.
    """
    _check_path(parse_override(item), policy_type(raw))


def _check_path(override: Override, type_name: str) -> None:
    """Refuse a key that names no field (the `policy` section is the one of `type_name`)."""
    parts = list(override.parts)
    for depth, part in enumerate(parts):
        valid = fields_at(parts[:depth], type_name)
        if valid is None:
            where = ".".join(parts[:depth])
            raise ConfigError(f"{override.label}: {where} has no sub-keys")
        if part in valid:
            continue
        path = ".".join(parts[: depth + 1])
        owners = other_types_owning(parts[:depth], part, type_name)
        if owners:
            raise ConfigError(
                f"{override.label}: {path} is an option of policy.type {' / '.join(owners)}, "
                f"not of {type_name!r}; remove it or change policy.type"
            )
        where = ".".join(parts[:depth]) or "the top level"
        help_ = unknown_key_help(part, valid, type_name, parts[:depth])
        raise ConfigError(f"{override.label}: unknown key {part!r} in {where}; {help_}")


def refuse_async_keys_in_sync_run(
    overrides: Sequence[Override],
    raw: Mapping[str, Any] | None = None,
    cfg: ExperimentConfig | None = None,
    source: str = "",
) -> None:
    """Async pipeline settings in a sync run would be silently ignored: refuse them.

    Refused: every `policy.async_pipeline.*` override but `enabled`, and every such key of the
    config file (`raw`, validated as `cfg`) that holds anything but its default. A key written
    at its default is allowed: `zeropipe config` spells out every field, and its output is a
    config file.

    Args:
        overrides: the keys set on top of the file.
        raw: the config file's mapping, as read (None: no file, only the overrides).
        cfg: the validated config of `raw` and `overrides`.
        source: the file, for messages.

    Raises:
        ConfigError: one line per such setting, naming --async-pipeline.
    """
    fix = "add --async-pipeline (API: pipeline='async') or remove it"
    lines = [
        f"{o.label}: an async pipeline setting, but this run is sync; {fix}"
        for o in overrides
        if o.key.startswith(ASYNC_PREFIX) and o.key != ASYNC_PREFIX + "enabled"
    ]
    overridden = {o.key for o in overrides}
    lines += [
        f"{source}: {key}: an async pipeline setting, but this run is sync; add "
        "--async-pipeline (or policy.async_pipeline.enabled: true in the file; API: "
        "pipeline='async') or remove it"
        for key in _async_keys_set(raw, cfg)
        if not any(key == k or key.startswith(k + ".") for k in overridden)
    ]
    if lines:
        raise ConfigError("\n".join(lines))


def _async_keys_set(raw: Mapping[str, Any] | None, cfg: ExperimentConfig | None) -> list[str]:
    """The `policy.async_pipeline.*` keys of `raw` (but `enabled`) whose value in `cfg` is not
    the field's default."""
    policy = raw.get("policy") if raw is not None else None
    section = policy.get("async_pipeline") if isinstance(policy, Mapping) else None
    if not isinstance(section, Mapping) or cfg is None:
        return []
    resolved = cfg.policy.async_pipeline
    fields = type(resolved).model_fields
    return [
        ASYNC_PREFIX + key
        for key in section
        if key != "enabled"
        and key in fields
        and getattr(resolved, key) != fields[key].get_default(call_default_factory=True)
    ]
