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


def test_the_pages_speak_of_the_product_not_of_its_tracker():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for page in pages:
        text = page.read_text()
        found = re.search(r"\bissues? #?\d+", text, re.IGNORECASE)
        assert found is None, f"{page.relative_to(ROOT)} names an issue: {found.group(0)!r}"
        assert "shared/DESIGN" not in text, f"{page.relative_to(ROOT)}: use docs/design.md"
