"""zeropipe's search over a config's MuZero network, timed on request: the zeropipe side of
`python -m benchmarks search-vs-lightzero`.

Runs in: its own process, started by that benchmark (`python -m benchmarks.zeropipe_search_child`
from the repository root). It builds the config's network (random init, eval mode) and its actor
search with the config's `actor_inference`, and each search is what the collector does for B
envs (workers/collector.py): the roots' inference, then a collect-mode search (root noise,
temperature 1) of the config's simulations from fixed random frames with every action legal.

Protocol (one JSON object per line, the same as the LightZero side's): `{"ready": {...}}` once
built and warm (the warm-up traces and freezes the step); then per request
`{"batch": B, "searches": N}` on stdin the answer `{"ms": ms per search, "start": t0, "end": t1}`
(CLOCK_MONOTONIC seconds), and per `{"split": [B, ...]}` the answer `{"us_per_simulation":
{B: {part: µs}}}` (benchmarks/search_timing.py's split, which builds its own eval search),
until stdin closes. Anything else printed goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np
import torch

from benchmarks import search_timing
from zeropipe.algos.network_search import root_inference
from zeropipe.algos.registry import actor_search, build_network
from zeropipe.config import load_config
from zeropipe.envs import env_spec
from zeropipe.mcts import ActingParams

WARMUP_SEARCHES = 3
COLLECT = ActingParams("collect", temperature=1.0, epsilon=0.0)


class CollectSearch:
    """The config's actor search on fixed random frames, per batch size, as a collector runs it."""

    def __init__(self, config: str, simulations: int, batches: list[int], seed: int) -> None:
        torch.manual_seed(seed)
        cfg = load_config(config)
        cfg.policy.num_simulations = simulations
        spec = env_spec(cfg.env)
        network = build_network(cfg, spec)
        self.search, self.roots = actor_search(
            cfg.policy, network, len(spec.frame_shape), max(batches), "cpu"
        )
        self.cfg, self.config = cfg, config
        self.search_cfg = cfg.policy.search_config(simulations)
        self.rng = np.random.default_rng(seed + 1)
        frame_rng = np.random.default_rng(seed)
        shape = (spec.frame_stack, *spec.frame_shape)
        self.frames = {
            b: frame_rng.normal(size=(b, *shape)).astype(spec.frame_dtype) for b in batches
        }
        self.masks = {b: np.ones((b, spec.action_space_size), dtype=bool) for b in batches}
        self.prev_actions = {b: np.full(b, -1, dtype=np.int64) for b in batches}

    def info(self) -> dict:
        """What was built, for the results file."""
        network = self.search.network
        return {
            "side": "zeropipe",
            "config": self.config,
            "actor_inference": self.cfg.policy.actor_inference,
            "torch": torch.__version__,
            "numpy": np.__version__,
            "threads": torch.get_num_threads(),
            "simulations": self.search_cfg.num_simulations,
            "model": self.cfg.policy.model.model_dump(),
            "parameters": sum(p.numel() for p in network.parameters()),
        }

    def run(self, batch: int) -> np.ndarray:
        """One collect search at `batch`: the roots' inference, then the search; the actions."""
        frames = self.frames[batch]
        root = root_inference(self.search, self.roots, frames, self.prev_actions[batch])
        result = self.search.search_from(
            root, self.masks[batch], self.search_cfg, self.rng, COLLECT
        )
        return result.output.action


def answer(search: CollectSearch, request: dict) -> dict:
    """The answer to one request (timing or split)."""
    if "split" in request:
        batches = tuple(int(b) for b in request["split"])
        parts = search_timing.split("default", search.config, batches)
        return {"us_per_simulation": {str(b): p for b, p in parts.items()}}
    batch, searches = int(request["batch"]), int(request["searches"])
    start = time.monotonic()
    for _ in range(searches):
        search.run(batch)
    end = time.monotonic()
    return {"ms": 1000 * (end - start) / searches, "start": start, "end": end}


def main() -> int:
    """Build, warm up, say ready, answer requests until stdin closes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=search_timing.CARTPOLE)
    parser.add_argument("--batches", default="3,8,64")
    parser.add_argument("--simulations", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stray prints go to stderr, never into the answers
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    batches = [int(b) for b in args.batches.split(",")]
    search = CollectSearch(args.config, args.simulations, batches, args.seed)
    for batch in batches:
        for _ in range(WARMUP_SEARCHES):
            search.run(batch)
    channel.write(json.dumps({"ready": search.info()}) + "\n")
    for line in sys.stdin:
        channel.write(json.dumps(answer(search, json.loads(line))) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
