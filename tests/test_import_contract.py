"""The import contract of `src/zeropipe` (DESIGN §2), read from the source with `ast`.

Every `import` counts, wherever it stands (module level, inside a function, under
`TYPE_CHECKING`), and so does `importlib.import_module("zeropipe...")`. Two rules:
- a package imports only packages of lower layers (`LAYERS`), except the exceptions named below;
- no circle of files, except the ones named below with their reason.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

# Lowest first. A package may import its own modules and those of lower layers; packages of one
# layer do not import each other.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"config", "transport", "interrupts"}),  # plain data, bytes, signals: no RL code
    frozenset({"envs", "models", "buffer", "outputs"}),  # outputs: a run's directory and logs
    frozenset({"mcts"}),
    frozenset({"algos"}),  # registry.py at its top
    frozenset({"learner", "workers"}),
    frozenset({"backends"}),  # where the workers run: processes or Ray actors
    frozenset({"pipeline"}),
    frozenset({"cli"}),
)
# the package's own entry points may import anything: the CLI's and the Python API's (api.py)
TOP = {"zeropipe", "zeropipe.__main__", "zeropipe.api"}

# None left: config/ finds the policy types through the package's entry points, not by importing
# algos/ (config/policy.py).
UPWARD_EXCEPTIONS: set[tuple[str, str]] = set()

CIRCLE_EXCEPTIONS: set[frozenset[str]] = set()


def _modules(base: Path = SRC, package: str = "zeropipe") -> dict[str, Path]:
    mods = {}
    for path in sorted((base / package).rglob("*.py")):
        name = ".".join(path.relative_to(base).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = path
    return mods


def _imported(tree: ast.Module, mods: dict[str, Path], package: str = "zeropipe") -> Iterator[str]:
    """Every module of `package` that `tree` imports, by statement or by `import_module(...)` of
    a string literal or of a module-level string constant."""
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(package):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                yield sub if sub in mods else node.module
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith(package))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
            for arg in node.args:
                value = constants.get(arg.id) if isinstance(arg, ast.Name) else None
                value = arg.value if isinstance(arg, ast.Constant) else value
                if isinstance(value, str) and value.startswith(package):
                    yield value


def import_graph(base: Path = SRC, package: str = "zeropipe") -> dict[str, set[str]]:
    """Module → the modules of `package` it imports."""
    mods = _modules(base, package)
    graph = {}
    for name, path in mods.items():
        found = set(_imported(ast.parse(path.read_text()), mods, package))
        graph[name] = {m for m in found if m in mods and m != name}
    return graph


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and module not in TOP) else module


def _layer(package: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if package in layer)


def upward_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(importer, imported) pairs that break the layering."""
    bad = set()
    for module, targets in graph.items():
        if module in TOP:
            continue
        for target in targets:
            a, b = _package(module), _package(target)
            if a != b and (b in TOP or _layer(b) >= _layer(a)):
                bad.add((module, target))
    return bad


def circles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """Strongly connected components of more than one file (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.add(frozenset(component))
    return found


def test_every_package_has_a_layer():
    packages = {_package(m) for m in _modules()} - TOP
    assert packages <= set().union(*LAYERS), packages - set().union(*LAYERS)


def test_no_package_imports_upward():
    assert upward_imports(import_graph()) == UPWARD_EXCEPTIONS


def test_no_import_circle_but_the_named_ones():
    assert circles(import_graph()) == CIRCLE_EXCEPTIONS


def test_config_names_no_policy_type():
    """The types are the registry's (algos/), found through entry points: config/ holds the
    fields every type reads and the rules of each field, never a type's name."""
    from zeropipe.config import registered_policy_types

    names = "|".join(sorted(registered_policy_types(), key=len, reverse=True))
    pattern = re.compile(rf"\b({names})\b")
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((SRC / "zeropipe" / "config").rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("package", ["benchmarks", "tests"])
def test_no_import_circle_in_the_rest_of_the_repository(package: str):
    assert circles(import_graph(ROOT, package)) == set()


def test_the_checks_see_a_violation():
    """The rules themselves: an algos → pipeline import is upward, a two-file loop a circle."""
    graph = {"zeropipe.algos.a": {"zeropipe.pipeline.b"}, "zeropipe.pipeline.b": set()}
    assert upward_imports(graph) == {("zeropipe.algos.a", "zeropipe.pipeline.b")}
    graph = {"zeropipe.algos.a": {"zeropipe.algos.b"}, "zeropipe.algos.b": {"zeropipe.algos.a"}}
    assert circles(graph) == {frozenset(graph)}
