"""YAML loading, `--set a.b=c` overrides and one-line config errors.

Runs in: driver (the CLI). This is the only YAML parser of the project. Overrides are parsed to the
type of the field they name, so `--set policy.batch_size=64` gives an int and a typo in a key is an
error naming the YAML path, before anything is written to the run directory.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from zeropipe.config.experiment import ExperimentConfig
from zeropipe.config.names import fields_at, unknown_key_help
from zeropipe.config.policy import DEFAULT_POLICY_TYPE


class ConfigError(Exception):
    """A configuration that cannot be used; the message is one line naming the key and the fix."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (the safe loader keeps the
    last silently: a second `policy:` section would drop the first)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_config(path: str | Path, overrides: Sequence[str] = ()) -> ExperimentConfig:
    """Load a YAML experiment file and apply `a.b=c` overrides.

    Args:
        path: the YAML file.
        overrides: strings `dotted.key=value`; the value is parsed as YAML, then validated as the
            field's type.

    Returns:
        The validated config with every default filled in.

    Raises:
        ConfigError: unreadable file, bad YAML, unknown key, or a value of the wrong type.
    """
    raw = read_yaml(path)
    for item in overrides:
        apply_override(raw, item)
    return config_from_dict(raw, source=str(path))


def read_yaml(path: str | Path) -> dict[str, Any]:
    """A config file's mapping, unvalidated.

    Raises:
        ConfigError: unreadable, not UTF-8 text, invalid YAML (a key given twice included), or
            not a mapping at the top.
    """
    path = Path(path)
    try:
        raw = yaml.load(path.read_text(), Loader=_UniqueKeyLoader)  # a SafeLoader
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a YAML text file (it is not UTF-8 text)") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {_one_line(str(exc))}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys to values")
    return raw


def config_from_dict(raw: dict[str, Any], source: str = "<dict>") -> ExperimentConfig:
    """Validate a plain dict as an ExperimentConfig, with errors rewritten as ConfigError."""
    try:
        return ExperimentConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_describe(exc, _policy_type(raw))}") from None


def dump_config(cfg: ExperimentConfig) -> str:
    """The resolved config as YAML, every default filled in, in declaration order."""
    return yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)


def apply_override(raw: dict[str, Any], item: str) -> None:
    """Apply one `dotted.key=value` to a raw config mapping (the value parsed as YAML).

    Raises:
        ConfigError: not KEY=VALUE, or a key that names no field.
    """
    key, sep, text = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. policy.batch_size=64")
    parts = key.strip().split(".")
    _check_path(parts, _policy_type(raw))
    node = raw
    for part in parts[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ConfigError(f"--set {key}: {part!r} is not a section")
        node = child
    try:
        node[parts[-1]] = yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError:
        node[parts[-1]] = text


def _policy_type(raw: dict[str, Any]) -> str:
    policy = raw.get("policy")
    if not isinstance(policy, dict):
        return DEFAULT_POLICY_TYPE
    return str(policy.get("type", DEFAULT_POLICY_TYPE))


def _check_path(parts: list[str], policy_type: str) -> None:
    """Reject an override key that names no field (the `policy` section is the one of
    `policy_type`), with a suggestion."""
    for depth, part in enumerate(parts):
        valid = fields_at(parts[:depth], policy_type)
        if valid is None:
            where = ".".join(parts[:depth])
            raise ConfigError(f"--set {'.'.join(parts)}: {where} has no sub-keys")
        if part not in valid:
            where = ".".join(parts[:depth]) or "the top level"
            raise ConfigError(
                f"--set {'.'.join(parts)}: unknown key {part!r} in {where}; "
                f"{unknown_key_help(part, valid)}"
            )


def _describe(exc: ValidationError, policy_type: str) -> str:
    """First validation error as `key.path: what was wrong (got VALUE)`."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "config"
    if err["type"] == "extra_forbidden":
        path = [str(p) for p in err["loc"]]
        help_ = unknown_key_help(path[-1], fields_at(path[:-1], policy_type))
        return f"unknown key {where!r}; {help_}"
    if err["type"] == "missing":
        return f"missing required key {where!r}"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    if err["type"] == "other_types_option":
        return f"{_one_line(err['msg'])}{more}"
    msg = _one_line(err["msg"]).removeprefix("Value error, ")
    got = err.get("input")
    if isinstance(got, dict | list):  # a whole section: the message says what is wrong
        return f"{where}: {msg}{more}"
    return f"{where}: {msg} (got {_short(repr(got))}){more}"


def _short(text: str, limit: int = 80) -> str:
    """At most `limit` characters of an offending value, so an error stays one short line."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _one_line(text: str) -> str:
    return " ".join(text.split())
