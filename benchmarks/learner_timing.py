"""Learner steps/s of a config, variants interleaved on one buffer: a standalone script that runs
against whichever zeropipe is importable (see search_timing.py), so that two commits can be timed
against each other.

    cd <a checkout> && PYTHONPATH=src python <this repo>/benchmarks/learner_timing.py \\
        CONFIG ROUNDS STEPS NAME=OVERRIDE,OVERRIDE ...

The real collector (2 simulations) fills a buffer past 2,500 transitions; each variant (NAME with
its comma-separated `--set` overrides; `default=` for none) builds its own learner on that buffer,
takes 3 warm-up steps, then STEPS timed steps per round, ROUNDS rounds in turn. THREADS (an
environment variable, default 2) sets torch's threads. It prints each round and the medians.

    PYTHONPATH=src python <this repo>/benchmarks/learner_timing.py --serve CONFIG

builds one learner with the checkout's defaults the same way, prints `ready`, then for each line N
read from stdin runs N steps and prints their steps/s: `benchmarks/learner_ab.py` drives two such
processes, one per checkout, in alternating rounds.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import warnings

import torch

from zeropipe.config import load_config
from zeropipe.learner.trainer import Trainer
from zeropipe.pipeline.build import build_collector, build_driver


def time_learners(
    config: str, variants: dict[str, list[str]], rounds: int, steps: int, report=None
) -> dict[str, list[float]]:
    """Learner steps/s per variant (name: `--set` overrides) and round, on one filled buffer;
    `report(rates)` after each round."""
    trainers = _trainers(config, variants)
    rates: dict[str, list[float]] = {name: [] for name in trainers}
    for _ in range(rounds):
        for name, trainer in trainers.items():
            rates[name].append(_rate(trainer, steps))
        if report is not None:
            report(rates)
    return rates


def _trainers(config: str, variants: dict[str, list[str]]) -> dict[str, Trainer]:
    """One warmed-up trainer per variant, all on one buffer the real collector filled."""
    fill = build_driver(load_config(config))
    collector = build_collector(load_config(config, ["policy.num_simulations=2"]))
    try:
        while fill.buffer.num_transitions <= 2500:
            fill.buffer.push(collector.collect(temperature=1.0, epsilon=0.0).segments)
    finally:
        collector.close()
    trainers = {}
    for name, overrides in variants.items():
        cfg = load_config(config, overrides)
        trainer = Trainer(build_driver(cfg).learner, fill.buffer, cfg.policy)
        trainer.add_budget(10**9, envstep=10**9)
        for _ in range(3):  # warm-up: traces, freezes
            trainer.step()
        trainers[name] = trainer
    return trainers


def _rate(trainer: Trainer, steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        trainer.step()
    return steps / (time.perf_counter() - start)


def serve(config: str) -> None:
    """Print `ready`, then the steps/s of N steps for each line N on stdin, until it closes."""
    trainer = _trainers(config, {"default": []})["default"]
    print("ready", flush=True)
    for line in sys.stdin:
        print(f"{_rate(trainer, int(line)):.4f}", flush=True)


def main(config: str, rounds: int, steps: int, variants: list[str]) -> None:
    """Print steps/s per variant and round, then the medians."""
    named = {}
    for variant in variants:
        name, _, sets = variant.partition("=")
        named[name] = [s for s in sets.split(",") if s]

    def report(rates: dict[str, list[float]]) -> None:
        print(" ".join(f"{n} {v[-1]:.2f}" for n, v in rates.items()), flush=True)

    rates = time_learners(config, named, rounds, steps, report)
    medians = {name: statistics.median(values) for name, values in rates.items()}
    print("median steps/s: " + ", ".join(f"{n} {m:.2f}" for n, m in medians.items()))


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    if sys.argv[1] == "--serve":
        serve(sys.argv[2])
    else:
        main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
