"""`zeropipe config --describe`: the resolved config with each field's description.

Runs in: driver (the CLI).
"""

from __future__ import annotations

import yaml
from pydantic import BaseModel


def describe_config(cfg: BaseModel, indent: int = 0) -> str:
    """`cfg` as YAML, each field followed by a comment with its description and, where the value
    is not the default, the default.

    Args:
        cfg: a config section (the whole `ExperimentConfig` at the top).
        indent: spaces before each key (nested sections indent by two).
    """
    lines = []
    pad = " " * indent
    for name, field in type(cfg).model_fields.items():
        value = getattr(cfg, name)
        note = " ".join((field.description or "").split())
        if isinstance(value, BaseModel):
            lines.append(f"{pad}{name}:  # {note}")
            lines.append(describe_config(value, indent + 2).rstrip("\n"))
            continue
        text = _flow(value)
        if not field.is_required():
            default = field.get_default(call_default_factory=True)
            if default != value:
                note += f" (default: {_flow(default)})"
        lines.append(f"{pad}{name}: {text}  # {note}")
    return "\n".join(lines) + "\n"


def _flow(value: object) -> str:
    """One value as YAML on one line."""
    dumped = yaml.safe_dump(
        list(value) if isinstance(value, tuple) else value, default_flow_style=True, width=1 << 16
    )
    return dumped.strip().removesuffix("...").strip()
