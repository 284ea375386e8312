"""Read a LightZero config file's `main_config` / `create_config` without running it.

Runs in: driver (`zeropipe import`). The file is parsed with `ast` and only these are evaluated:
literals, names bound earlier by a plain assignment (`collector_env_num = 8`), arithmetic
(`int(1e6)`, `2 * 4`), `dict(...)` / `EasyDict(...)` and a few pure builtins (`int`, `float`,
`max`...), f-strings and subscripts of such values, and `NAME.key = value` on a bound mapping.
Nothing is imported or called otherwise, so a downloaded config cannot run code. A value that
cannot be read this way (a name bound by an import, a call of anything else) is kept as
`Unread(line, why)`: harmless where the importer drops its key, a one-line error where it would
be written. The assignments are read at the top level and, when `main_config` is assigned inside
a function (the Atari UniZero config's `def main(env_id=..., seed=0)`), in that function's body
with its parameters' defaults bound.
"""

from __future__ import annotations

import ast
import operator
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zeropipe.config.errors import ConfigError

__all__ = ["LightZeroSource", "Unread", "read_lightzero"]


@dataclass(frozen=True)
class Unread:
    """A value the reader does not evaluate: where it was written and why."""

    line: int
    why: str


@dataclass(frozen=True)
class LightZeroSource:
    """What a LightZero config file says, read without running it."""

    main: dict[str, Any]  # main_config, values possibly Unread
    create: dict[str, Any]  # create_config ({} when the file has none)
    entry: dict[str, Any] = field(default_factory=dict)  # the train_* call's seed, max_env_step
    entry_lines: dict[str, int] = field(default_factory=dict)


_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Not: operator.not_}
_CALLS = {
    "int": int,
    "float": float,
    "bool": bool,
    "str": str,
    "max": max,
    "min": min,
    "abs": abs,
    "round": round,
    "tuple": tuple,
    "list": list,
    "dict": dict,
    "EasyDict": dict,
    "edict": dict,
}
_MAX_LEN = 10_000  # a string or sequence longer than this is refused (`'a' * 10**9`)
_MAX_BITS = 4096  # an int result of more bits than this is refused
_ENTRY_KEYS = ("seed", "max_env_step")


class _NotRead(Exception):
    def __init__(self, node: ast.AST, why: str) -> None:
        super().__init__(why)
        self.line = getattr(node, "lineno", 0)
        self.why = why


def read_lightzero(path: str | Path) -> LightZeroSource:
    """Parse a LightZero config file and evaluate its config dicts without running it.

    Raises:
        ConfigError: unreadable, not Python, no `main_config`, or `main_config` not a mapping
            (one line, naming the file and line).
    """
    path = Path(path)
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        raise ConfigError(f"{path}:{line}: not a Python file: {exc.args[0]}") from None
    body, scope = _config_body(tree)
    for stmt in body:
        _run_statement(stmt, scope)
    main = scope.get("main_config")
    if main is None:
        raise ConfigError(f"{path}: no main_config assignment (a LightZero config file has one)")
    if not isinstance(main, dict):
        where = f"{path}:{main.line}" if isinstance(main, Unread) else str(path)
        raise ConfigError(f"{where}: main_config is not a dict this reader can evaluate")
    create = scope.get("create_config", {})
    if isinstance(create, Unread):
        raise ConfigError(f"{path}:{create.line}: create_config cannot be read: {create.why}")
    entry, lines = _entry_arguments(tree, scope)
    return LightZeroSource(main=main, create=create, entry=entry, entry_lines=lines)


def _config_body(tree: ast.Module) -> tuple[list[ast.stmt], dict[str, Any]]:
    """The statements that build main_config (the module's, or a function's with its defaults
    bound after the module's own assignments)."""
    scope: dict[str, Any] = {}
    if _assigns(tree.body, "main_config"):
        return tree.body, scope
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and _assigns(stmt.body, "main_config"):
            for top in tree.body:
                if top is not stmt:
                    _run_statement(top, scope)
            _bind_defaults(stmt.args, scope)
            return stmt.body, scope
    return tree.body, scope


def _assigns(body: list[ast.stmt], name: str) -> bool:
    return any(
        isinstance(stmt, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets)
        for stmt in body
    )


