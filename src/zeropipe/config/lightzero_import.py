"""`zeropipe import`: a LightZero config file as a zeropipe YAML config, with a report of every
key (mapped, dropped and why, or not supported and why).

Runs in: driver. The file is read without running it (lightzero_source.py); each key of its
`main_config` and `create_config` goes through the key map (lightzero_keys.py); the result is
validated as an `ExperimentConfig` before it is written, so a written file loads. Keys the file
does not write take zeropipe's defaults (`zeropipe config --describe` lists them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from zeropipe.config.errors import ConfigError
from zeropipe.config.lightzero_keys import KEY_RULES, PATH_RULES, Context, Outcome
from zeropipe.config.lightzero_source import LightZeroSource, Unread, read_lightzero
from zeropipe.config.loader import config_from_dict
from zeropipe.config.names import fields_at
from zeropipe.config.policy import default_policy_type, registered_policy_types

__all__ = ["ImportedConfig", "KeyLine", "import_lightzero"]

_SECTIONS = {"world_model_cfg": "world_model"}  # LightZero section name -> zeropipe's


@dataclass(frozen=True)
class KeyLine:
    """One key of the report."""

    key: str  # LightZero's dotted path (`create_config.` for the create dict)
    outcome: Outcome

    def __str__(self) -> str:
        if self.outcome.kind == "mapped":
            targets = ", ".join(f"{k} = {_show(v)}" for k, v in self.outcome.targets.items())
            why = f" ({self.outcome.why})" if self.outcome.why else ""
            return f"mapped        {self.key} -> {targets}{why}"
        label = "dropped" if self.outcome.kind == "dropped" else "not supported"
        return f"{label:<13} {self.key}: {self.outcome.why}"


@dataclass(frozen=True)
class ImportedConfig:
    """The zeropipe config (validated) and the report, one line per LightZero key."""

    raw: dict[str, Any]
    report: list[KeyLine]

    def yaml_text(self, source: str) -> str:
        """The config as YAML, the report's dropped and unsupported keys as a comment above."""
        kept = [line for line in self.report if line.outcome.kind != "mapped"]
        head = [f"# Imported from the LightZero config {source} by `zeropipe import`."]
        if kept:
            head.append("# LightZero keys not carried over:")
            head += [f"#   {line}" for line in kept]
        return "\n".join(head) + "\n" + yaml.safe_dump(self.raw, sort_keys=False)


def import_lightzero(path: str | Path) -> ImportedConfig:
    """Read a LightZero config file (not running it) and map it to a zeropipe config.

    Raises:
        ConfigError: the file cannot be read as literals, its policy type is not one of
            zeropipe's, a written key's value cannot be read (naming its line), two keys set one
            zeropipe key to different values, or the result does not validate.
    """
    source = read_lightzero(path)
    policy_type = _policy_type(source, path)
    ctx = Context(policy_type=policy_type, main=source.main)
    writer = _Writer(policy_type)
    report = [KeyLine("create_config.policy.type", Outcome("mapped", {"policy.type": policy_type}))]
    for dotted, value in _leaves(source.main):
        report.append(writer.apply(dotted, _outcome(dotted, value, ctx), value))
    report += _entry_lines(source, writer)
    report += _create_lines(source.create)
    if "exp_name" not in writer.raw:
        writer.raw["exp_name"] = f"runs/{Path(path).stem}"
    try:
        config_from_dict(writer.raw, source=f"imported from {path}")
    except ConfigError as exc:
        raise ConfigError("\n".join(_imported_error(line) for line in exc.lines)) from None
    return ImportedConfig(raw=_ordered(writer.raw), report=report)


def _ordered(raw: dict[str, Any]) -> dict[str, Any]:
    """The top-level keys in the schema's order (exp_name, seed, ..., env, policy)."""
    order = fields_at([], default_policy_type()) or []
    return {key: raw[key] for key in sorted(raw, key=order.index)}


def _imported_error(line: str) -> str:
    return f"{line} (after import; the report's mapped keys say where it came from)"


