"""Milliseconds per search with a config's real MuZero network (CartPole's by default): a
standalone script that runs against whichever zeropipe is importable, so that two commits can be
timed against each other.

    cd <a checkout> && PYTHONPATH=src python <this repo>/benchmarks/search_timing.py [MODE]
    ... search_timing.py [MODE] --split [--config configs/pong_muzero.yaml] [--batches 3,8]
    ... search_timing.py [MODE] --split --json timing.json

It loads that checkout's config (`configs/cartpole_muzero.yaml` unless `--config` names another;
a config whose env is not installed is reported and skipped), builds its untrained network, sets
`policy.actor_inference` to MODE unless MODE is `default`, and prints one line: the mean
milliseconds of an eval search of the config's simulations at B = 3, 8 and 64 (or `--batches`),
one torch thread, after three warm-up searches (which trace, and freeze, the step). Run it
alternately per checkout, a few rounds, and compare medians: this machine's speed drifts by tens
of percent within minutes. `--json PATH` also writes the figures (and the split) as JSON.

With --split it then prints, per B, where a search's time goes per simulation (µs): `model` (the
network's step: the traced graph, value and reward decoding included, or the eager network
calls), `decode` (eager only: support logits to scalars), `convert` (numpy<->torch conversions
of the step's actions and outputs, and the output object, where the checkout names them
`action_tensor` and `step_output`, or the outputs' views `_view` where the search runs on the
traced step's tensors; before, they were part of `glue`), `glue` (the rest of the model step's
own Python, none where the search runs on the step's tensors), `tree` (the numba kernels and
their call), `store` (gathering the parents' latents and storing the new ones, where the checkout
has a `LatentStore`; before, that was part of `loop`), `compiled` (under `actor_inference:
compiled`, where the network allows it, all of the simulations in one numba call: the network's
step, the store and the tree kernels together, none of the parts above) and `loop` (the rest:
the search loop's Python, and once per search the root's network call and the tree's set-up and
output; under `compiled` the root's decoding and the first selection show as `decode` and
`tree`). Each part
is timed exclusively of the parts it calls, by wrapping them, which adds about a microsecond per
wrapped call; the total is the instrumented search's, so it runs a little above the plain figure.
"""

from __future__ import annotations

import argparse
import json
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

CARTPOLE = "configs/cartpole_muzero.yaml"
LABELS = ("model", "decode", "convert", "glue", "tree", "store", "compiled", "loop", "total")


def _search(mode: str, config: str, max_batch: int):
    """The config, its env spec, its actor search with `mode` inference (one thread, B up to
    `max_batch`) and its search settings."""
    torch.set_num_threads(1)
    cfg = load_config(config)
    spec = env_spec(cfg.env)
    if mode != "default":
        cfg.policy.actor_inference = mode
    network, frame_ndim = build_network(cfg, spec), len(spec.frame_shape)
    search = actor_search(cfg.policy, network, frame_ndim, max_batch, "cpu")[0]
    return cfg, spec, search, cfg.policy.search_config(cfg.policy.num_simulations)


def _inputs(spec, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """Fixed random frames [B, S, *frame] of the spec's dtype and an all-legal mask [B, A]."""
    rng = np.random.default_rng(1)
    shape = (batch, spec.frame_stack, *spec.frame_shape)
    if np.dtype(spec.frame_dtype) == np.uint8:
        frames = rng.integers(0, 256, size=shape, dtype=np.uint8)
    else:
        frames = rng.normal(size=shape).astype(spec.frame_dtype)
    return frames, np.ones((batch, spec.action_space_size), dtype=bool)


def main(mode: str, config: str = CARTPOLE, batches: tuple[int, ...] = (3, 8, 64)) -> list[float]:
    """Mean ms per search at each B of `batches`."""
    warnings.simplefilter("ignore")
    _cfg, spec, search, search_cfg = _search(mode, config, max(batches))
    out = []
    for batch in batches:
        frames, mask = _inputs(spec, batch)
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


def _instrument(search, clock: _Clock, undo: list) -> None:
    """Wrap the search's parts (those this checkout has) so that `clock` times them."""
    import zeropipe.algos.network_search as network_search
    import zeropipe.algos.traced_step as traced_step
    import zeropipe.mcts.search as mcts_search
    import zeropipe.mcts.simulate as mcts_simulate
    from zeropipe.algos.graphs import FrozenGraph

    net_class = type(search.network)
    _patch(FrozenGraph, "__call__", clock, "model", undo)
    _patch(net_class, "recurrent_inference", clock, "model", undo)
    _patch(net_class, "transition_reward", clock, "model", undo)
    _patch(network_search, "_scalar", clock, "decode", undo)
    _patch(network_search, "action_tensor", clock, "convert", undo)
    _patch(traced_step, "step_output", clock, "convert", undo)
    _patch(mcts_search, "_view", clock, "convert", undo)
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
    compiled = getattr(search, "compiled", None)
    if compiled is not None:  # the whole simulation loop in one numba call
        _patch(type(compiled), "__call__", clock, "compiled", undo)
    _patch(network_search.NetworkSearch, "search", clock, "loop", undo)


def split(
    mode: str, config: str = CARTPOLE, batches: tuple[int, ...] = (3, 8, 64)
) -> dict[int, dict[str, float]]:
    """µs per simulation by part (see the module docstring) at each B of `batches`."""
    cfg, spec, search, search_cfg = _search(mode, config, max(batches))
    sims = cfg.policy.num_simulations
    parts: dict[int, dict[str, float]] = {}
    for batch in batches:
        frames, mask = _inputs(spec, batch)
        rng = np.random.default_rng(0)
        for _ in range(3):
            search.search(frames, mask, search_cfg, rng, ActingParams("eval"))
        clock, undo = _Clock(), []
        _instrument(search, clock, undo)
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


def _args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", default="default", help="actor_inference, or default")
    parser.add_argument("--split", action="store_true", help="also time the parts per simulation")
    parser.add_argument("--config", default=CARTPOLE, help="the config whose network is timed")
    parser.add_argument("--batches", default="3,8,64", help="comma-separated batch sizes")
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    return parser.parse_args(argv)


def run(argv: list[str]) -> int:
    """The command line: print (and with --json write) the figures; 1 if the env is missing."""
    args = _args(argv)
    batches = tuple(int(b) for b in args.batches.split(","))
    try:
        ms = main(args.mode, args.config, batches)
    except Exception as exc:  # most often the config's env is not installed here
        print(f"{args.config}: cannot build its search ({type(exc).__name__}: {exc})")
        return 1
    print(" ".join(f"{m:.2f}" for m in ms))
    result = {"config": args.config, "mode": args.mode, "threads": 1}
    result["ms_per_search"] = {str(b): m for b, m in zip(batches, ms, strict=True)}
    if args.split:
        parts = split(args.mode, args.config, batches)
        result["us_per_simulation"] = {str(b): p for b, p in parts.items()}
        print("µs per simulation  B  " + " ".join(f"{k:>7}" for k in LABELS))
        for b, part in parts.items():
            row = " ".join(f"{part.get(k, 0.0):7.1f}" for k in LABELS)
            print(f"                 {b:>3}  {row}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
