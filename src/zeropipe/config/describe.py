"""`zeropipe config --describe`: the resolved config with each field's description.

Runs in: driver (the CLI). Only the fields that this config reads are shown: a field marked with
a condition (`applies_to` in its `json_schema_extra`, config/section.py) is left out where the
condition does not hold (the Atari preprocessing of a CartPole config, the conv sizes of an mlp
model, the Ray fields of the process backend); the policy type's own section is already the
type's. Each line is wrapped at LINE_WIDTH columns, the description going on in comment lines.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import yaml
from pydantic import BaseModel

LINE_WIDTH = 100
HEADER = (
    "The fields this config reads, each with its description; `zeropipe config` without "
    "--describe prints every field."
)


def _backend(cfg: BaseModel) -> str:
    return cfg.policy.async_pipeline.backend


# the condition of each `applies_to` mark, on the whole ExperimentConfig
CONDITIONS: dict[str, Callable[[BaseModel], bool]] = {
    "mlp": lambda cfg: cfg.policy.model.kind in ("mlp", "auto"),
    "conv": lambda cfg: cfg.policy.model.kind in ("conv", "auto"),
    "ray": lambda cfg: _backend(cfg) == "ray",
    "process": lambda cfg: _backend(cfg) == "process",
}


def describe_config(cfg: BaseModel, atari: bool = True) -> str:
    """`cfg` as YAML, each field followed by a comment with its description and, where the value
    is not the default, the default; fields whose `applies_to` condition fails are left out.

    Args:
        cfg: the whole `ExperimentConfig`.
        atari: whether its env is an ALE one (the caller asks the env registry: the config
            package sits below `envs`); True shows the Atari fields.
    """
    applying = {name for name, holds in CONDITIONS.items() if holds(cfg)}
    if atari:
        applying.add("atari")
    return "\n".join([*_wrap(HEADER, "# "), *_describe(cfg, 0, applying)]) + "\n"


def _describe(section: BaseModel, indent: int, applying: set[str]) -> list[str]:
    lines = []
    pad = " " * indent
    for name, field in type(section).model_fields.items():
        extra = field.json_schema_extra
        scope = extra.get("applies_to") if isinstance(extra, dict) else None
        if scope is not None and scope not in applying:
            continue
        value = getattr(section, name)
        note = " ".join((field.description or "").split())
        if isinstance(value, BaseModel):
            lines += _comment(f"{pad}{name}:", note, pad)
            lines += _describe(value, indent + 2, applying)
            continue
        if not field.is_required():
            default = field.get_default(call_default_factory=True)
            if default != value:
                note += f" (default: {_flow(default)})"
        lines += _comment(f"{pad}{name}: {_flow(value)}", note, pad)
    return lines


def _comment(head: str, note: str, pad: str) -> list[str]:
    """`head  # note`, the note wrapped: what does not fit goes on in `pad  # ...` lines."""
    first_width = LINE_WIDTH - len(head) - 4
    if first_width < 20:  # a long value: the whole note on the lines below
        return [head, *_wrap(note, pad + "  # ")]
    first, *rest = textwrap.wrap(note, first_width, break_on_hyphens=False) or [""]
    rest_text = " ".join(rest)
    return [f"{head}  # {first}", *(_wrap(rest_text, pad + "  # ") if rest_text else [])]


def _wrap(text: str, prefix: str) -> list[str]:
    return textwrap.wrap(
        text, LINE_WIDTH, initial_indent=prefix, subsequent_indent=prefix, break_on_hyphens=False
    )


def _flow(value: object) -> str:
    """One value as YAML on one line."""
    dumped = yaml.safe_dump(
        list(value) if isinstance(value, tuple) else value, default_flow_style=True, width=1 << 16
    )
    return dumped.strip().removesuffix("...").strip()
