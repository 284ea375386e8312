"""Learner steps per second on a config's real model, batch and replay windows.

The buffer is filled by the real collector (an untrained policy), then `Trainer.step()` — sample,
target computation with the target network, K-step unroll, backward, optimizer — is timed.
For comparison (same 2-core machine): LightZero 0.2.0's CartPole MuZero learner makes 3.3–3.4
steps/s at batch 256 (peer_figures.md).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from zeropipe.config import load_config
from zeropipe.learner.trainer import Trainer
from zeropipe.mcts import ActingParams
from zeropipe.pipeline.build import build_collector, build_driver

ROOT = Path(__file__).resolve().parents[1]


def bench_learner(
    config: str = "configs/cartpole_muzero.yaml", batch_size: int = 256, steps: int = 60
) -> dict[str, Any]:
    """Time `steps` learner steps after a short warm-up."""
    cfg = load_config(ROOT / config, [f"policy.batch_size={batch_size}"])
    comps = build_driver(cfg)
    trainer = Trainer(comps.learner, comps.buffer, cfg.policy)
    collector = build_collector(cfg)
    try:
        while comps.buffer.num_transitions <= 4 * batch_size:
            comps.buffer.push(collector.collect(temperature=1.0, epsilon=0.0).segments)
    finally:
        collector.close()
    trainer.add_budget(steps + 5, envstep=cfg.policy.train_start_after_envsteps + 1)
    for _ in range(5):
        trainer.step()
    start = time.perf_counter()
    for _ in range(steps):
        trainer.step()
    elapsed = time.perf_counter() - start
    return {
        "config": config,
        "batch_size": batch_size,
        "steps_per_s": steps / elapsed,
        "ms_per_step": 1000 * elapsed / steps,
    }


COLLECT = ActingParams("collect")


def bench_search_latency(
    config: str,
    batch_size: int = 8,
    num_simulations: int = 50,
    repeats: int = 20,
    inference: str = "compiled",
) -> dict[str, Any]:
    """Milliseconds per batched search with the config's real (untrained) network, its step
    run as `policy.actor_inference=inference`."""
    overrides = [f"policy.num_simulations={num_simulations}", f"policy.actor_inference={inference}"]
    cfg = load_config(ROOT / config, overrides)
    collector = build_collector(cfg)
    try:
        frames = np.stack([t.stacked_obs() for t in collector.trajectories])
        frames = np.resize(frames, (batch_size, *frames.shape[1:]))
        masks = np.ones((batch_size, collector.envs.spec.action_space_size), dtype=bool)
        search, rng = collector.search, np.random.default_rng(0)
        for _ in range(2):  # warm-up: the first traces the step, the second freezes it
            search.search(frames, masks, collector.search_cfg, rng, COLLECT)
        start = time.perf_counter()
        for _ in range(repeats):
            search.search(frames, masks, collector.search_cfg, rng, COLLECT)
        elapsed = (time.perf_counter() - start) / repeats
    finally:
        collector.close()
    sims = collector.search_cfg.num_simulations
    return {"config": config, "batch_size": batch_size, "ms": 1000 * elapsed, "sims": sims}


CONFIGS = (
    "configs/cartpole_muzero.yaml",
    "configs/cartpole_unizero.yaml",
    "configs/cartpole_muzero_context.yaml",
    "configs/cartpole_muzero_rnn_full_obs.yaml",
    "configs/cartpole_efficientzero.yaml",
)


def main() -> dict[str, dict[str, dict]]:
    """Print learner steps/s and search latency for the CartPole configs; return them by config
    (`python -m benchmarks --json`)."""
    results: dict[str, dict[str, dict]] = {"learner": {}, "search_latency": {}}
    muzero_steps_per_s = None
    for config in CONFIGS:  # muzero first: every other type is printed beside it
        row = results["learner"][config] = bench_learner(config)
        muzero_steps_per_s = muzero_steps_per_s or row["steps_per_s"]
        print(
            f"learner {config} batch {row['batch_size']}: {row['steps_per_s']:.1f} steps/s "
            f"({row['ms_per_step']:.1f} ms/step; {row['steps_per_s'] / muzero_steps_per_s:.2f}× "
            f"muzero; LightZero 0.2.0 MuZero: 3.4 steps/s → {row['steps_per_s'] / 3.4:.1f}×)"
        )
    for batch_size in (3, 8, 64):  # the ways to run the step side by side, same run
        ms = {
            mode: min(
                bench_search_latency(CONFIGS[0], batch_size, inference=mode)["ms"] for _ in range(3)
            )
            for mode in ("eager", "traced", "frozen", "compiled")
        }
        modes = ", ".join(f"{mode} {value:.1f}" for mode, value in ms.items())
        print(
            f"search {CONFIGS[0]} B={batch_size}, 50 sims: {modes} ms per search (compiled: "
            f"{ms['eager'] / ms['compiled']:.2f}x eager's searches/s)"
        )
    for config in CONFIGS:
        lat = results["search_latency"][config] = bench_search_latency(config)
        print(
            f"search {config} B={lat['batch_size']}, {lat['sims']} sims, real network: "
            f"{lat['ms']:.1f} ms per search (LightZero MuZero CartPole MLP, B=8, 50 sims: 32 ms)"
        )

    return results


if __name__ == "__main__":
    main()
