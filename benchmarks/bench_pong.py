"""Pong pipeline figures: sync vs async over the same wall window, replay storage, env stepping.

Three tables, for the Pong configs (`configs/pong_*.yaml`):

- pipeline: env steps/s and learner steps/s of the sync pipeline and of the async one (the
  config's workers, or `--collectors N`) over the same wall window, through the real CLI
  (`bench_pipeline._run`), the async/sync ratios, and each run's seconds by phase and learner busy
  fraction at its last learner step in the window (what explains the ratio); `--json` writes the
  pipeline rows with the machine header;
- replay: bytes per stored transition (`ReplayBuffer.nbytes()` over its transitions) and frames
  stored per transition (frame rows a segment brings, `len(obs)`, over its own transitions; frames
  are stored once, not once per stack), after a few real collects;
- env stepping: env steps/s of a collector's `EnvBatch` alone (random actions) and of
  `Collector.collect` (8 envs, the config's search), in-process.

Not in the default `make bench` set: at the default 240 s window a side it takes about half an
hour. Run it with ``python -m benchmarks pong`` or ``python -m benchmarks pong --window-s 90``;
`--set`, `--muzero-set`, `--unizero-set` and `--efficientzero-set` pass overrides (e.g.
``policy.device=cuda``) to the runs, as `benchmarks/gpu_pong.sh` does.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks.bench_pipeline import ROOT, _run
from benchmarks.machine import describe_run
from benchmarks.overrides import for_pipeline, recorded_command
from zeropipe.config import load_config
from zeropipe.envs import EnvBatch
from zeropipe.pipeline.build import build_collector, build_driver

CONFIGS = {
    "muzero": "configs/pong_muzero.yaml",
    "unizero": "configs/pong_unizero.yaml",
    "efficientzero": "configs/pong_efficientzero.yaml",
}
DEFAULT_WINDOW_S = float(os.environ.get("ZEROPIPE_PONG_WINDOW_S", "240"))


def _sets(overrides: list[str]) -> list[str]:
    return [arg for item in overrides for arg in ("--set", item)]


def _run_window(config: str, window_s: float, args: list[str], workdir: Path) -> dict[str, Any]:
    """`bench_pipeline._run`, or zero rates when no metrics event fell inside the window."""
    try:
        return _run(config, window_s, args, workdir)
    except ValueError:  # max() of no events: the first collect outlasted the window
        print(f"  no metrics event within {window_s:.0f} s: raise --window-s", flush=True)
        return {"envstep_per_s": 0.0, "learner_steps_per_s": 0.0}


def bench_pong_pipeline(
    config: str, window_s: float, overrides: list[str], collectors: int | None = None
) -> dict[str, Any]:
    """Sync then async on one config, each for `window_s` seconds of wall time."""
    async_args = ["--async-pipeline"]
    if collectors is not None:
        async_args += ["--set", f"policy.async_pipeline.num_collector_actors={collectors}"]
    rows = {}
    for name, extra in (("sync", []), ("async", async_args)):
        with tempfile.TemporaryDirectory() as tmp:
            args = ["--set", "exp_name=run", *_sets(for_pipeline(overrides, name)), *extra]
            rows[name] = _run_window(config, window_s, args, Path(tmp))
    ratio = {  # None where sync made no progress in the window
        key: rows["async"][key] / rows["sync"][key] if rows["sync"][key] > 0 else None
        for key in ("envstep_per_s", "learner_steps_per_s")
    }
    return {
        "config": config,
        "window_s": window_s,
        "collectors": collectors,
        **rows,
        "ratio": ratio,
    }


def bench_replay_storage(config: str, overrides: list[str], collects: int = 3) -> dict[str, Any]:
    """Push `collects` real collects into the config's replay buffer; storage per transition.

    Bytes per transition are the growth of `nbytes()` over the growth of the transitions after
    the first push (the fixed part, priority arrays sized for the capacity, is left out). The
    policy is untrained and searches with 2 simulations: storage does not depend on it.
    """
    cfg = load_config(ROOT / config, [*overrides, "policy.num_simulations=2"])
    buffer = build_driver(cfg).buffer
    collector = build_collector(cfg)
    frames = own = 0
    sizes = []  # (transitions, nbytes) after each push
    try:
        for _ in range(collects):
            segments = collector.collect(temperature=1.0, epsilon=0.0).segments
            buffer.push(segments)
            frames += sum(int(s.obs.shape[0]) for s in segments)
            own += sum(int(s.length) for s in segments)
            sizes.append((buffer.num_transitions, buffer.nbytes()))
    finally:
        collector.close()
    (first_n, first_bytes), (last_n, last_bytes) = sizes[0], sizes[-1]
    per_transition = (last_bytes - first_bytes) / max(last_n - first_n, 1)
    return {
        "config": config,
        "transitions": last_n,
        "bytes_per_transition": per_transition,
        "fixed_bytes": first_bytes - first_n * per_transition,
        "frame_bytes": int(np.prod(collector.envs.spec.frame_shape)),
        "frames_per_transition": frames / own,
        "frame_stack": cfg.env.frame_stack,
    }


def bench_env_batch(config: str, steps: int = 300, seed: int = 0) -> float:
    """Env steps/s of a collector's EnvBatch alone, stepped with random actions."""
    cfg = load_config(ROOT / config)
    with EnvBatch(cfg.env, cfg.env.collector_env_num, "collect", seed) as batch:
        batch.reset()
        rng = np.random.default_rng(seed)
        actions = rng.integers(0, batch.spec.action_space_size, size=(steps, batch.num_envs))
        start = time.perf_counter()
        for row in actions:
            batch.step(row)
        return steps * batch.num_envs / (time.perf_counter() - start)


