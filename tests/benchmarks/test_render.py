"""The wall-clock results page is what `python -m benchmarks render` makes of the committed JSON
files: a figure on that page cannot be typed by hand or go stale."""

from __future__ import annotations

import json

from benchmarks import render


def test_the_committed_page_is_the_rendered_one():
    assert render.PAGE.read_text() == render.render()


def test_each_results_file_names_its_machine_commit_and_command():
    files = sorted(render.RESULTS.glob("*.json"))
    assert files
    for path in files:
        data = json.loads(path.read_text())
        assert data["machine"]["cores"] and data["zeropipe"]["commit"] and data["date"]
        assert data["command"].startswith("python -m benchmarks ")
        assert f"## {path.stem}" in render.render()
