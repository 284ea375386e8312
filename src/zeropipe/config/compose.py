"""Config composition: a config file may name a base config and set keys on top of it.

Runs in: driver (the loader). `base: cartpole_muzero.yaml` at the top of a file reads that file
(its path relative to the file that names it; a base may have a base of its own) and lays this
file's keys over it: a mapping is merged key by key, any other value (a list included) replaces
the base's. The result is one flat mapping without `base`, which is what is validated and what a
run's `config.yaml` stores. A base that is missing, not a file name, or already in the chain (a
cycle) is a one-line `ConfigError` naming the file that named it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from zeropipe.config.errors import ConfigError

BASE_KEY = "base"

ReadOne = Callable[[Path], dict[str, Any]]


def resolve_bases(path: Path, read_one: ReadOne) -> dict[str, Any]:
    """`path`'s mapping with its chain of bases merged under it.

    Args:
        path: the config file.
        read_one: reads one file's own mapping (`base` still in it).

    Returns:
        The flat mapping: each base's keys, overridden by the files above it.

    Raises:
        ConfigError: from `read_one`, or a base that is missing, not a string, or a cycle.
    """
    chain = [path]
    layers = [read_one(path)]
    while BASE_KEY in layers[-1]:
        named_by = chain[-1]
        base = _base_path(named_by, layers[-1][BASE_KEY])
        seen = [p.resolve() for p in chain]
        if base.resolve() in seen:
            cycle = " -> ".join(str(p) for p in [*chain, base])
            raise ConfigError(f"{named_by}: base {base} makes a cycle ({cycle})")
        chain.append(base)
        layers.append(read_one(base))
    merged: dict[str, Any] = {}
    for layer in reversed(layers):  # the deepest base first
        merged = merge(merged, {k: v for k, v in layer.items() if k != BASE_KEY})
    return merged


def merge(under: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` laid on `under` (a new dict; neither is changed): mappings under the same key are
    merged key by key, any other value of `over` replaces `under`'s."""
    out = dict(under)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def _base_path(named_by: Path, value: Any) -> Path:
    """The file `base: value` of `named_by` names, checked to exist.

    Raises:
        ConfigError: not a non-empty string, or no such file.
    """
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(
            f"{named_by}: base must be the file name of a config (relative to this file), "
            f"got {value!r}"
        )
    base = named_by.parent / value
    if not base.is_file():
        what = "is a directory" if base.is_dir() else "does not exist"
        raise ConfigError(
            f"{named_by}: base {value!r} {what} (looked for {base}; a base is relative to "
            "the file that names it)"
        )
    return base
