"""Wall time to the goal computed from two measurements, where one-at-a-time learning runs cost
too much: env steps to the threshold (learning runs, which may share the cores) over env steps
per second (`python -m benchmarks pace`, one run at a time over a fixed budget).

Runs in: the render command's process. A learning results file names its pace file
(`"pace": "<stem>"`); each of its rows then takes, per seed that reached the threshold, its env
steps over the median rate of its (config, pipeline) as its wall seconds to the goal, the pace
runs' median learner busy fraction and phase seconds, and (sync) a perfect-overlap bound of its
wall times the pace runs' median bound-to-wall fraction. The async/sync ratio's interval is the
product's: a percentile bootstrap that resamples the seeds of both measurements in both
pipelines, so the rates' spread widens it as the seeds' does.
"""

from __future__ import annotations

import dataclasses
import statistics

import numpy as np

from benchmarks.learning_stats import MedianRatio, all_seeds, censored_ratio, resampled_medians

STEPS = "envsteps_to_threshold"


def paced_rows(rows: list, pace_rows: list[dict]) -> list:
    """The learning rows (`benchmarks.learning.Row`) with their wall-clock fields computed from
    the pace rows (dicts of `benchmarks.pace.Row`, the `shipped` variant counted).

    Raises:
        ValueError: a row's (config, pipeline) has no shipped pace row.
    """
    pace = {(p["config"], p["pipeline"]): p for p in pace_rows if p.get("variant") == "shipped"}
    out = []
    for row in rows:
        p = pace.get((row.config, row.pipeline))
        if p is None:
            raise ValueError(f"no pace row for {row.config} {row.pipeline}")
        rate = statistics.median(p["envstep_per_s"])
        walls = [round(s / rate, 1) for s in getattr(row, STEPS)]
        fraction = (
            statistics.median(b / w for b, w in zip(p["overlap_bound_s"], p["wall_s"], strict=True))
            if p["overlap_bound_s"]
            else None
        )
        out.append(
            dataclasses.replace(
                row,
                process_wall_s_to_goal=walls,
                overlap_bound_s=[round(w * fraction, 1) for w in walls] if fraction else [],
                learner_busy_fraction=list(p["learner_busy_fraction"]),
                phase_s={k: round(statistics.median(v), 1) for k, v in p["phase_s"].items()},
                paced_envstep_per_s=list(p["envstep_per_s"]),
                first_grid_version_s=[],
                first_eval_latency_s=[],
            )
        )
    return out


def paced_ratio(sync, asyn, draws: int = 10_000, seed: int = 0) -> MedianRatio:
    """Async's computed median wall over sync's (median env steps to the threshold, every seed,
    over the median rate), with the product's percentile bootstrap interval."""
    rng = np.random.default_rng(seed)
    steps_s, steps_a = all_seeds(sync, STEPS), all_seeds(asyn, STEPS)
    rate_s = np.asarray(sync.paced_envstep_per_s, dtype=float)
    rate_a = np.asarray(asyn.paced_envstep_per_s, dtype=float)
    point = float(
        censored_ratio(
            np.median(steps_a) / np.median(rate_a), np.median(steps_s) / np.median(rate_s)
        )
    )
    wall_a = resampled_medians(steps_a, draws, rng) / resampled_medians(rate_a, draws, rng)
    wall_s = resampled_medians(steps_s, draws, rng) / resampled_medians(rate_s, draws, rng)
    boots = censored_ratio(wall_a, wall_s)
    low, high = (float(q) for q in np.nanquantile(boots, [0.025, 0.975], method="nearest"))
    successes = (int(np.isfinite(steps_s).sum()), int(np.isfinite(steps_a).sum()))
    return MedianRatio(sync.config, point, low, high, seeds=successes)


def is_paced(row) -> bool:
    """Whether the row's wall-clock fields were computed (`paced_rows`)."""
    return bool(getattr(row, "paced_envstep_per_s", None))


def paced_note(stem: str, pace_file: str) -> str:
    """The line a table gives under a computed row."""
    return (
        f"{stem}: wall seconds computed, env steps to the threshold (runs sharing the cores) over "
        f"env steps per second measured one run at a time ([{pace_file}](#{pace_file}))"
    )
