"""Learning curves of runs (`zeropipe plot`): eval return and throughput against env steps or time.

Runs in: driver (the CLI process). Reads each run's `log/metrics.jsonl` (outputs/run_dir.py):
`eval` lines give `reward_mean`; `collect` lines give the run's `envstep_per_s` and
`learner_steps_per_s` so far (pipeline/run_state.py). `time_s` restarts at 0 in a resumed
process, so each `resume` line shifts the later times by the time reached before it.

Seeds of one experiment: runs whose resolved configs (`<run>/config.yaml`) are equal once `seed`
and `exp_name` are left out. Such a group is drawn as the median over its runs with a min–max band,
after interpolating every run onto a common grid over the x range that all of them cover; each
run's own eval points are drawn faintly beside it (a run that stopped early at `stop_value` ends
the common range; the others' later evals stay visible). Its label is the exp_name's last
component with a seed suffix (`_seed3`, `-s3`) removed (for the `EXP/seed_S` runs of `train
--seeds`: EXP's last component), and the seed count. An experiment directory of `train --seeds`
(no metrics of its own, `seed_S` runs inside) stands for its runs.
Drawn with matplotlib's Agg canvas (no display needed, no pyplot global state).
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from zeropipe.cli.errors import InputError

log = logging.getLogger("zeropipe.cli")

XAxis = Literal["envstep", "time_s"]
GRID_POINTS = 200
# Each run's own eval points: faint, unlabelled (a leading "_" keeps them out of the legend).
_RUN_STYLE = {"alpha": 0.45, "lw": 0.8, "marker": "o", "ms": 2.5, "label": "_run"}
_SEED_SUFFIX = re.compile(r"[-_.]?(seed|s)[-_=]?\d+$")
_SEED_RUN = re.compile(r"seed_(\d+)")  # a run of `train --seeds`: EXP/seed_S


@dataclass(frozen=True)
class Curve:
    """One quantity of one run against both x axes (M points, x non-decreasing)."""

    envstep: np.ndarray  # [M]
    time_s: np.ndarray  # [M]
    value: np.ndarray  # [M]

    def x(self, axis: XAxis) -> np.ndarray:
        """The x values on `axis`, [M]."""
        return self.envstep if axis == "envstep" else self.time_s


@dataclass(frozen=True)
class RunCurves:
    """The curves of one run directory."""

    run_dir: Path
    name: str  # exp_name's last path component
    config_key: str  # resolved config without seed and exp_name, canonical JSON
    reward: Curve  # eval reward_mean
    learner_step: Curve  # eval train_iter: the evaluated weights' learner steps (NaN: absent)
    owed: Curve  # eval owed_learner_steps (NaN where a line has none: sync's, until 2026-12-04)
    envstep_per_s: Curve  # from collect lines
    learner_steps_per_s: Curve  # from collect lines


@dataclass(frozen=True)
class RunGroup:
    """Runs of one config that differ only by seed."""

    label: str
    runs: list[RunCurves]


@dataclass(frozen=True)
class Band:
    """Median and min–max over a group's runs on a common grid of G points."""

    x: np.ndarray  # [G]
    median: np.ndarray  # [G]
    low: np.ndarray  # [G]
    high: np.ndarray  # [G]


def read_run(run_dir: Path) -> RunCurves:
    """Read a run directory's metrics and config.

    Raises:
        InputError: not a directory, no log/metrics.jsonl, an unreadable line, or no eval line.
    """
    metrics = run_dir / "log" / "metrics.jsonl"
    if not run_dir.is_dir():
        raise InputError(f"{run_dir} is not a run directory (pass <exp_name> of a run)")
    if not metrics.is_file():
        raise InputError(f"{run_dir} has no log/metrics.jsonl (is it a run's exp_name directory?)")
    evals, collects = _events(metrics)
    if not evals:
        raise InputError(f"{metrics} has no eval line yet: nothing to plot for {run_dir}")
    config_key, name = _config_identity(run_dir)
    return RunCurves(
        run_dir=run_dir,
        name=name,
        config_key=config_key,
        reward=_curve(evals, "reward_mean"),
        learner_step=_curve(evals, "train_iter", missing=np.nan),
        owed=_curve(evals, "owed_learner_steps", missing=np.nan),
        envstep_per_s=_curve(collects, "envstep_per_s"),
        learner_steps_per_s=_curve(collects, "learner_steps_per_s"),
    )


