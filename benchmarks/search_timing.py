"""Milliseconds per search with the real CartPole MuZero network: a standalone script that runs
against whichever zeropipe is importable, so that two commits can be timed against each other.

    cd <a checkout> && PYTHONPATH=src python <this repo>/benchmarks/search_timing.py [MODE]

It loads that checkout's `configs/cartpole_muzero.yaml` (an untrained network), sets
`policy.actor_inference` to MODE unless MODE is `default`, and prints one line: the mean
milliseconds of a 50-simulation eval search at B = 3, 8 and 64, one torch thread, after three
warm-up searches (which trace, and freeze, the step). Run it alternately per checkout, a few
rounds, and compare medians: this machine's speed drifts by tens of percent within minutes.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import torch

from zeropipe.algos.registry import actor_search, build_network
from zeropipe.config import load_config
from zeropipe.envs import env_spec
from zeropipe.mcts import ActingParams


def main(mode: str) -> list[float]:
    """Mean ms per search at B = 3, 8, 64."""
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    cfg = load_config("configs/cartpole_muzero.yaml")
    spec = env_spec(cfg.env)
    if mode != "default":
        cfg.policy.actor_inference = mode
    search = actor_search(cfg.policy, build_network(cfg, spec), 1, 64, "cpu")[0]
    search_cfg = cfg.policy.search_config(cfg.policy.num_simulations)
    out = []
    for batch in (3, 8, 64):
        frames = np.random.default_rng(1).normal(size=(batch, 1, *spec.frame_shape))
        frames = frames.astype(np.float32)
        mask = np.ones((batch, spec.action_space_size), dtype=bool)
        rng = np.random.default_rng(0)
        for _ in range(3):
            search.search(frames, mask, search_cfg, rng, ActingParams("eval"))
        repeats = max(10, 400 // batch)
        start = time.perf_counter()
        for _ in range(repeats):
            search.search(frames, mask, search_cfg, rng, ActingParams("eval"))
        out.append(1000 * (time.perf_counter() - start) / repeats)
    return out


if __name__ == "__main__":
    print(" ".join(f"{ms:.2f}" for ms in main(sys.argv[1] if len(sys.argv) > 1 else "default")))
