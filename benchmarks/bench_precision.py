"""`python -m benchmarks precision`: the learner's steps/s on Pong under each precision and
inference setting, side by side on one buffer, rounds interleaved.

Runs in: its own process. The buffer is filled by the real collector (2 simulations, to fill
fast); then each variant's `Trainer.step()` (sample, targets with the target network, unroll,
backward, optimizer) is timed in turn, `--rounds` times `--steps` steps, and the medians are
printed as ratios to the first variant. The default variants: `float32, eager` (the learner as it
was before issue 26: no autocast, the bootstrap values module by module), and the defaults
(`learner_autocast: auto`, `actor_inference: frozen`).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch

from benchmarks.learner_timing import time_learners

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {
    "float32, eager": ["policy.learner_autocast=none", "policy.actor_inference=eager"],
    "defaults": [],
}


def bench_precision(config: str, rounds: int, steps: int, threads: int) -> dict[str, list[float]]:
    """Learner steps/s per variant and round on one buffer."""
    torch.set_num_threads(threads)
    return time_learners(str(ROOT / config), VARIANTS, rounds, steps)


def main(argv: list[str] | None = None) -> None:
    """Print each config's table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks precision")
    parser.add_argument(
        "--configs", nargs="+", default=["configs/pong_muzero.yaml", "configs/pong_unizero.yaml"]
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=8, help="learner steps per variant a round")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args(argv)
    for config in args.configs:
        rates = bench_precision(config, args.rounds, args.steps, args.threads)
        first = statistics.median(next(iter(rates.values())))
        print(f"{config}, {args.threads} torch threads, learner steps/s per round:")
        for name, values in rates.items():
            median = statistics.median(values)
            listed = ", ".join(f"{v:.2f}" for v in values)
            print(f"  {name}: {listed} (median {median:.2f}, {median / first:.2f}x)")
