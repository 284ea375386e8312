"""The documentation site builds strictly: a broken link, a missing page or an API reference that
no longer resolves fails the build, so it fails here (and in CI, which runs `make test`).

The build is `mkdocs build --strict` with the repository's mkdocs.yml, into a temporary directory
(not site/). It needs the `docs` extra, which `dev` pulls in; without mkdocs the test is skipped
and says why.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(240)
@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None,
    reason='mkdocs is not installed: pip install -e ".[docs]" (the dev extra has it)',
)
def test_the_docs_build_strictly(tmp_path: Path):
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=200,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # material's banner, not a warning
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stderr[-5000:]}"
    assert (tmp_path / "site" / "index.html").is_file()


LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_readme_links_only_to_files_in_the_repository():
    for target in LINK.findall((ROOT / "README.md").read_text()):
        assert "://" not in target, f"README.md links outside the repository: {target}"
        path = (ROOT / target.split("#", 1)[0]).resolve()
        assert path.is_relative_to(ROOT), f"README.md links outside the repository: {target}"
        assert path.exists(), f"README.md links to a missing file: {target}"


# What a user reads (the pages, the configs' comments, the docstrings and messages in src/, which
# the API reference and `zeropipe config --describe` show) names the product, not the tracker or
# notes outside the repository: those are gone in a clone. Each row: pattern, what to write instead.
OUTSIDE_REFERENCES = [
    (re.compile(r"\bissues? #?\d+", re.IGNORECASE), "say the reason in words"),
    (re.compile(r"DESIGN(\.md)? ?§"), "point to a section of docs/design.md"),
    (re.compile(r"shared/DESIGN"), "point to docs/design.md"),
    (re.compile(r"lightzero_facts"), "name the reference's function or file, or docs/parity.md"),
    (re.compile(r"README[ :,]+[\"'A-Z]"), "point to the docs page that holds it"),
    (re.compile(r"/work/"), "name a path inside the repository"),
]


def _user_facing_files() -> list[Path]:
    return [
        ROOT / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
        *sorted((ROOT / "configs").glob("*.yaml")),
        *sorted((ROOT / "src").rglob("*.py")),
    ]


def test_the_outside_reference_patterns_catch_what_they_are_for():
    written = {
        "measured there (issue 15 notes)": True,
        "see Issue #26": True,
        "see DESIGN §3 for all ten": True,
        "the rules (DESIGN.md §5)": True,
        "links ../shared/DESIGN.md": True,
        "(lightzero_facts §2.7)": True,
        "learning: README 'bf16'": True,
        'README "Learning benchmark"': True,
        "in /work/shared/reference": True,
        "the issue of 26 seeds": False,
        "docs/design.md, 'Processes and ownership'": False,
        "the README's quick start": False,
        "LightZero's `_run_async_driver`": False,
    }
    found = {text: any(p.search(text) for p, _ in OUTSIDE_REFERENCES) for text in written}
    assert found == written


def test_what_a_user_reads_speaks_of_the_product_not_of_its_tracker():
    files = _user_facing_files()
    assert len(files) > 100  # the globs still find the tree
    problems = []
    for path in files:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for pattern, instead in OUTSIDE_REFERENCES:
                if found := pattern.search(line):
                    where = f"{path.relative_to(ROOT)}:{number}"
                    problems.append(f"{where}: {found.group(0)!r}: {instead}")
    assert problems == []
