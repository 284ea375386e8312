"""`python -m benchmarks search-networks --before CHECKOUT`: ms per search of several configs'
networks in two checkouts of zeropipe, alternating, in one sitting.

Runs in: its own process, which only schedules. Each measurement is
`benchmarks/search_timing.py` (this repository's script) in a subprocess whose working directory
is the checkout and whose `PYTHONPATH` is the checkout's `src`, so each side loads its own code
and its own copy of each config, with the config's shipped `actor_inference`: mean ms of an eval
search of the config's simulations at each B, one torch thread, untrained network. Per config
and round the two sides run one after the other, the side that goes first alternating by round;
each side's figure is the median over the rounds. The current side adds its per-simulation split
(search_timing.py --split, a separate run). A config whose env is not installed in the
environment is reported and left out. Writes the machine header, the command, both sides' code
and every figure to `--out` as JSON; `python -m benchmarks render` puts the table on the
wall-clock page.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.machine import ROOT, describe_run, format_header, git_commit
from benchmarks.overrides import recorded_command

NAME = "search-networks"
SCRIPT = ROOT / "benchmarks" / "search_timing.py"
CONFIGS = (
    "configs/cartpole_muzero.yaml",
    "configs/pong_muzero.yaml",
    "configs/minatar_breakout_muzero.yaml",
    "configs/minatar_space_invaders_muzero.yaml",
)
TIMEOUT_S = 900.0


def timing(checkout: Path, config: str, batches: str, split: bool = False) -> dict | None:
    """search_timing.py's JSON for `config` in `checkout`, or None where it cannot run there."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "timing.json"
        argv = [sys.executable, str(SCRIPT), "--config", config, "--batches", batches]
        argv += ["--json", str(out), *(["--split"] if split else [])]
        env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
        done = subprocess.run(
            argv, cwd=checkout, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
        )
        if done.returncode != 0 or not out.is_file():
            print(f"{checkout}: {config}: {done.stdout.strip()[-300:] or done.stderr[-300:]}")
            return None
        return json.loads(out.read_text())


def measure(before: Path, config: str, batches: str, rounds: int) -> dict | None:
    """One config's row: both sides' ms per search per round and B, the medians, their ratio,
    and the current side's split; None where a side cannot run it."""
    sides = {"before": before, "current": ROOT}
    runs: dict[str, list[dict]] = {"before": [], "current": []}
    for r in range(rounds):
        for side in ("before", "current") if r % 2 == 0 else ("current", "before"):
            result = timing(sides[side], config, batches)
            if result is None:
                return None
            runs[side].append(result["ms_per_search"])
    split = timing(ROOT, config, batches, split=True)
    row: dict = {"config": config, "rows": []}
    for batch in batches.split(","):
        per_round = {side: [run[batch] for run in runs[side]] for side in sides}
        medians = {side: statistics.median(values) for side, values in per_round.items()}
        row["rows"].append(
            {
                "batch": int(batch),
                "before_ms_per_round": per_round["before"],
                "current_ms_per_round": per_round["current"],
                "before_ms": medians["before"],
                "current_ms": medians["current"],
                "current_over_before": medians["current"] / medians["before"],
            }
        )
    row["current_us_per_simulation"] = (split or {}).get("us_per_simulation")
    row["current_actor_inference"] = (split or {}).get("mode")
    return row


def format_table(rows: list[dict]) -> str:
    """A Markdown table: per config and B, both sides' ms per search and their ratio."""
    lines = [
        "| config | B | before ms/search | current ms/search | current / before |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        for r in row["rows"]:
            lines.append(
                f"| {Path(row['config']).stem} | {r['batch']} | {r['before_ms']:.2f} "
                f"| {r['current_ms']:.2f} | {r['current_over_before']:.2f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    """Run the comparison; print the table and write the JSON file."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks {NAME}", description=__doc__)
    parser.add_argument("--before", type=Path, required=True, help="the other checkout's root")
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS))
    parser.add_argument("--batches", default="3,8,64", help="comma-separated batch sizes")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds per config")
    parser.add_argument("--out", type=Path, help="write the header and results here as JSON")
    args = parser.parse_args(argv)
    result = describe_run({NAME: list(args.configs)})
    # the other checkout's path says nothing on another machine: the command names it CHECKOUT
    shown = ["CHECKOUT" if arg == str(args.before) else arg for arg in argv]
    result["command"] = recorded_command(NAME, shown)
    result["date"] = time.strftime("%Y-%m-%d")
    before = args.before.resolve()
    result["before"] = {"checkout": before.name, "commit": git_commit(before)}
    print(format_header(result))
    rows = [measure(before, c, args.batches, args.rounds) for c in args.configs]
    result["rows"] = [row for row in rows if row is not None]
    result["settings"] = {"batches": args.batches, "rounds": args.rounds, "threads": 1}
    print(format_table(result["rows"]))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
        print(f"wrote {args.out}")
    return result
