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

from zeropipe.config import load_config
from zeropipe.pipeline.build import build_collector, build_driver
from zeropipe.pipeline.training import Trainer

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


def main() -> None:
    """Print the learner figure."""
    row = bench_learner()
    print(
        f"learner {row['config']} batch {row['batch_size']}: {row['steps_per_s']:.1f} steps/s "
        f"({row['ms_per_step']:.1f} ms/step; LightZero 0.2.0: 3.4 steps/s → "
        f"{row['steps_per_s'] / 3.4:.1f}×)"
    )


if __name__ == "__main__":
    main()
