"""The learning benchmark's wall-clock table: what a user waits for the goal, per pipeline.

Runs in: the learning benchmark's process. One row per config judged in both pipelines: the
median process wall seconds to the goal (start to exit of a run that stopped at its stop value)
for sync and async, async over sync with a percentile bootstrap interval over the seeds, the
perfect-overlap bound of the sync runs (each sync run's wall less the shorter side of
max(train + driver, collect + eval), from its `stop` line: phases.py), async's wall over that
bound, the learner's busy fraction, and the
median env steps to the threshold for both (reported, not a gate). Every median is over all the
seeds run, a seed that never reached the goal counted as slower than any that did: a median over
the successes alone would flatter the pipeline that failed more. Wall seconds mean something
only for runs made one at a time on a quiet machine (`--jobs 1`, the default).
"""

from __future__ import annotations

import statistics
from pathlib import Path

from benchmarks.learning_pace import is_paced, paced_ratio
from benchmarks.learning_stats import censored_median, median_ratios

WALL = "process_wall_s_to_goal"
STEPS = "envsteps_to_threshold"


def format_time_table(rows) -> str:
    """A Markdown table of the rows (`benchmarks.learning.Row`) with both pipelines."""
    lines = [
        "| config | success sync / async | wall s to goal, sync | async | async / sync [95%] "
        "| overlap bound s (sync) | async / bound | learner busy sync / async "
        "| env steps to threshold, sync | async | async / sync |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    walls = wall_ratios(rows)
    steps = {r.config: r for r in median_ratios(rows)}
    by_config: dict[str, dict[str, object]] = {}
    for row in rows:
        by_config.setdefault(row.config, {})[row.pipeline] = row
    for config, pair in by_config.items():
        if {"sync", "async"} - pair.keys():
            continue
        s, a = pair["sync"], pair["async"]
        name = Path(config).stem + (" (computed)" if is_paced(s) else "")
        lines.append(
            f"| {name} | {len(getattr(s, WALL))}/{s.seeds}, "
            f"{len(getattr(a, WALL))}/{a.seeds} | {format_censored(s, WALL)} "
            f"| {format_censored(a, WALL)} | {_ratio(walls.get(config))} "
            f"| {_median(s.overlap_bound_s)} | {_over_bound(a, s)} "
            f"| {_median(s.learner_busy_fraction, '.2f')} / "
            f"{_median(a.learner_busy_fraction, '.2f')} "
            f"| {format_censored(s, STEPS, ',.0f')} "
            f"| {format_censored(a, STEPS, ',.0f')} | {_ratio(steps.get(config))} |"
        )
    singles = _one_pipeline_rows(rows, by_config)
    return "\n".join(lines if len(lines) > 2 or not singles else singles)


def _one_pipeline_rows(rows, by_config: dict) -> list[str]:
    """The table of a file whose configs ran in one pipeline only (a lever measured on async
    runs alone): per row its own medians, no ratio."""
    lines = [
        "| config | pipeline | success | wall s to goal | learner steps to it | learner busy "
        "| env steps to threshold |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if len(by_config[row.config]) == 1:
            lines.append(
                f"| {Path(row.config).stem} | {row.pipeline} | {len(getattr(row, WALL))}/"
                f"{row.seeds} | {format_censored(row, WALL)} "
                f"| {_median(row.learner_steps_to_threshold, ',.0f')} "
                f"| {_median(row.learner_busy_fraction, '.2f')} "
                f"| {format_censored(row, STEPS, ',.0f')} |"
            )
    return lines if len(lines) > 2 else []


def wall_ratios(rows) -> dict:
    """Per config with both pipelines, async's median wall to the goal over sync's
    (`benchmarks.learning_stats.MedianRatio`): measured walls bootstrapped over the seeds,
    computed ones (`benchmarks.learning_pace`) with the interval of their product."""
    ratios = {r.config: r for r in median_ratios(rows, field=WALL)}
    pairs: dict[str, dict[str, object]] = {}
    for row in rows:
        pairs.setdefault(row.config, {})[row.pipeline] = row
    for config, pair in pairs.items():
        s, a = pair.get("sync"), pair.get("async")
        if s is not None and a is not None and is_paced(s) and is_paced(a):
            ratios[config] = paced_ratio(s, a)
    return ratios


def format_phases(rows) -> str:
    """Per row, the median seconds per phase of the runs that reached the goal."""
    out = []
    for row in rows:
        if row.phase_s:
            parts = ", ".join(f"{k} {v:.1f}" for k, v in row.phase_s.items())
            out.append(f"phases, {Path(row.config).stem} {row.pipeline} (median s): {parts}")
    return "\n".join(out)


def format_pace(rows) -> str:
    """Per row, when the learner made the first version the eval grid scores and how long its
    eval's result took after that (medians over every seed): the pipelines' pace, which the
    wall time to the goal mixes with the learning's luck (which version first passes)."""
    out = []
    for row in rows:
        if row.first_grid_version_s:
            out.append(
                f"pace, {Path(row.config).stem} {row.pipeline} (median s): first eval's weights "
                f"made at {statistics.median(row.first_grid_version_s):.1f}, its result "
                f"{statistics.median(row.first_eval_latency_s):.1f} later"
            )
    return "\n".join(out)


def grid_pace(lines: list[dict], process_wall_s: float | None) -> tuple[float, float] | None:
    """(process seconds when the learner made the weights of the run's first scheduled eval,
    seconds from then to that eval's result), from a run's metrics lines; None where it has no
    such eval or no `stop` line. Process seconds are a line's `time_s` plus the wall the
    process spent before its log began (its wall less its `stop` line's time_s: the start-up)."""
    stop = next((e for e in reversed(lines) if e["event"] == "stop"), None)
    first = next(
        (
            e
            for e in lines
            if e["event"] == "eval" and e.get("policy_version", 0) > 0 and not e.get("final")
        ),
        None,
    )
    if stop is None or first is None or process_wall_s is None:
        return None
    version = first["policy_version"]
    made = next(
        (e["time_s"] for e in lines if e["event"] == "train" and e["train_iter"] >= version), None
    )
    if made is None:
        return None
    start_up = process_wall_s - stop["time_s"]
    return round(made + start_up, 3), round(first["time_s"] - made, 3)


def _median(values, fmt: str = ".1f") -> str:
    return format(statistics.median(values), fmt) if values else "-"


def _ratio(r) -> str:
    return "-" if r is None else f"{r.ratio:.2f} [{r.low:.2f}, {r.high:.2f}]"


def format_censored(row, field: str, fmt: str = ".1f") -> str:
    """The median of `field` over every seed of the row, a seed that never got there counted
    as slower than all that did; "not reached" when that is half of them or more."""
    value = censored_median(row, field)
    if value != value:  # nan: no seeds
        return "-"
    return "not reached" if value == float("inf") else format(value, fmt)


def _over_bound(a, s) -> str:
    """Async's median wall (every seed) over sync's median perfect-overlap bound."""
    wall = censored_median(a, WALL)
    if not getattr(a, WALL) or not s.overlap_bound_s or wall == float("inf"):
        return "-"
    return f"{wall / statistics.median(s.overlap_bound_s):.2f}"