def _events(metrics: Path) -> tuple[list[dict], list[dict]]:
    """The eval and collect records, with `time_s` made continuous across resumes."""
    evals: list[dict] = []
    collects: list[dict] = []
    offset_s = last_s = 0.0
    for number, line in enumerate(complete_lines(metrics.read_text()), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise InputError(f"{metrics}:{number} is not a JSON line") from None
        if record.get("event") == "resume":
            offset_s = last_s
        record["time_s"] = float(record.get("time_s", 0.0)) + offset_s
        last_s = record["time_s"]
        if record.get("event") == "eval" and record.get("reward_mean") is not None:
            evals.append(record)
        elif record.get("event") == "collect" and record.get("envstep_per_s") is not None:
            collects.append(record)
    return evals, collects


def complete_lines(text: str) -> list[str]:
    """The lines of a JSON-lines log that end in a newline.

    A live run may be mid-write: a concurrent read of the file is not ordered with the writer's
    `write`, so it can return the first part of a line (seen once in CI), and a killed run may
    leave one behind. That last piece without its newline is not a record yet, so it is left
    out rather than parsed.
    """
    return text.split("\n")[:-1]


def _curve(records: list[dict], field: str, missing: float = 0.0) -> Curve:
    values = [r.get(field) for r in records]
    return Curve(
        envstep=np.array([r["envstep"] for r in records], dtype=np.float64),
        time_s=np.array([r["time_s"] for r in records], dtype=np.float64),
        value=np.array([missing if v is None else v for v in values], dtype=np.float64),
    )


def _config_identity(run_dir: Path) -> tuple[str, str]:
    """(config without seed and exp_name as JSON, exp_name's last component).

    A run without a readable config.yaml is its own group.
    """
    from zeropipe.config import ConfigError, load_config

    try:
        cfg = load_config(str(run_dir / "config.yaml"), [])
    except (ConfigError, OSError) as exc:
        log.warning("%s: %s; plotted as a group of its own", run_dir, exc)
        return f"run:{run_dir.resolve()}", run_dir.resolve().name
    raw = cfg.model_dump(mode="json", exclude={"seed", "exp_name"})
    exp = Path(cfg.exp_name)
    name = exp.parent.name if _SEED_RUN.fullmatch(exp.name) else exp.name
    return json.dumps(raw, sort_keys=True), name or run_dir.resolve().name


def group_runs(runs: list[RunCurves]) -> list[RunGroup]:
    """Runs grouped by config (seed and exp_name left out), in order of first appearance."""
    by_key: dict[str, list[RunCurves]] = {}
    for run in runs:
        by_key.setdefault(run.config_key, []).append(run)
    groups = []
    seen: dict[str, int] = {}
    for members in by_key.values():
        stem = _SEED_SUFFIX.sub("", members[0].name) or members[0].name
        seen[stem] = seen.get(stem, 0) + 1
        label = stem if seen[stem] == 1 else f"{stem} #{seen[stem]}"
        seeds = f" ({len(members)} seeds)" if len(members) > 1 else ""
        groups.append(RunGroup(label=label + seeds, runs=members))
    return groups


def seed_band(curves: list[Curve], axis: XAxis) -> Band:
    """Median and min–max of curves interpolated onto a common grid.

    The grid spans the x range every curve covers (GRID_POINTS points); one curve is returned as
    its own points. Curves that share no x range are interpolated over the union of their points
    (np.interp holds each curve's end values outside its range), with a warning.
    """
    if len(curves) == 1:
        c = curves[0]
        return Band(c.x(axis), c.value, c.value, c.value)
    low_x = max(float(c.x(axis)[0]) for c in curves)
    high_x = min(float(c.x(axis)[-1]) for c in curves)
    if high_x > low_x:
        grid = np.linspace(low_x, high_x, GRID_POINTS)
    else:
        log.warning("runs share no %s range; their ends are held constant to average them", axis)
        grid = np.unique(np.concatenate([c.x(axis) for c in curves]))
    values = np.stack([np.interp(grid, c.x(axis), c.value) for c in curves])  # [R, G]
    return Band(grid, np.median(values, axis=0), values.min(axis=0), values.max(axis=0))


def draw_curves(groups: list[RunGroup], axis: XAxis):
    """A figure: eval reward_mean (left) and throughput (right) against `axis`.

    Args:
        groups: the run groups; each gets one colour, a median line and (2+ runs) a min–max band.
        axis: "envstep" or "time_s".

    Returns:
        The matplotlib Figure (Agg canvas).
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 4.8), layout="constrained")
    ax_reward, ax_env = fig.subplots(1, 2)
    ax_learner = ax_env.twinx()
    xlabel = "env steps" if axis == "envstep" else "wall time (s)"
    for index, group in enumerate(groups):
        color = f"C{index % 10}"
        band = seed_band([run.reward for run in group.runs], axis)
        ax_reward.plot(band.x, band.median, color=color, label=group.label)
        if len(group.runs) > 1:
            ax_reward.fill_between(band.x, band.low, band.high, color=color, alpha=0.25, lw=0)
        for run in group.runs:  # the evals themselves, faint, also past the common range
            curve = run.reward
            ax_reward.plot(curve.x(axis), curve.value, color=color, **_RUN_STYLE)
        _draw_throughput(group, axis, color, ax_env, ax_learner)
    ax_reward.set(xlabel=xlabel, ylabel="eval reward_mean", title="Evaluation return")
    ax_reward.legend(loc="best", fontsize="small")
    ax_reward.grid(alpha=0.3)
    ax_env.set(xlabel=xlabel, ylabel="env steps/s (solid)", title="Throughput (run average)")
    ax_learner.set_ylabel("learner steps/s (dashed)")
    ax_env.grid(alpha=0.3)
    return fig


def _draw_throughput(group: RunGroup, axis: XAxis, color: str, ax_env, ax_learner) -> None:
    """Median env steps/s (solid) and learner steps/s (dashed) of a group's runs."""
    with_collects = [run for run in group.runs if run.envstep_per_s.value.size]
    if not with_collects:
        return
    env = seed_band([run.envstep_per_s for run in with_collects], axis)
    learner = seed_band([run.learner_steps_per_s for run in with_collects], axis)
    ax_env.plot(env.x, env.median, color=color, label=group.label)
    ax_learner.plot(learner.x, learner.median, color=color, linestyle="--")


def seed_runs_of(run_dirs: list[Path]) -> list[Path]:
    """The run directories, each experiment directory of `train --seeds` (no log of its own,
    `seed_S` runs inside) replaced by its runs in seed order."""
    runs = []
    for path in run_dirs:
        inside = [] if (path / "log").is_dir() else _seed_dirs(path)
        runs.extend(inside or [path])
    return runs


def _seed_dirs(path: Path) -> list[Path]:
    if not path.is_dir():
        return []
    found = [(m, p) for p in path.iterdir() if (m := _SEED_RUN.fullmatch(p.name)) and p.is_dir()]
    return [p for m, p in sorted(found, key=lambda item: int(item[0].group(1)))]


def default_output(run_dirs: list[Path]) -> Path:
    """Where `plot` writes without `-o`: curves.png inside the run directory for one run, in the
    runs' common parent directory for several (the current directory when they have none).

    Raises:
        InputError: no run directory.
    """
    if not run_dirs:
        raise InputError("no run directory given: pass one or more <exp_name> directories")
    if len(run_dirs) == 1:
        return run_dirs[0] / "curves.png"
    try:
        parent = Path(os.path.commonpath([path.resolve().parent for path in run_dirs]))
    except ValueError:  # no common path
        parent = Path()
    return parent / "curves.png"


def plot_runs(run_dirs: list[Path], output: Path, axis: XAxis = "envstep"):
    """Read, group and draw runs, and write the figure as a PNG.

    Args:
        run_dirs: run directories (`exp_name` of each run).
        output: the PNG to write; its parent directory is created.
        axis: "envstep" or "time_s".

    Returns:
        The Figure that was written.

    Raises:
        InputError: no run directory, or one that cannot be read (see `read_run`).
    """
    if not run_dirs:
        raise InputError("no run directory given: pass one or more <exp_name> directories")
    groups = group_runs([read_run(path) for path in seed_runs_of(run_dirs)])
    fig = draw_curves(groups, axis)
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=100)
    return fig
