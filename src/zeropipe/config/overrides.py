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
from zeropipe.config.names import fields_at, other_types_owning, unknown_key_help
from zeropipe.config.policy import DEFAULT_POLICY_TYPE

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
        return DEFAULT_POLICY_TYPE
    return str(policy.get("type", DEFAULT_POLICY_TYPE))


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
        help_ = unknown_key_help(part, valid, type_name)
        raise ConfigError(f"{override.label}: unknown key {part!r} in {where}; {help_}")


def refuse_async_keys_in_sync_run(overrides: Sequence[Override]) -> None:
    """An async pipeline setting given as an override while the run is sync would be silently
    ignored: refuse it. The same keys written in a YAML file stay allowed (shipped configs carry
    async settings that are used only when the async pipeline is chosen).

    Raises:
        ConfigError: one line per such override, naming --async-pipeline.
    """
    lines = [
        f"{o.label}: an async pipeline setting, but this run is sync; add --async-pipeline "
        "(API: pipeline='async') or drop it (in the YAML file such keys are allowed and used "
        "only by async runs)"
        for o in overrides
        if o.key.startswith(ASYNC_PREFIX) and o.key != ASYNC_PREFIX + "enabled"
    ]
    if lines:
        raise ConfigError("\n".join(lines))
