"""The MinAtar matrix of docs/results.md: game × type × pipeline, from the current learning rows.

Runs in: `python -m benchmarks render`. Each shipped MinAtar config (`configs/minatar_*.yaml`)
gets its rows from the learning file that names it `current`: success out of its seeds, the median
env steps and process wall seconds to the threshold (a seed that never reached it counts as
slower than every seed that did), and the median best and final eval. A config no file names
current is listed as not run, so the table shows what is missing as well as what was measured.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path

from benchmarks.learning_rows import Row
from benchmarks.learning_time import WALL, format_censored

BEGIN = "<!-- MinAtar matrix rendered by `python -m benchmarks render`: do not edit -->"
END = "<!-- end of the MinAtar matrix -->"
GAMES = {"breakout": "Breakout", "space_invaders": "SpaceInvaders"}
PIPELINES = ("sync", "async")


def section(rows: list[Row], configs: list[Path]) -> list[str]:
    """The matrix's lines: one per MinAtar config and pipeline, games in `GAMES` order."""
    by_key = {(Path(r.config).stem, r.pipeline): r for r in rows}
    lines = [
        "| game | type | pipeline | success | env steps to threshold | wall s to threshold "
        "| best eval | final eval |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for game, title in GAMES.items():
        stems = sorted(p.stem for p in configs if p.stem.startswith(f"minatar_{game}_"))
        for stem in stems:
            kind = stem.removeprefix(f"minatar_{game}_")
            for pipeline in PIPELINES:
                row = by_key.get((stem, pipeline))
                lines.append(f"| {title} | {kind} | {pipeline} | {_cells(row)} |")
    return lines


def _cells(row: Row | None) -> str:
    if row is None:
        return "not run | - | - | - | -"
    return " | ".join(
        [
            f"{row.successes}/{row.seeds}",
            format_censored(row, "envsteps_to_threshold", ",.0f"),
            format_censored(row, WALL),
            _median(row.best),
            _median(row.final),
        ]
    )


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}" if values else "-"


def render(page: str, rows: list[Row], configs_dir: Path, between: Callable[..., str]) -> str:
    """`page` with the lines between `BEGIN` and `END` replaced by the matrix (`between`: the
    renderer's marker-replacing function, which names the page in its errors)."""
    return between(page, BEGIN, END, section(rows, sorted(configs_dir.glob("minatar_*.yaml"))))
