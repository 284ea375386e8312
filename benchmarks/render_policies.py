"""The committed results of each policy type, rendered into its page (docs/policies/TYPE.md).

Per type, every learning file in benchmarks/results/ with a row of a config of that type
(`policy.type` of the config the row names): success, env steps and wall seconds to the
threshold per pipeline, and whether the file is the config's current measurement (as shipped).
The section sits between `BEGIN` and `END` in the page; the rest of the page is written by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from benchmarks.learning_rows import Row
from benchmarks.learning_time import STEPS, WALL, format_censored

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "docs" / "policies"
BEGIN = (
    "<!-- results rendered by `python -m benchmarks render` "
    "from benchmarks/results/: do not edit -->"
)
END = "<!-- end of the rendered results -->"
HEADER = [
    "| file | config | as shipped | success sync / async | env steps to threshold, median "
    "sync / async | wall s to goal, median sync / async |",
    "|---|---|---|---|---|---|",
]


def config_type(config: str) -> str | None:
    """`policy.type` of the config file `config` (relative to the repository), or None when the
    file is not in the repository any more."""
    path = ROOT / config
    if not path.is_file():
        return None
    return (yaml.safe_load(path.read_text()).get("policy") or {}).get("type")


def type_rows(results: Path) -> dict[str, list[tuple[str, bool, dict[str, Row], bool]]]:
    """policy type -> (file stem, current?, {pipeline: row}, wall clock?) per config of that
    type, by file; a file marked `"wall_clock": false` has no wall-clock figures."""
    by_type: dict[str, list] = {}
    for path in sorted(results.glob("*.json")):
        data = json.loads(path.read_text())
        if "learning" not in data["sections"]:
            continue
        pairs: dict[str, dict[str, Row]] = {}
        for row in data["rows"]:
            pairs.setdefault(row["config"], {})[row["pipeline"]] = Row(**row)
        for config, found in pairs.items():
            pair = {p: found[p] for p in ("sync", "async") if p in found}
            current = Path(config).stem in data.get("current", [])
            kind = config_type(config)
            if kind is not None:
                timed = data.get("wall_clock", True)
                by_type.setdefault(kind, []).append((path.stem, current, pair, timed))
    return by_type


def section(entries: list[tuple[str, bool, dict[str, Row], bool]]) -> list[str]:
    """The rendered lines for one type's entries (`type_rows`)."""
    if not entries:
        return ["No run of this type is committed as JSON yet.", ""]
    lines = [
        "Each committed learning file with a config of this type; the file's section of "
        "[Results](../results.md#from-the-committed-data) gives its date, machine, commit, "
        "command and what changed since. Medians count a seed that never got there as slower "
        "than every seed that did.",
        "",
        *HEADER,
    ]
    for stem, current, pair, timed in entries:
        first = next(iter(pair.values()))
        walls = " / ".join(format_censored(r, WALL) for r in pair.values())
        cells = [
            ", ".join(f"{len(getattr(r, STEPS))}/{r.seeds}" for r in pair.values()),
            " / ".join(format_censored(r, STEPS, ",.0f") for r in pair.values()),
            walls if timed else "not timed",
        ]
        if set(pair) != {"sync", "async"}:
            cells = [f"{' / '.join(pair)}: {cell}" for cell in cells]
        lines.append(
            f"| [{stem}](../results.md#{stem}) | {Path(first.config).stem} "
            f"| {'yes' if current else 'no'} | " + " | ".join(cells) + " |"
        )
    return [*lines, ""]


def pages(results: Path, between) -> dict[Path, str]:
    """Each policy page -> its text with the rendered section (`between` is render's)."""
    by_type = type_rows(results)
    out = {}
    for page in sorted(PAGES.glob("*.md")):
        if page.stem == "index":
            continue
        entries = sorted(by_type.get(page.stem, []), key=lambda e: (not e[1], e[0]))
        out[page] = between(page.read_text(), BEGIN, END, section(entries), page)
    return out
