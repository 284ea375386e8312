"""The learning benchmark's small-multiples figure: one panel per config, every seed's eval curve,
sync and async in two colours, the threshold as a line.

Runs in: the benchmark's process. One panel per config reads where the all-in-one figure
(`learning.png`, a mean and band per group) cannot: with ten types on one axis the bands hide each
other. Drawn with matplotlib's Agg canvas (no display, no pyplot state).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from benchmarks.learning_rows import Curve

COLOURS = {"sync": "tab:blue", "async": "tab:orange"}
COLUMNS = 3


def plot_grid(curves: list[Curve], thresholds: dict[str, float], path: Path) -> None:
    """One panel per config (in `thresholds`' order): each run's eval reward against env steps,
    coloured by pipeline, a dot where it first reaches the threshold."""
    from matplotlib.figure import Figure

    configs = [c for c in thresholds if any(cur.spec.config == c for cur in curves)]
    if not configs:
        return
    rows = math.ceil(len(configs) / COLUMNS)
    fig = Figure(figsize=(4.2 * COLUMNS, 3.0 * rows), layout="constrained")
    axes = fig.subplots(rows, COLUMNS, squeeze=False).ravel()
    for ax, config in zip(axes, configs, strict=False):
        _panel(ax, [c for c in curves if c.spec.config == config], thresholds[config], config)
    for ax in axes[len(configs) :]:
        ax.set_visible(False)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)


def _panel(ax, curves: list[Curve], threshold: float, config: str) -> None:
    seen = set()
    for curve in curves:
        if not curve.rewards:
            continue
        pipeline = curve.spec.pipeline
        label = pipeline if pipeline not in seen else None
        seen.add(pipeline)
        colour = COLOURS.get(pipeline, "tab:gray")
        ax.plot(curve.envsteps, curve.rewards, color=colour, lw=1.0, alpha=0.8, label=label)
        first = next((i for i, r in enumerate(curve.rewards) if r >= threshold), None)
        if first is not None:
            ax.plot(curve.envsteps[first], curve.rewards[first], "o", color=colour, ms=4)
    ax.axhline(threshold, color="k", lw=0.8, ls="--")
    ax.set_title(Path(config).stem, fontsize=9)
    ax.set_xlabel("env steps", fontsize=8)
    ax.set_ylabel("eval reward_mean", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    if seen:
        ax.legend(fontsize=7, loc="best")
