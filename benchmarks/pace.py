"""`python -m benchmarks pace`: wall seconds and rates of a fixed budget, sync against async.

Runs in: its own process; each run is the real CLI in a subprocess, one at a time (wall-clock
figures mean something only on a quiet machine, one run at a time). Every run trains its
config to `--envsteps` env steps with the stop value out of reach, so the pipelines do the same
work (the same replay ratio: the same learner steps per env step), and a lever's effect on time
is not mixed with where a seed happens to pass its threshold. Per (config, variant, pipeline):
median process wall seconds, env steps and learner steps per second of the run, the learner's
busy fraction and the seconds per phase from the `stop` line (outputs/phases.py), and the
perfect-overlap bound of the sync runs (their wall less the shorter side of max(train + driver,
collect + eval)). A `--variant NAME:K=V,K=V` adds runs with those settings (async ones only
when every key is under policy.async_pipeline). Writes the rows as JSON with the machine
header (`--json`).

Env steps to a threshold (the learning benchmark, whose runs may share the cores) divided by
the env steps per second measured here gives a wall time to the goal where one-at-a-time
learning runs cost too much.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.machine import describe_run
from benchmarks.overrides import for_pipeline, recorded_command
from zeropipe.outputs.phases import PHASES, PhaseClock

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Row:
    """One (config, variant, pipeline) over its seeds."""

    config: str
    variant: str
    pipeline: str
    wall_s: list[float] = field(default_factory=list)
    envstep_per_s: list[float] = field(default_factory=list)
    learner_steps_per_s: list[float] = field(default_factory=list)
    learner_busy_fraction: list[float] = field(default_factory=list)
    overlap_bound_s: list[float] = field(default_factory=list)
    phase_s: dict[str, list[float]] = field(default_factory=dict)


def _variant(text: str) -> tuple[str, list[str]]:
    name, _, settings = text.partition(":")
    if not name or not settings:
        raise argparse.ArgumentTypeError(f"--variant {text!r}: expected NAME:K=V[,K=V...]")
    return name, settings.split(",")


def run_once(config: str, pipeline: str, seed: int, settings: list[str], envsteps: int) -> dict:
    """One run to `envsteps` env steps: its wall seconds and its `stop` line."""
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "zeropipe", "train", str(ROOT / config), "--quiet"]
        cmd += ["--set", f"seed={seed}", "--set", f"exp_name={run_dir}"]
        cmd += ["--set", f"max_env_step={envsteps}", "--set", "env.stop_value=1e9"]
        cmd += ["--async-pipeline"] if pipeline == "async" else []
        for item in for_pipeline(settings, pipeline):
            cmd += ["--set", item]
        start = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        wall = time.monotonic() - start
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
        lines = (run_dir / "log" / "metrics.jsonl").read_text().splitlines()
    stop = json.loads(next(x for x in reversed(lines) if x.startswith('{"event": "stop"')))
    return {"wall_s": wall, "stop": stop}


def add_run(row: Row, result: dict) -> None:
    """Fold one run's figures into its row."""
    stop, wall = result["stop"], result["wall_s"]
    row.wall_s.append(round(wall, 2))
    row.envstep_per_s.append(round(stop["envstep"] / wall, 2))
    row.learner_steps_per_s.append(round(stop["train_iter"] / wall, 2))
    row.learner_busy_fraction.append(stop["learner_busy_fraction"])
    for p in PHASES:
        row.phase_s.setdefault(p, []).append(stop[f"{p}_s_total"])
    if row.pipeline == "sync":
        row.overlap_bound_s.append(round(PhaseClock.wall_bound_s(wall, stop), 2))


def format_rows(rows: list[Row]) -> str:
    """A Markdown table: medians over seeds, async's wall over its sync row's and bound."""
    lines = [
        "| config | variant | pipeline | wall s | env steps/s | learner steps/s | learner busy "
        "| overlap bound s | wall / sync wall | wall / bound | collect / train / driver / eval "
        "/ wait s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        sync = next(r for r in rows if r.config == row.config and r.pipeline == "sync")
        wall = statistics.median(row.wall_s)
        bound = statistics.median(sync.overlap_bound_s) if sync.overlap_bound_s else None
        phases = " / ".join(f"{statistics.median(row.phase_s[p]):.1f}" for p in PHASES)
        lines.append(
            f"| {Path(row.config).stem} | {row.variant} | {row.pipeline} | {wall:.1f} "
            f"| {statistics.median(row.envstep_per_s):.1f} "
            f"| {statistics.median(row.learner_steps_per_s):.2f} "
            f"| {statistics.median(row.learner_busy_fraction):.2f} "
            f"| {'-' if not row.overlap_bound_s else f'{bound:.1f}'} "
            f"| {wall / statistics.median(sync.wall_s):.2f} "
            f"| {'-' if bound is None else f'{wall / bound:.2f}'} | {phases} |"
        )
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks pace", description=__doc__)
    parser.add_argument("--configs", nargs="+", default=["configs/cartpole_muzero.yaml"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--pipelines", nargs="+", choices=("sync", "async"))
    parser.add_argument("--envsteps", type=int, default=3000, help="env steps per run")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="K=V")
    parser.add_argument("--variant", type=_variant, action="append", default=[])
    parser.add_argument("--json", type=Path, help="write the header and rows here")
    return parser


def main(argv: list[str] | None = None) -> None:
    """Run every (config, variant, pipeline, seed) one at a time; print and write the rows."""
    args = _parser().parse_args(argv)
    header = describe_run({"pace": args.configs})  # at the start: the commit that ran
    pipelines = args.pipelines or ["sync", "async"]
    variants = [("shipped", []), *args.variant]
    rows = []
    for config in args.configs:
        for name, settings in variants:
            only_async = settings and all(s.startswith("policy.async_pipeline.") for s in settings)
            for pipeline in pipelines:
                if only_async and pipeline == "sync":
                    continue
                row = Row(config, name, pipeline)
                for seed in args.seeds:
                    result = run_once(
                        config, pipeline, seed, args.overrides + settings, args.envsteps
                    )
                    add_run(row, result)
                    print(
                        f"{Path(config).stem} {name} {pipeline} seed {seed}: "
                        f"{result['wall_s']:.1f}s",
                        flush=True,
                    )
                rows.append(row)
    print(format_rows(rows))
    if args.json is not None:
        header["command"] = recorded_command("pace", argv or sys.argv[2:])
        header["date"] = time.strftime("%Y-%m-%d")
        args.json.write_text(json.dumps({**header, "rows": [asdict(r) for r in rows]}, indent=2))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
