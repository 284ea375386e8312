"""2048 benchmark: env steps/s through the real `EnvBatch`, and the random legal-move baseline.

Runs in: driver (one process). `python -m benchmarks.bench_env2048 [--games 300] [--seed 0]`.

The steps/s figure is what a collector's env stepping costs (8 envs, uniformly random legal
actions, auto-resets included); the baseline is the mean ± std final score of a uniformly random
legal-move policy over `--games` games, the bar a 2048 agent is compared against.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from zeropipe.config import EnvConfig
from zeropipe.envs import GAME_2048_ENV_ID, EnvBatch, random_policy_scores


def batch_steps_per_s(num_envs: int = 8, num_batch_steps: int = 2_000, seed: int = 0) -> float:
    """Env steps per second of an `EnvBatch` of 2048 envs under random legal actions.

    Args:
        num_envs: Envs in the batch.
        num_batch_steps: `EnvBatch.step` calls timed (each steps every env once).
        seed: Seeds the envs and the actions.

    Returns:
        num_envs · num_batch_steps / wall seconds (action choice included).
    """
    rng = np.random.default_rng(seed)
    with EnvBatch(EnvConfig(env_id=GAME_2048_ENV_ID), num_envs, "collect", seed) as batch:
        _, masks = batch.reset()
        start = time.perf_counter()
        for _ in range(num_batch_steps):
            # Random legal actions: argmax of uniform noise restricted to the mask.
            actions = np.argmax(np.where(masks, rng.random(masks.shape), -1.0), axis=1)
            step = batch.step(actions)
            masks = step.action_masks.copy()
            for index, mask in step.reset_action_masks.items():
                masks[index] = mask
        elapsed = time.perf_counter() - start
    return num_envs * num_batch_steps / elapsed


def main(games: int = 300, seed: int = 0) -> None:
    """Print the EnvBatch throughput and the random baseline."""
    rate = batch_steps_per_s(seed=seed)
    print(f"EnvBatch(8 x {GAME_2048_ENV_ID}) random legal actions: {rate:,.0f} env steps/s")
    start = time.perf_counter()
    scores = random_policy_scores(games, seed)
    elapsed = time.perf_counter() - start
    print(
        f"random legal-move baseline, {games} games, seed {seed}: "
        f"score mean {scores.mean():,.1f} std {scores.std():,.1f} "
        f"(min {scores.min():,} max {scores.max():,}; {elapsed:.1f} s)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_env2048")
    parser.add_argument("--games", type=int, default=300, help="random games for the baseline")
    parser.add_argument("--seed", type=int, default=0, help="seed of the envs and the moves")
    args = parser.parse_args()
    main(args.games, args.seed)