def bench_collector(config: str, overrides: list[str], collects: int = 1) -> float:
    """Env steps/s of `Collector.collect` (after one warm-up collect) with the config's search.

    Torch gets `collector_num_cpus` threads while it runs, as in a collector worker.
    """
    cfg = load_config(ROOT / config, overrides)
    collector = build_collector(cfg)
    threads = torch.get_num_threads()
    torch.set_num_threads(cfg.policy.async_pipeline.collector_num_cpus)
    try:
        collector.collect(temperature=1.0, epsilon=0.0)
        start = time.perf_counter()
        steps = sum(collector.collect(1.0, 0.0).envstep_delta for _ in range(collects))
        return steps / (time.perf_counter() - start)
    finally:
        torch.set_num_threads(threads)
        collector.close()


def _print_pipeline(res: dict[str, Any]) -> None:
    workers = "the config's collectors" if res["collectors"] is None else res["collectors"]
    print(f"{res['config']}, {res['window_s']:.0f} s window each, async with {workers}")
    print(f"{'pipeline':>10} {'env steps/s':>12} {'learner steps/s':>16}  phases (s), learner busy")
    for name in ("sync", "async"):
        r = res[name]
        phases = ", ".join(f"{p} {v:.1f}" for p, v in r.get("phase_s", {}).items())
        busy = r.get("learner_busy_fraction")
        print(
            f"{name:>10} {r['envstep_per_s']:>12.2f} {r['learner_steps_per_s']:>16.2f}  "
            f"{phases}{'' if busy is None else f'; busy {busy:.2f}'}"
        )
    env_ratio, learner_ratio = (
        "n/a" if value is None else f"{value:.2f}×"
        for value in (res["ratio"]["envstep_per_s"], res["ratio"]["learner_steps_per_s"])
    )
    print(f"{'async/sync':>10} {env_ratio:>12} {learner_ratio:>16}", flush=True)


def _print_storage(res: dict[str, Any]) -> None:
    print(
        f"replay {res['config']}: {res['bytes_per_transition']:.0f} bytes per stored transition "
        f"(+{res['fixed_bytes'] / 2**20:.0f} MiB fixed; {res['transitions']} transitions; "
        f"one frame is {res['frame_bytes']} bytes, "
        f"stack {res['frame_stack']}), {res['frames_per_transition']:.3f} frames stored per "
        "transition",
        flush=True,
    )


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_pong")
    parser.add_argument("--window-s", type=float, default=DEFAULT_WINDOW_S, help="per side")
    parser.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    parser.add_argument("--set", action="append", default=[], help="override for every run")
    parser.add_argument("--muzero-set", action="append", default=[], help="pong_muzero only")
    parser.add_argument("--unizero-set", action="append", default=[], help="pong_unizero only")
    parser.add_argument(
        "--efficientzero-set", action="append", default=[], help="pong_efficientzero only"
    )
    parser.add_argument("--skip-pipeline", action="store_true", help="storage and env rows only")
    parser.add_argument("--skip-env", action="store_true", help="no env-stepping rows")
    parser.add_argument("--skip-storage", action="store_true", help="no replay-storage rows")
    parser.add_argument("--collectors", type=int, help="async collectors (default: the config's)")
    parser.add_argument("--json", type=Path, help="write the pipeline rows and the header here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Print the tables; `argv` None (the `pong` section) means the defaults."""
    args = _parse(argv if argv is not None else [])
    header = describe_run({"pong": [CONFIGS[name] for name in args.configs]})
    rows = []
    for name in args.configs:
        config = CONFIGS[name]
        overrides = [*args.set, *getattr(args, f"{name}_set")]
        if not args.skip_pipeline:
            rows.append(bench_pong_pipeline(config, args.window_s, overrides, args.collectors))
            _print_pipeline(rows[-1])
        if not args.skip_storage:
            _print_storage(bench_replay_storage(config, overrides))
        if not args.skip_env:
            batch = bench_env_batch(config)
            collect = bench_collector(config, overrides)
            print(
                f"env stepping {config}: EnvBatch alone {batch:.0f} env steps/s, "
                f"Collector.collect {collect:.1f} env steps/s (8 envs)",
                flush=True,
            )
    if args.json is not None and rows:
        header["command"] = recorded_command("pong", argv or [])
        header["date"] = time.strftime("%Y-%m-%d")
        args.json.write_text(json.dumps({**header, "rows": rows}, indent=2))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
