"""YAML loading, `--set a.b=c` overrides and config errors, one line per problem.

Runs in: driver (the CLI). This is the only YAML parser of the project. Overrides are parsed to the
type of the field they name, so `--set policy.batch_size=64` gives an int and a typo in a key is an
error naming the YAML path, before anything is written to the run directory. Every problem of a
file and its overrides is reported at once, each blamed on where it was written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from zeropipe.config.compose import resolve_bases
from zeropipe.config.errors import ConfigError
from zeropipe.config.experiment import ExperimentConfig
from zeropipe.config.names import fields_at, unknown_key_help
from zeropipe.config.overrides import (
    Override,
    apply_overrides,
    parse_override,
    policy_type,
    set_override,
)

__all__ = ["ConfigError", "config_from_dict", "dump_config", "load_config", "read_yaml"]

# YAML 1.1 (PyYAML) reads `1e6` as text: its floats need a dot and a signed exponent. YAML 1.2
# and Python read it as a float, and a whole float fills an int field (`replay_buffer_size: 1e6`).
_EXPONENT_FLOAT = re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")


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


_UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789")
)


def load_config(path: str | Path, overrides: Sequence[str] = ()) -> ExperimentConfig:
    """Load a YAML experiment file and apply `a.b=c` overrides.

    Args:
        path: the YAML file.
        overrides: strings `dotted.key=value`; the value is parsed as YAML, then validated as the
            field's type.

    Returns:
        The validated config with every default filled in.

    Raises:
        ConfigError: unreadable file, bad YAML, unknown keys, or values of the wrong type: every
            problem found, one line each.
    """
    parsed, problems = [], []
    for item in overrides:
        try:
            parsed.append(parse_override(item, _UniqueKeyLoader))
        except ConfigError as exc:
            problems.append(str(exc))
    return load_overridden(path, parsed, problems)


def load_overridden(
    path: str | Path, overrides: Sequence[Override], problems: Sequence[str] = ()
) -> ExperimentConfig:
    """Load a YAML experiment file and apply parsed overrides (`load_config`'s second half).

    Args:
        path: the YAML file.
        overrides: the keys to set on top of it, in order.
        problems: lines already found in the overrides, reported with the rest.

    Returns:
        The validated config with every default filled in.

    Raises:
        ConfigError: every problem of the file and the overrides, one line each.
    """
    raw = read_yaml(path)
    problems = [*problems, *apply_overrides(raw, overrides)]
    return config_from_dict(raw, source=str(path), overrides=overrides, problems=problems)


def read_yaml(path: str | Path) -> dict[str, Any]:
    """A config file's mapping, unvalidated, its `base` configs merged under it (compose.py).

    Raises:
        ConfigError: a directory, unreadable, not UTF-8 text, invalid YAML (a key given twice
            included), or not a mapping at the top; a base that is missing or makes a cycle.
    """
    return resolve_bases(Path(path), _read_one)


def _read_one(path: Path) -> dict[str, Any]:
    """One file's own mapping (a `base` key left in it)."""
    if path.is_dir():
        raise ConfigError(
            f"{path} is a directory, not a YAML file (a run? its config is "
            f"{path / 'config.yaml'}; train {path} --resume continues it, eval {path} scores it)"
        )
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


def config_from_dict(
    raw: dict[str, Any],
    source: str = "<dict>",
    overrides: Sequence[Override] = (),
    problems: Sequence[str] = (),
) -> ExperimentConfig:
    """Validate a plain dict as an ExperimentConfig.

    Args:
        raw: the mapping, overrides applied.
        source: where `raw` came from (its file), for messages.
        overrides: the overrides applied to `raw`: a bad value under one of their keys is blamed
            on the override, not on `source`.
        problems: lines already found, reported with the validation's.

    Raises:
        ConfigError: every problem, one line each.
    """
    lines = list(problems)
    try:
        cfg = ExperimentConfig.model_validate(raw)
    except ValidationError as exc:
        cfg = None
        type_name = policy_type(raw)
        for err in exc.errors():
            lines.append(f"{_blame(err['loc'], source, overrides)}: {_describe(err, type_name)}")
    if lines:
        raise ConfigError("\n".join(lines))
    return cfg


def _blame(loc: tuple, source: str, overrides: Sequence[Override]) -> str:
    """The last override that set the key at `loc` (or a section above it), else `source`."""
    path = tuple(str(p) for p in loc)
    for override in reversed(overrides):
        if path[: len(override.parts)] == override.parts:
            return override.label
    return source


def dump_config(cfg: ExperimentConfig) -> str:
    """The resolved config as YAML, every default filled in, in declaration order."""
    return yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)


def apply_override(raw: dict[str, Any], item: str) -> Override:
    """Apply one `dotted.key=value` to a raw config mapping (the value parsed as YAML, `1e6`
    included).

    Returns:
        The override, for `config_from_dict` to blame a bad value on.

    Raises:
        ConfigError: not KEY=VALUE, or a key that names no field.
    """
    override = parse_override(item, _UniqueKeyLoader)
    set_override(raw, override)
    return override


def _describe(err: Any, type_name: str) -> str:
    """One validation error as `key.path: what was wrong (got VALUE)`."""
    where = ".".join(str(p) for p in err["loc"]) or "config"
    if err["type"] == "extra_forbidden":
        path = [str(p) for p in err["loc"]]
        help_ = unknown_key_help(path[-1], fields_at(path[:-1], type_name), type_name, path[:-1])
        return f"unknown key {where!r}; {help_}"
    if err["type"] == "missing":
        return f"missing required key {where!r}"
    if err["type"] == "other_types_option":
        return _one_line(err["msg"])
    msg = _one_line(err["msg"]).removeprefix("Value error, ")
    got = err.get("input")
    if isinstance(got, dict | list):  # a whole section: the message says what is wrong
        return f"{where}: {msg}"
    return f"{where}: {msg} (got {_short(repr(got))})"


def _short(text: str, limit: int = 80) -> str:
    """At most `limit` characters of an offending value, so an error stays one short line."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _one_line(text: str) -> str:
    return " ".join(text.split())
