"""`python -m benchmarks neighbours`: the main job alone, beside a busy process, and two at once.

Each case runs the real CLI (`zeropipe train CONFIG [--async-pipeline]`) in a subprocess, as a
user would, with this process's environment as it is (the header says whether OMP_NUM_THREADS is
set). Cases, per pipeline:
- alone: one training run;
- beside busy: the same run while one other process spins a core (a Python busy loop, started
  before the run and killed after it);
- two at once: two runs of the same command started together (each in its own run directory).
Printed: wall seconds of each run (start to exit), the env step it stopped at, and the ratio to
the pipeline's `alone` case, measured in one sitting so that the ratios compare like with like.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUSY_LOOP = "while True:\n    pass\n"
CASES = ("alone", "beside busy", "two at once")


def _command(
    config: str, pipeline: str, run_dir: Path, seed: int, envsteps: int | None
) -> list[str]:
    flag = ["--async-pipeline"] if pipeline == "async" else []
    sets = ["--set", f"exp_name={run_dir}", "--set", f"seed={seed}"]
    if envsteps is not None:  # the same work in every case: no stop value, a fixed budget
        sets += ["--set", "env.stop_value=1e9", "--set", f"max_env_step={envsteps}"]
    return [sys.executable, "-m", "zeropipe", "train", config, *flag, *sets, "--quiet"]


def _stop_envstep(run_dir: Path) -> int | None:
    lines = (run_dir / "log" / "metrics.jsonl").read_text().splitlines()
    stops = [e for e in map(json.loads, lines) if e["event"] == "stop"]
    return stops[-1]["envstep"] if stops else None


def _run_together(commands: list[list[str]], logs: list[Path]) -> list[float]:
    """Start every command at once (stderr to `logs`); the wall seconds of each, start to exit."""
    start = time.perf_counter()
    procs = []
    for command, log in zip(commands, logs, strict=True):
        with log.open("w") as err:
            procs.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err))
    walls = [0.0] * len(procs)
    pending = dict(enumerate(procs))
    while pending:
        for i, proc in list(pending.items()):
            try:
                proc.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                continue
            walls[i] = time.perf_counter() - start
            del pending[i]
            if proc.returncode != 0:
                err = logs[i].read_text()[-1500:]
                raise SystemExit(f"{' '.join(commands[i])} failed:\n{err}")
    return walls


def measure(
    config: str, pipeline: str, case: str, seed: int, tmp: Path, envsteps: int | None = None
) -> list[tuple[float, int]]:
    """(wall s, stop env step) of each run of one case."""
    count = 2 if case == "two at once" else 1
    dirs = [tmp / f"{pipeline}_{case.replace(' ', '_')}_{i}" for i in range(count)]
    busy = None
    if case == "beside busy":
        busy = subprocess.Popen([sys.executable, "-c", BUSY_LOOP])
    try:
        commands = [_command(config, pipeline, d, seed, envsteps) for d in dirs]
        walls = _run_together(commands, [d.with_suffix(".stderr") for d in dirs])
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    return [(w, _stop_envstep(d) or -1) for w, d in zip(walls, dirs, strict=True)]


def main(argv: list[str]) -> None:
    """Run the cases and print the table (markdown)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks neighbours")
    parser.add_argument("--config", default="configs/cartpole_muzero.yaml")
    parser.add_argument("--pipelines", nargs="+", default=["sync", "async"])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--envsteps",
        type=int,
        help="run every case to this many env steps with the stop value lifted (async runs "
        "reach the stop value after very different numbers of env steps, which the time then "
        "measures instead of the speed)",
    )
    args = parser.parse_args(argv)
    omp = os.environ.get("OMP_NUM_THREADS", "unset")
    budget = f", {args.envsteps} env steps each" if args.envsteps else ", to the stop value"
    print(f"config {args.config}{budget}, seed {args.seed}, OMP_NUM_THREADS {omp}")
    print("| pipeline | case | wall s | stop env step | × alone |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="zeropipe-neighbours-") as tmp:
        for pipeline in args.pipelines:
            alone = None
            for case in args.cases:
                runs = measure(args.config, pipeline, case, args.seed, Path(tmp), args.envsteps)
                for wall, envstep in runs:
                    alone = wall if case == "alone" and alone is None else alone
                    ratio = f"{wall / alone:.2f}" if alone else "-"
                    print(f"| {pipeline} | {case} | {wall:.1f} | {envstep} | {ratio} |", flush=True)
