"""Milliseconds per search with the real CartPole MuZero network: a standalone script that runs
against whichever zeropipe is importable, so that two commits can be timed against each other.

    cd <a checkout> && PYTHONPATH=src python <this repo>/benchmarks/search_timing.py [MODE]
    ... search_timing.py [MODE] --split

It loads that checkout's `configs/cartpole_muzero.yaml` (an untrained network), sets
`policy.actor_inference` to MODE unless MODE is `default`, and prints one line: the mean
milliseconds of a 50-simulation eval search at B = 3, 8 and 64, one torch thread, after three
warm-up searches (which trace, and freeze, the step). Run it alternately per checkout, a few
rounds, and compare medians: this machine's speed drifts by tens of percent within minutes.

With --split it then prints, per B, where a search's time goes per simulation (µs): `model` (the
network's step: the traced graph, value and reward decoding included, or the eager network
calls), `decode` (eager only: support logits to scalars), `glue` (the model step's own Python:
numpy<->torch conversions, output objects), `tree` (the numba kernels and their call), `store`
(gathering the parents' latents and storing the new ones, where the checkout has a `LatentStore`;
before, that was part of `loop`) and `loop` (the rest: the search loop's Python, and once per
search the root's network call and the tree's set-up and output). Each part is timed
exclusively of the parts it calls, by wrapping them, which adds about a microsecond per wrapped
call; the total is the instrumented search's, so it runs a little above the plain figure.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Callable

import numpy as np
import torch

from zeropipe.algos.registry import actor_search, build_network
from zeropipe.config import load_config
from zeropipe.envs import env_spec
from zeropipe.mcts import ActingParams


def _cartpole_search(mode: str):
    """The CartPole MuZero config, its env spec, its actor search with `mode` inference (one
    thread, B up to 64) and its search settings."""
    torch.set_num_threads(1)
    cfg = load_config("configs/cartpole_muzero.yaml")
    spec = env_spec(cfg.env)
    if mode != "default":
        cfg.policy.actor_inference = mode
    search = actor_search(cfg.policy, build_network(cfg, spec), 1, 64, "cpu")[0]
    return cfg, spec, search, cfg.policy.search_config(cfg.policy.num_simulations)


def main(mode: str) -> list[float]:
    """Mean ms per search at B = 3, 8, 64."""
    warnings.simplefilter("ignore")
    _cfg, spec, search, search_cfg = _cartpole_search(mode)
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


class _Clock:
    """Exclusive time per label of nested wrapped calls."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._inner: list[float] = []  # per open call: time spent in wrapped calls inside it

    def wrap(self, fn: Callable, label: str) -> Callable:
        def timed(*args, **kwargs):
            self._inner.append(0.0)
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - start
                inner = self._inner.pop()
                self.seconds[label] += elapsed - inner
                if self._inner:
                    self._inner[-1] += elapsed

        return timed


def _patch(owner, name: str, clock: _Clock, label: str, undo: list) -> None:
    """Wrap `owner.name` (if it exists in this checkout) so that `clock` times it."""
    fn = getattr(owner, name, None)
    if fn is None:
        return
    undo.append((owner, name, fn))
    setattr(owner, name, clock.wrap(fn, label))


def split(mode: str) -> dict[int, dict[str, float]]:
    """µs per simulation by part (see the module docstring) at B = 3, 8, 64."""
    import zeropipe.algos.network_search as network_search
    import zeropipe.mcts.search as mcts_search
    import zeropipe.mcts.simulate as mcts_simulate
    from zeropipe.algos.graphs import FrozenGraph

    cfg, spec, search, search_cfg = _cartpole_search(mode)
    sims = cfg.policy.num_simulations
    parts: dict[int, dict[str, float]] = {}
    for batch in (3, 8, 64):
        frames = np.random.default_rng(1).normal(size=(batch, 1, *spec.frame_shape))
        frames = frames.astype(np.float32)
        mask = np.ones((batch, spec.action_space_size), dtype=bool)
        rng = np.random.default_rng(0)
        for _ in range(3):
            search.search(frames, mask, search_cfg, rng, ActingParams("eval"))
        clock, undo = _Clock(), []
        net_class = type(search.network)
        _patch(FrozenGraph, "__call__", clock, "model", undo)
        _patch(net_class, "recurrent_inference", clock, "model", undo)
        _patch(net_class, "transition_reward", clock, "model", undo)
        _patch(network_search, "_scalar", clock, "decode", undo)
        _patch(network_search.NetworkSearch, "_recurrent", clock, "glue", undo)
        kernel_call = getattr(mcts_simulate, "KernelCall", None)
        if kernel_call is not None:  # wrapping the kernel itself would defeat its entry point
            _patch(kernel_call, "__call__", clock, "tree", undo)
        else:
            _patch(mcts_search, "simulation_step", clock, "tree", undo)
        store = getattr(mcts_search, "LatentStore", None)
        if store is not None:
            _patch(store, "gather", clock, "store", undo)
            _patch(store, "put", clock, "store", undo)
        _patch(network_search.NetworkSearch, "search", clock, "loop", undo)
        repeats = max(10, 400 // batch)
        try:
            for _ in range(repeats):
                search.search(frames, mask, search_cfg, rng, ActingParams("eval"))
        finally:
            for owner, name, fn in reversed(undo):
                setattr(owner, name, fn)
        per_sim = 1e6 / (repeats * sims)
        parts[batch] = {k: v * per_sim for k, v in clock.seconds.items()}
        parts[batch]["total"] = sum(clock.seconds.values()) * per_sim
    return parts


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--split"]
    chosen = args[0] if args else "default"
    print(" ".join(f"{ms:.2f}" for ms in main(chosen)))
    if "--split" in sys.argv:
        labels = ("model", "decode", "glue", "tree", "store", "loop", "total")
        print("µs per simulation  B  " + " ".join(f"{k:>7}" for k in labels))
        for b, part in split(chosen).items():
            row = " ".join(f"{part.get(k, 0.0):7.1f}" for k in labels)
            print(f"                 {b:>3}  {row}")