def _bind_defaults(args: ast.arguments, scope: dict[str, Any]) -> None:
    positional = [*args.posonlyargs, *args.args]
    for arg, default in zip(
        positional[len(positional) - len(args.defaults) :], args.defaults, strict=True
    ):
        scope[arg.arg] = _value(default, scope)
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if default is not None:
            scope[arg.arg] = _value(default, scope)


def _run_statement(stmt: ast.stmt, scope: dict[str, Any]) -> None:
    """Bind what a plain assignment binds; any other statement binds its names as Unread."""
    if isinstance(stmt, ast.Assign):
        value = _value(stmt.value, scope)
        for target in stmt.targets:
            _assign(target, value, scope)
        return
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        _assign(stmt.target, _value(stmt.value, scope), scope)
        return
    why = f"bound by a statement at line {stmt.lineno} that the importer does not run"
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            scope[node.id] = Unread(stmt.lineno, why)
        elif isinstance(node, ast.alias):
            name = (node.asname or node.name).split(".")[0]
            scope[name] = Unread(stmt.lineno, f"imported at line {stmt.lineno} (not run)")
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            scope[node.name] = Unread(stmt.lineno, why)


def _assign(target: ast.expr, value: Any, scope: dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        scope[target.id] = value
        return
    if isinstance(target, ast.Attribute):  # main_config.exp_name = ...
        owner = _value(target.value, scope)
        if isinstance(owner, dict):
            owner[target.attr] = value
            return
    if isinstance(target, ast.Subscript):  # main_config['exp_name'] = ...
        owner = _value(target.value, scope)
        key = _value(target.slice, scope)
        if isinstance(owner, dict) and isinstance(key, str):
            owner[key] = value
            return
    for node in ast.walk(target):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            scope[node.id] = Unread(target.lineno, "bound by an unpacking assignment (not read)")


def _value(node: ast.expr, scope: dict[str, Any]) -> Any:
    """`node`'s value, or Unread(line, why) when it is not a plain literal expression."""
    try:
        return _eval(node, scope)
    except _NotRead as exc:
        return Unread(exc.line or getattr(node, "lineno", 0), exc.why)


def _eval(node: ast.expr, scope: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return _name(node, scope)
    if isinstance(node, ast.Dict):
        return _dict_display(node, scope)
    if isinstance(node, ast.Tuple | ast.List):
        items = [_eval(e, scope) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_plain(_eval(node.operand, scope), node))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _binary(node, scope)
    if isinstance(node, ast.Call):
        return _call(node, scope)
    if isinstance(node, ast.JoinedStr):
        return "".join(_fstring_part(part, scope) for part in node.values)
    if isinstance(node, ast.Subscript):
        return _subscript(node, scope)
    if isinstance(node, ast.Attribute):  # cfg.policy.x on a mapping read so far
        owner = _eval(node.value, scope)
        if isinstance(owner, dict) and node.attr in owner:
            return _plain(owner[node.attr], node)
    raise _NotRead(node, f"{type(node).__name__} expression (only literals are read)")


def _name(node: ast.Name, scope: dict[str, Any]) -> Any:
    if node.id in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.id]
    if node.id not in scope:
        raise _NotRead(node, f"name {node.id!r} is not bound by an assignment above it")
    return _plain(scope[node.id], node)


def _plain(value: Any, node: ast.AST) -> Any:
    """`value`, unless it is Unread (its reason is raised)."""
    if isinstance(value, Unread):
        raise _NotRead(node, f"{value.why}")
    return value


def _dict_display(node: ast.Dict, scope: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key_node, value_node in zip(node.keys, node.values, strict=True):
        if key_node is None:
            raise _NotRead(node, "a ** unpacking in a dict (not read)")
        out[_eval(key_node, scope)] = _value(value_node, scope)
    return out


def _binary(node: ast.BinOp, scope: dict[str, Any]) -> Any:
    left = _plain(_eval(node.left, scope), node)
    right = _plain(_eval(node.right, scope), node)
    _refuse_large(node, left, right)
    try:
        result = _BINARY[type(node.op)](left, right)
    except Exception as exc:  # an arithmetic error of the file's own expression
        raise _NotRead(node, f"{type(exc).__name__}: {exc}") from None
    if isinstance(result, str | tuple | list) and len(result) > _MAX_LEN:
        raise _NotRead(node, f"a value longer than {_MAX_LEN} (not read)")
    return result


def _refuse_large(node: ast.BinOp, left: Any, right: Any) -> None:
    """Refuse, before computing it, a result too large to be a config value (`[0] * 10**9`,
    `(10**64)**64`): reading a file must not exhaust memory or time."""
    ints = isinstance(left, int) and isinstance(right, int)
    if isinstance(node.op, ast.Pow) and ints and _power_bits(left, right) > _MAX_BITS:
        raise _NotRead(node, "a power too large for a config value (not read)")
    if not isinstance(node.op, ast.Mult):
        return
    for seq, count in ((left, right), (right, left)):
        sequence = isinstance(seq, str | list | tuple) and isinstance(count, int)
        if sequence and len(seq) * count > _MAX_LEN:
            raise _NotRead(node, f"a value longer than {_MAX_LEN} (not read)")


def _power_bits(base: int, exponent: int) -> int:
    """An upper bound of the bits of base ** exponent (an exponent above 64 counts as huge)."""
    return _MAX_BITS + 1 if abs(exponent) > 64 else abs(base).bit_length() * abs(exponent)


def _call(node: ast.Call, scope: dict[str, Any]) -> Any:
    name = node.func.id if isinstance(node.func, ast.Name) else None
    if name not in _CALLS:
        raise _NotRead(node, f"a call of {ast.unparse(node.func)!r} (only {_known_calls()})")
    args = [_plain(_eval(a, scope), node) for a in node.args if not isinstance(a, ast.Starred)]
    if len(args) != len(node.args):
        raise _NotRead(node, "a *argument (not read)")
    kwargs: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise _NotRead(node, "a **argument (not read)")
        kwargs[kw.arg] = _value(kw.value, scope)
    try:
        if name in ("dict", "EasyDict", "edict"):
            return {**(dict(args[0]) if args else {}), **kwargs}
        return _CALLS[name](*args, **{k: _plain(v, node) for k, v in kwargs.items()})
    except Exception as exc:
        raise _NotRead(node, f"{name}(...) failed: {exc}") from None


def _known_calls() -> str:
    return ", ".join(sorted(_CALLS))


def _fstring_part(part: ast.expr, scope: dict[str, Any]) -> str:
    if isinstance(part, ast.Constant):
        return str(part.value)
    if isinstance(part, ast.FormattedValue):
        value = _plain(_eval(part.value, scope), part)
        spec = "" if part.format_spec is None else _eval(part.format_spec, scope)
        if re.search(r"\d{5,}", spec):  # a width like {x:>999999999}
            raise _NotRead(part, "an f-string width too large (not read)")
        conversion = {115: str, 114: repr, 97: ascii}.get(part.conversion)
        return format(conversion(value) if conversion else value, spec)
    raise _NotRead(part, "an f-string part (not read)")


def _subscript(node: ast.Subscript, scope: dict[str, Any]) -> Any:
    owner = _plain(_eval(node.value, scope), node)
    if isinstance(node.slice, ast.Slice):
        bounds = [None if b is None else _eval(b, scope) for b in _slice_parts(node.slice)]
        key: Any = slice(*bounds)
    else:
        key = _plain(_eval(node.slice, scope), node)
    if not isinstance(owner, dict | list | tuple | str):
        raise _NotRead(node, "a subscript of a value that is not a literal (not read)")
    try:
        return _plain(owner[key], node)
    except (KeyError, IndexError, TypeError) as exc:
        raise _NotRead(node, f"subscript failed: {exc!r}") from None


def _slice_parts(node: ast.Slice) -> list[ast.expr | None]:
    return [node.lower, node.upper, node.step]


def _entry_arguments(tree: ast.Module, scope: dict[str, Any]) -> tuple[dict, dict]:
    """`seed` and `max_env_step` of the file's `train_*(...)` call (LightZero passes them to its
    entry, not in main_config), read as values, not run."""
    entry: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if not node.func.id.startswith("train_"):
            continue
        for kw in node.keywords:
            if kw.arg in _ENTRY_KEYS and kw.arg not in entry:
                entry[kw.arg] = _value(kw.value, scope)
                lines[kw.arg] = kw.value.lineno
    return entry, lines
