"""YAML loading, `--set a.b=c` overrides and one-line config errors.

Runs in: driver (the CLI). This is the only YAML parser of the project. Overrides are parsed to the
type of the field they name, so `--set policy.batch_size=64` gives an int and a typo in a key is an
error naming the YAML path, before anything is written to the run directory.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from zeropipe.config.experiment import ExperimentConfig
from zeropipe.config.policy import DEFAULT_POLICY_TYPE, PolicyConfig, policy_config_class


class ConfigError(Exception):
    """A configuration that cannot be used; the message is one line naming the key and the fix."""


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
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {_one_line(str(exc))}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys to values")
    for item in overrides:
        _apply_override(raw, item)
    return config_from_dict(raw, source=str(path))


def config_from_dict(raw: dict[str, Any], source: str = "<dict>") -> ExperimentConfig:
    """Validate a plain dict as an ExperimentConfig, with errors rewritten as ConfigError."""
    try:
        return ExperimentConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_describe(exc)}") from None


def dump_config(cfg: ExperimentConfig) -> str:
    """The resolved config as YAML, every default filled in, in declaration order."""
    return yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)


def _apply_override(raw: dict[str, Any], item: str) -> None:
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
    return (
        str(policy.get("type", DEFAULT_POLICY_TYPE))
        if isinstance(policy, dict)
        else DEFAULT_POLICY_TYPE
    )


def _check_path(parts: Iterable[str], policy_type: str) -> None:
    """Reject an override key that names no field, with the valid names at that level (the
    `policy` section is the one of `policy_type`)."""
    model: type[BaseModel] | None = ExperimentConfig
    walked: list[str] = []
    for part in parts:
        if model is PolicyConfig:
            try:
                model = policy_config_class(policy_type)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        if model is None:
            raise ConfigError(
                f"--set {'.'.join([*walked, part])}: {'.'.join(walked)} has no sub-keys"
            )
        fields = model.model_fields
        if part not in fields:
            where = ".".join(walked) or "the top level"
            raise ConfigError(
                f"--set {'.'.join([*walked, part])}: unknown key {part!r} in {where} "
                f"(valid: {', '.join(fields)})"
            )
        walked.append(part)
        annotation = fields[part].annotation
        is_model = isinstance(annotation, type) and issubclass(annotation, BaseModel)
        model = annotation if is_model else None


def _describe(exc: ValidationError) -> str:
    """First validation error as `key.path: what was wrong (got VALUE)`."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "config"
    if err["type"] == "extra_forbidden":
        return f"unknown key {where!r} (check its spelling; `zeropipe config` lists valid keys)"
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
