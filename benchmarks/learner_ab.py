"""Learner steps/s of two checkouts in alternating rounds: one warm process per checkout.

    python benchmarks/learner_ab.py A_CHECKOUT:CONFIG B_CHECKOUT:CONFIG [--rounds 20] [--steps 10]

Each side is `benchmarks/learner_timing.py --serve CONFIG` run in its checkout (`PYTHONPATH=src`),
so each times its own code and defaults on a buffer its own collector filled. When both are ready,
A and B take turns: one runs STEPS learner steps while the other waits on its stdin (no CPU). On a
shared machine whose speed drifts over minutes, separate processes run one after another measure
the drift as much as the code (Pong MuZero, one checkout, 4 processes in one sitting: 2.70-3.50
steps/s); a B/A ratio of adjacent rounds does not see it. Prints each round, each side's median
and the median of the per-round B/A ratios with their interquartile range. THREADS (default 2)
goes to both sides.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

TIMING = Path(__file__).resolve().parent / "learner_timing.py"


def _start(side: str) -> subprocess.Popen:
    checkout, _, config = side.partition(":")
    root = Path(checkout).resolve()
    env = {**os.environ, "PYTHONPATH": str(root / "src"), "THREADS": os.environ.get("THREADS", "2")}
    return subprocess.Popen(
        [sys.executable, str(TIMING), "--serve", config],
        cwd=root,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def _ready(proc: subprocess.Popen, side: str) -> None:
    for line in proc.stdout:
        if line.strip() == "ready":
            return
    raise SystemExit(f"learner_ab: {side} exited before it was ready (rc {proc.wait()})")


def _round(proc: subprocess.Popen, steps: int) -> float:
    proc.stdin.write(f"{steps}\n")
    proc.stdin.flush()
    return float(proc.stdout.readline())


def quartiles(values: list[float]) -> tuple[float, float, float]:
    """(lower quartile, median, upper quartile)."""
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", help="CHECKOUT:CONFIG of the baseline")
    parser.add_argument("b", help="CHECKOUT:CONFIG of the candidate")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args(argv)
    procs = {"A": _start(args.a), "B": _start(args.b)}
    try:
        for name, side in (("A", args.a), ("B", args.b)):
            _ready(procs[name], side)
        rates: dict[str, list[float]] = {"A": [], "B": []}
        for i in range(args.rounds):
            for name in ("A", "B") if i % 2 == 0 else ("B", "A"):  # neither always goes first
                rates[name].append(_round(procs[name], args.steps))
            print(f"round {i + 1}: A {rates['A'][-1]:.2f}  B {rates['B'][-1]:.2f}", flush=True)
    finally:
        for proc in procs.values():
            proc.stdin.close()
            proc.wait(timeout=60)
    ratios = [b / a for a, b in zip(rates["A"], rates["B"], strict=True)]
    q1, q2, q3 = quartiles(ratios)
    print(f"A {args.a}: median {statistics.median(rates['A']):.2f} steps/s")
    print(f"B {args.b}: median {statistics.median(rates['B']):.2f} steps/s")
    print(f"B/A per round: median {q2:.3f} (interquartile {q1:.3f}-{q3:.3f}, {args.rounds} rounds)")


if __name__ == "__main__":
    main()