def _policy_type(source: LightZeroSource, path: str | Path) -> str:
    name = source.create.get("policy", {}).get("type") if source.create else None
    if name is None:
        name = source.main.get("policy", {}).get("type")
    if isinstance(name, str) and name in registered_policy_types():
        return name
    if name is None:
        raise ConfigError(f"{path}: no create_config.policy.type, so no policy type to import")
    raise ConfigError(
        f"{path}: policy type {name!r} is not one of zeropipe's "
        f"({', '.join(registered_policy_types())})"
    )


def _leaves(node: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted path, value) of every key; a mapping with a rule of its own is one leaf."""
    out = []
    for key, value in node.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and dotted not in PATH_RULES and key not in KEY_RULES:
            out += _leaves(value, dotted + ".")
        else:
            out.append((dotted, value))
    return out


def _outcome(dotted: str, value: Any, ctx: Context) -> Outcome:
    if dotted == "policy.type":
        return Outcome("dropped", why="create_config.policy.type names the type")
    rule = PATH_RULES.get(dotted) or KEY_RULES.get(dotted.rsplit(".", 1)[-1])
    if rule is not None:
        return rule(_plain(value), ctx)
    target = ".".join(_SECTIONS.get(p, p) for p in dotted.split("."))
    *section, key = target.split(".")
    if key in (fields_at(section, ctx.policy_type) or ()):
        return Outcome("mapped", {target: _plain(value)})
    return Outcome("unsupported", why="no zeropipe counterpart")


def _plain(value: Any) -> Any:
    """A YAML-able copy: tuples as lists (an Unread stays, for the writer to report)."""
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


class _Writer:
    """Builds the zeropipe mapping; refuses an unreadable value it would write and a key set
    twice to different values."""

    def __init__(self, policy_type: str) -> None:
        self.raw: dict[str, Any] = {"policy": {"type": policy_type}}
        self.origin: dict[str, str] = {}

    def apply(self, dotted: str, outcome: Outcome, value: Any) -> KeyLine:
        for target, new in outcome.targets.items():
            if isinstance(value, Unread) or _has_unread(new):
                bad = value if isinstance(value, Unread) else _first_unread(new)
                raise ConfigError(
                    f"line {bad.line}: {dotted} cannot be read without running the file "
                    f"({bad.why}); write its value there"
                )
            self._set(target, new, dotted)
        return KeyLine(dotted, outcome)

    def _set(self, target: str, value: Any, dotted: str) -> None:
        *sections, last = target.split(".")
        node = self.raw
        for part in sections:
            node = node.setdefault(part, {})
        if last in node and node[last] != value:
            raise ConfigError(
                f"{dotted} = {_show(value)} and {self.origin[target]} = {_show(node[last])} "
                f"both set {target}; make them agree"
            )
        node[last] = value
        self.origin.setdefault(target, dotted)


def _has_unread(value: Any) -> bool:
    return _first_unread(value) is not None


def _first_unread(value: Any) -> Unread | None:
    if isinstance(value, Unread):
        return value
    items = value.values() if isinstance(value, Mapping) else value
    if isinstance(value, Mapping | list | tuple):
        for item in items:
            found = _first_unread(item)
            if found is not None:
                return found
    return None


def _entry_lines(source: LightZeroSource, writer: _Writer) -> list[KeyLine]:
    """The train_* call's `seed` and `max_env_step` (LightZero's entry arguments)."""
    lines = []
    for key, value in source.entry.items():
        label = f"train_*({key}=...) at line {source.entry_lines[key]}"
        outcome = Outcome("mapped", {key: int(value) if isinstance(value, float) else value})
        lines.append(writer.apply(label, outcome, value))
    return lines


def _create_lines(create: Mapping[str, Any]) -> list[KeyLine]:
    why = "DI-engine's import names; policy.type and env.env_id pick the policy and the env"
    return [
        KeyLine(f"create_config.{dotted}", Outcome("dropped", why=why))
        for dotted, _ in _leaves(create)
        if dotted != "policy.type"
    ]


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
