"""Seconds of one eval of a CartPole MuZero checkpoint, as the main job's evaluator runs it: a
standalone script that runs against whichever zeropipe is importable (see search_timing.py).

    cd <a checkout> && PYTHONPATH=src python <this repo>/benchmarks/eval_timing.py CKPT [MODE] [N]

The evaluator of that checkout's `configs/cartpole_muzero.yaml` (3 episodes, one torch thread)
loads the checkpoint's network and evaluates twice; it prints the mean return, the env steps and
the seconds of each eval. MODE sets `policy.actor_inference` unless `default`; N sets
`env.n_evaluator_episode` (a checkout whose config sets `env.evaluator_env_num` plays them on
that many envs).
"""

from __future__ import annotations

import sys
import time

import torch

from zeropipe.config import load_config
from zeropipe.outputs.checkpoint_format import read_checkpoint
from zeropipe.workers.factory import build_evaluator


def main(checkpoint: str, mode: str, episodes: int | None = None) -> None:
    """Print two evals' return, env steps and seconds."""
    torch.set_num_threads(1)
    overrides = [] if mode == "default" else [f"policy.actor_inference={mode}"]
    if episodes is not None:
        overrides.append(f"env.n_evaluator_episode={episodes}")
    evaluator = build_evaluator(load_config("configs/cartpole_muzero.yaml", overrides))
    state = read_checkpoint(checkpoint)
    evaluator.load_weights(state["learner"]["network"] if "learner" in state else state["model"], 1)
    for _ in range(2):
        start = time.perf_counter()
        out = evaluator.evaluate()
        seconds = time.perf_counter() - start
        print(f"eval {out.reward_mean:.1f} {out.envsteps} env steps {seconds:.2f} s", flush=True)


if __name__ == "__main__":
    main(
        sys.argv[1],
        sys.argv[2] if len(sys.argv) > 2 else "default",
        int(sys.argv[3]) if len(sys.argv) > 3 else None,
    )
