"""`python -m benchmarks render`: the wall-clock results page, rendered from committed JSON.

Runs in: its own process; trains nothing. Reads every `benchmarks/results/*.json` that a
`pace` or `learning` run wrote (`--json`, or the learning run's `learning.json`, copied here)
and writes `docs/async_time.md`: per file, its date, machine, commit and command, its `note`
(what the command does not show, such as the settings the configs had then), then its table as
the benchmark prints it. `--check` writes nothing and exits 1 when the committed page
differs from what the files render (the test suite runs it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.learning import Row as LearningRow
from benchmarks.learning_time import format_phases, format_time_table
from benchmarks.pace import Row as PaceRow
from benchmarks.pace import format_rows

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "async_time.md"
INTRO = """# Async against sync: wall-clock time

Rendered by `python -m benchmarks render` from the JSON files in `benchmarks/results/`; do not
edit by hand. Every figure comes from runs made one at a time on the machine named with it.
"Wall s" is a process's wall time, start to exit. The perfect-overlap bound of a sync run is its
wall time less the shorter side of max(train + driver, collect + eval): what an async run of the
same work could take at best ([where the time goes](async.md#where-the-time-goes)).
"""


def render() -> str:
    """The page's text."""
    parts = [INTRO]
    for path in sorted(RESULTS.glob("*.json")):
        data = json.loads(path.read_text())
        parts.append(_section(path.stem, data))
    return "\n".join(parts)


def _section(name: str, data: dict) -> str:
    machine = data["machine"]
    head = [
        f"## {name}",
        "",
        f"{data.get('date', 'undated')}; {machine['cpu_model']}, {machine['cores']} cores; "
        f"torch {data['torch']['version']}; commit {data['zeropipe']['commit']}.",
        "",
        "```text",
        data["command"],
        "```",
        "",
        *([data["note"], ""] if data.get("note") else []),
    ]
    if "pace" in data["sections"]:
        table = format_rows([PaceRow(**row) for row in data["rows"]])
        return "\n".join([*head, table, ""])
    rows = [LearningRow(**row) for row in data["rows"]]
    return "\n".join([*head, format_time_table(rows), "", format_phases(rows), ""])


def main(argv: list[str] | None = None) -> None:
    """Write the page, or with --check compare it."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks render", description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not PAGE.is_file() or PAGE.read_text() != text:
            print(f"{PAGE} is not what `python -m benchmarks render` makes of {RESULTS}")
            sys.exit(1)
        return
    PAGE.write_text(text)
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
