"""docs/parity.md cites our code by symbol, and every symbol it cites exists.

A citation of our code is `path.py::Symbol`: the path relative to `src/zeropipe/` (or, for a
test, relative to the repository root, starting with `tests/`), then `::`, then a module-level
name or a dotted path below one (`Class.method`, `Config.field`). A citation that no longer
resolves, because the code was renamed or moved, fails here and names itself.

Line numbers drift with every edit, so our side is never cited by line: `algos/targets.py:114`
(a path that exists under `src/zeropipe/`, or a bare file name that is one of ours) fails. The
reference's side (LightZero, pinned to one commit) keeps its line numbers; its paths are written
with their directory (`policy/muzero.py:180`), so they never read as ours.

The pages checked are docs/parity.md and the policy pages that include its rows.
"""

from __future__ import annotations

import ast
import importlib
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "zeropipe"
PAGES = [ROOT / "docs" / "parity.md", *sorted((ROOT / "docs" / "policies").glob("*.md"))]

# `a/b.py::Name` or `a/b.py::Class.member`; the path may be bare (`b.py::Name`) only if it is
# unambiguous, which the test checks.
SYMBOL_CITATION = re.compile(
    r"(?<![\w/.])((?:[\w]+/)*[\w]+\.py)::([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)"
)
# `a/b.py:12`, `b.py:12-30` (a line citation), but not `b.py::Name`.
LINE_CITATION = re.compile(r"(?<![\w/.])((?:[\w]+/)*[\w]+\.py):(\d+)")


def _our_files() -> dict[str, Path]:
    return {p.relative_to(SRC).as_posix(): p for p in SRC.rglob("*.py")}


OUR_FILES = _our_files()
OUR_BASENAMES = {rel.rsplit("/", 1)[-1] for rel in OUR_FILES}


def _citations(pattern: re.Pattern) -> list[tuple[str, int, re.Match]]:
    found = []
    for page in PAGES:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for match in pattern.finditer(line):
                found.append((f"{page.relative_to(ROOT)}:{number}", number, match))
    return found


def _source_file(path: str) -> Path | None:
    if path.startswith("tests/"):
        candidate = ROOT / path
        return candidate if candidate.is_file() else None
    return OUR_FILES.get(path)


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _members(node: ast.AST) -> dict[str, ast.AST]:
    """The names a module or class body defines: functions, classes, (annotated) assignments."""
    names: dict[str, ast.AST] = {}
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[child.name] = child
        elif isinstance(child, ast.AnnAssign) and isinstance(child.target, ast.Name):
            names[child.target.id] = child
        elif isinstance(child, ast.Assign):
            for target in child.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = child
        elif isinstance(child, (ast.ImportFrom, ast.Import)):
            for alias in child.names:
                names[(alias.asname or alias.name).split(".")[0]] = child
    return names


def _resolves_by_ast(path: Path, symbol: str) -> bool:
    node: ast.AST = _tree(path)
    for part in symbol.split("."):
        found = _members(node).get(part)
        if found is None:
            return False
        node = found
    return True


def _resolves_by_import(path: str, symbol: str) -> bool:
    """Walk the attributes of the imported module (catches names made at run time)."""
    if path.startswith("tests/"):
        return False
    module = "zeropipe." + path[: -len(".py")].replace("/", ".").removesuffix(".__init__")
    try:
        obj = importlib.import_module(module)
    except ImportError:
        return False
    for part in symbol.split("."):
        if not hasattr(obj, part):
            fields = getattr(obj, "model_fields", None)  # a pydantic field without a default
            if isinstance(fields, dict) and part in fields:
                obj = fields[part]
                continue
            return False
        obj = getattr(obj, part)
    return True


def resolve(path: str, symbol: str) -> str | None:
    """None if `path::symbol` names existing code, else why not."""
    if "/" not in path and not path.startswith("tests/"):
        matches = [rel for rel in OUR_FILES if rel.rsplit("/", 1)[-1] == path]
        if len(matches) != 1:
            return f"a bare file name that is {len(matches)} of ours: write its directory"
        path = matches[0]
    source = _source_file(path)
    if source is None:
        return "no such file under src/zeropipe (nor tests/)"
    if _resolves_by_ast(source, symbol) or _resolves_by_import(path, symbol):
        return None
    return f"{source.relative_to(ROOT)} has no {symbol}"


def test_the_pages_cite_our_code_by_symbol():
    citations = _citations(SYMBOL_CITATION)
    assert len(citations) >= 40, f"expected the parity tables' citations, found {len(citations)}"
    unresolved = []
    for where, _, match in citations:
        why = resolve(match.group(1), match.group(2))
        if why is not None:
            unresolved.append(f"{where}: `{match.group(0)}`: {why}")
    assert not unresolved, "citations of our code that do not resolve:\n" + "\n".join(unresolved)


def test_no_citation_of_our_code_uses_a_line_number():
    by_line = []
    for where, _, match in _citations(LINE_CITATION):
        path = match.group(1)
        ours = path in OUR_FILES or path.startswith("tests/")
        bare_ours = "/" not in path and path in OUR_BASENAMES
        if ours or bare_ours:
            by_line.append(f"{where}: `{match.group(0)}`")
    assert not by_line, (
        "cite our code as `path.py::Symbol`, not by line (write a reference path with its "
        "directory, e.g. policy/muzero.py:180, if it is the reference's):\n" + "\n".join(by_line)
    )


# A line number standing alone, continuing the citation before it: `, :76`.
CONTINUED_LINE = re.compile(r"(?:^|[\s(,;])(:\d+)")


def _ours_cells() -> list[tuple[str, str]]:
    """(where, cell) for every cell of a table's "ours" column."""
    cells = []
    for page in PAGES:
        column = None
        for number, line in enumerate(page.read_text().splitlines(), 1):
            if not line.startswith("|"):
                column = None
                continue
            row = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if column is None:
                column = row.index("ours") if "ours" in row else -1
                width = len(row)
                continue
            if column < 0 or set(line) <= set("|-: "):
                continue
            where = f"{page.relative_to(ROOT)}:{number}"
            assert len(row) == width, f"{where}: {len(row)} cells, the header has {width}"
            cells.append((where, row[column]))
    return cells


def test_the_ours_column_has_no_line_numbers():
    cells = _ours_cells()
    assert len(cells) >= 50, f"expected the parity tables' rows, found {len(cells)}"
    found = [
        f"{where}: {m.group(1)!r} in {cell[:80]!r}"
        for where, cell in cells
        for m in CONTINUED_LINE.finditer(cell)
    ]
    assert not found, "the ours column cites by line:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("path", "symbol", "ok"),
    [
        ("algos/targets.py", "TargetComputer._value_targets", True),
        ("mcts/selection.py", "puct_select", True),
        ("algos/muzero.py", "MuZeroFamilyConfig.loss_weighting", True),
        ("algos/targets.py", "TargetComputer.no_such_method", False),
        ("algos/no_such_module.py", "anything", False),
        ("losses.py", "unroll_loss", True),  # bare, but only one of ours has that name
        ("efficientzero.py", "EfficientZeroNetwork", False),  # bare: algos/ and models/ have one
        ("tests/test_parity_citations.py", "resolve", True),
    ],
)
def test_the_resolver_itself(path: str, symbol: str, ok: bool):
    assert (resolve(path, symbol) is None) is ok
