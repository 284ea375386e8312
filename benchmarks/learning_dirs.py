"""Which runs `python -m benchmarks learning` trains, and which run directories `--judge-only
DIR [DIR ...]` judges.

Runs in: the benchmark's process. A DIR is either of two layouts, and one invocation may mix them:
- what a learning invocation left: a run directory per config, pipeline and seed, named
  `<config stem>_<sync|async>_seed<N>`, its config under configs/;
- what `zeropipe train CONFIG --seeds S ...` made: `seed_<N>` directories, each holding the
  `config.yaml` it ran. Its runs are grouped by that config less `exp_name`, `seed` and the async
  pipeline's section, so a sync and an async `--seeds` directory of one config give one pair of
  rows, named after the first of them; each run's pipeline is its own config's, and the group's
  threshold its `env.stop_value` (unless `--threshold` gives one).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIGS = ("configs/cartpole_muzero_475.yaml", "configs/acrobot_muzero.yaml")
RUN_DIR_NAME = re.compile(r"^(?P<stem>.+)_(?P<pipeline>sync|async)_seed(?P<seed>\d+)$")
SEED_DIR_NAME = re.compile(r"^seed_(?P<seed>\d+)$")


@dataclass(frozen=True)
class RunSpec:
    """One training run of the benchmark (`config`: a config file, or the name of a group of
    `--seeds` runs)."""

    config: str
    pipeline: str  # sync | async
    seed: int
    run_dir: Path


def fill_defaults(args: argparse.Namespace) -> None:
    """--configs, --seeds and --pipelines left out: with --judge-only, what the directories'
    learning runs are (`<config stem>_<pipeline>_seed<seed>`); else the defaults. With
    --judge-only over `--seeds` directories alone they stay empty."""
    found = []
    if args.judge_only is not None:
        found = _learning_runs_in(args.judge_only)
    if args.configs is None:
        stems = sorted({m["stem"] for m in found})
        args.configs = [f"configs/{s}.yaml" for s in stems]
        if not args.configs and args.judge_only is None:
            args.configs = list(DEFAULT_CONFIGS)
    if args.seeds is None:
        args.seeds = sorted({int(m["seed"]) for m in found}) or [0, 1, 2]
    if args.pipelines is None:
        held = {m["pipeline"] for m in found}
        args.pipelines = [p for p in ("sync", "async") if p in held] or ["sync"]


def learning_specs(args: argparse.Namespace, out: Path) -> list[RunSpec]:
    """Every (config, seed, pipeline) of `args`, in `out` (the first judged directory that
    holds its run, with --judge-only). The pipelines alternate seed by seed: a drift in the
    machine's speed hits both."""
    dirs = args.judge_only or [out]
    specs = []
    for config in args.configs:
        for seed in args.seeds:
            for pipeline in args.pipelines:
                name = f"{Path(config).stem}_{pipeline}_seed{seed}"
                where = next((d for d in dirs if (d / name).is_dir()), dirs[0])
                specs.append(RunSpec(config, pipeline, seed, where / name))
    return specs


def seeds_specs(
    dirs: list[Path], threshold: float | None
) -> tuple[list[RunSpec], dict[str, float]]:
    """The runs of the `--seeds` directories among `dirs`, and each group's threshold."""
    specs: list[RunSpec] = []
    thresholds: dict[str, float] = {}
    names: dict[str, str] = {}  # a config, as compared -> its group's name
    for directory in dirs:
        for seed, run, raw in _seed_runs(directory):
            key = json.dumps(_comparable(raw), sort_keys=True, default=str)
            if key not in names:
                names[key] = _unused(directory.name, set(names.values()))
            name = names[key]
            enabled = raw.get("policy", {}).get("async_pipeline", {}).get("enabled", False)
            specs.append(RunSpec(name, "async" if enabled else "sync", seed, run))
            given = threshold if threshold is not None else raw.get("env", {}).get("stop_value")
            thresholds[name] = math.inf if given is None else float(given)
    return specs, thresholds


def check_judged(dirs: list[Path], specs: list[RunSpec]) -> None:
    """Exit with one line when a judged directory is missing or holds no run of either
    layout (rather than a table of nothing, or of the default configs)."""
    for directory in dirs:
        if not directory.is_dir():
            raise SystemExit(f"--judge-only {directory}: not a directory")
    if not specs:
        raise SystemExit(
            f"--judge-only {' '.join(map(str, dirs))}: no run directory named <config stem>_"
            "<sync|async>_seed<N> for a config under configs/ (a learning run's out/<date> "
            "directory holds them), nor seed_<N> with its config.yaml (zeropipe train --seeds)"
        )


def _learning_runs_in(dirs: list[Path]) -> list[re.Match[str]]:
    """The names of the learning-layout run directories in `dirs` whose config is under
    configs/."""
    found = []
    for directory in dirs:
        if directory.is_dir():
            names = (RUN_DIR_NAME.match(p.name) for p in directory.iterdir() if p.is_dir())
            found += [m for m in names if m and (ROOT / "configs" / f"{m['stem']}.yaml").is_file()]
    return found


def _seed_runs(directory: Path) -> list[tuple[int, Path, dict]]:
    """(seed, run directory, its config) of each `seed_<N>` run in `directory`."""
    if not directory.is_dir():
        return []
    runs = []
    for path in sorted(directory.iterdir()):
        match = SEED_DIR_NAME.match(path.name)
        if match and (path / "config.yaml").is_file():
            raw = yaml.safe_load((path / "config.yaml").read_text()) or {}
            runs.append((int(match["seed"]), path, raw))
    return runs


def _comparable(raw: dict) -> dict:
    """A run's config less what differs between the runs of one config's seeds and pipelines."""
    raw = copy.deepcopy(raw)
    raw.pop("exp_name", None)
    raw.pop("seed", None)
    raw.get("policy", {}).pop("async_pipeline", None)
    return raw


def _unused(name: str, taken: set[str]) -> str:
    """`name`, or `name_2`, `name_3`, ... where another group has it."""
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}_{n}"
    return candidate
