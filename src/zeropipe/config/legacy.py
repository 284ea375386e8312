"""Reading `policy` mappings that spell out other types' options at their defaults.

Runs in: any. Before each policy type had its own section, one `policy` model held every type's
options, and a run's `config.yaml` (and `zeropipe config`'s output) spelled all of them out. Such
a file still loads: an option of another type is dropped when it holds that type's default, and
is an error naming its owners when it holds anything else (setting a Gumbel option on a type
without Gumbel search means something the run would silently ignore).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError


def drop_other_types_defaults(
    data: Mapping[str, Any],
    section: type[BaseModel],
    others: Sequence[tuple[str, type[BaseModel]]],
    type_name: str,
    path: str = "policy",
) -> tuple[dict[str, Any], list[InitErrorDetails]]:
    """`data` without the other types' options that hold their defaults, and one error for each
    option of other types set to anything else (all of them, so one run reports them all).

    Args:
        data: a `policy` mapping (or a nested section of one) as read from YAML.
        section: the section `data` is validated as.
        others: (type name, section) of the other registered types (their nested sections,
            below the top level), whose fields `data` may spell out at their defaults.
        type_name: the policy type `data` belongs to, for messages.
        path: the YAML path of `data`, for messages.

    Returns:
        A copy of `data` without every option of other types (keys that no section knows are
        kept: validation reports them), and the errors, located relative to `data`.
    """
    out: dict[str, Any] = {}
    errors: list[InitErrorDetails] = []
    for key, value in data.items():
        if key in section.model_fields:
            nested = _section_of(section, key)
            if nested is not None and isinstance(value, Mapping):
                owned = [(n, s) for n, o in others if (s := _section_of(o, key)) is not None]
                value, inner = drop_other_types_defaults(
                    value, nested, owned, type_name, f"{path}.{key}"
                )
                errors += [{**e, "loc": (key, *e["loc"])} for e in inner]
            out[key] = value
            continue
        owners = [(n, o) for n, o in others if key in o.model_fields]
        if not owners:
            out[key] = value
        elif not any(_holds_default(o, key, value) for _, o in owners):
            error = PydanticCustomError(
                "other_types_option",
                "{path} is an option of {owners}, not of {type}; remove it or change policy.type",
                {"path": f"{path}.{key}", "owners": _names(owners), "type": repr(type_name)},
            )
            errors.append({"type": error, "loc": (key,), "input": value})
    return out, errors


def _section_of(section: type[BaseModel], key: str) -> type[BaseModel] | None:
    """The model class of field `key`, if that field is a nested section."""
    field = section.model_fields.get(key)
    annotation = field.annotation if field is not None else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _holds_default(section: type[BaseModel], key: str, value: Any) -> bool:
    field = section.model_fields[key]
    try:
        given = TypeAdapter(field.annotation).validate_python(value)
    except ValidationError:
        return False
    return given == field.get_default(call_default_factory=True)


def _names(owners: Sequence[tuple[str, type[BaseModel]]]) -> str:
    return "policy.type " + " / ".join(sorted({name for name, _ in owners}))
