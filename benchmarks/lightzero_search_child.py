"""LightZero's MuZero search over its CartPole MLP network, timed on request: the LightZero side of
`python -m benchmarks search-vs-lightzero`.

Runs in: its own process, started by that benchmark with LightZero's interpreter (a separate
environment: LightZero 0.2.0 pins its own torch). It imports LightZero's public modules, torch
and numpy only; it calls LightZero and copies none of its code. The network is
`MuZeroModelMLP` built from MuZero's default policy config with the CartPole config's model
settings (random init, eval mode); each search is what the collector's `_forward_collect` does
for B envs (lzero/policy/muzero.py in 0.2.0): initial inference, the value decoded, roots with
Dirichlet noise prepared, the C++ tree search (`MuZeroMCTSCtree`), the visit distributions and
root values read and an action sampled per root.

Protocol (one JSON object per line): it answers `{"ready": {...}}` once built and warm, or
`{"missing": "..."}` (exit 3) when LightZero cannot be imported; then for each request
`{"batch": B, "searches": N}` on stdin it runs N searches at B and answers
`{"ms": ms per search, "start": t0, "end": t1}` (CLOCK_MONOTONIC seconds, comparable across
processes), until stdin closes. Anything else the libraries print goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from importlib.metadata import version

import numpy as np
import torch

# the CartPole MuZero config's model settings (zoo/classic_control/cartpole/config/
# cartpole_muzero_config.py in LightZero 0.2.0); the rest are MuZero's policy defaults
CARTPOLE_MODEL = {
    "model_type": "mlp",
    "observation_shape": 4,
    "action_space_size": 2,
    "latent_state_dim": 128,
    "lstm_hidden_size": 128,
    "self_supervised_learning_loss": True,
    "discrete_action_encoding_type": "one_hot",
    "norm_type": "BN",
}
WARMUP_SEARCHES = 3


def _channel():
    """The protocol's stream: the process's stdout; stdout itself then goes to stderr, so that
    LightZero's and its dependencies' banners never mix with the answers."""
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    return channel


def _send(channel, message: dict) -> None:
    channel.write(json.dumps(message) + "\n")
    channel.flush()


class CollectSearch:
    """LightZero's collect-mode search on fixed random CartPole observations, per batch size."""

    def __init__(self, simulations: int, batches: list[int], seed: int) -> None:
        from lzero.mcts import MuZeroMCTSCtree
        from lzero.model.muzero_model_mlp import MuZeroModelMLP
        from lzero.policy import InverseScalarTransform, mz_network_output_unpack, select_action
        from lzero.policy.muzero import MuZeroPolicy

        torch.manual_seed(seed)
        np.random.seed(seed)
        cfg = MuZeroPolicy.default_config()
        cfg.model.update(CARTPOLE_MODEL)
        cfg.num_simulations = simulations
        cfg.device = "cpu"
        self.cfg = cfg
        self.model = MuZeroModelMLP(**cfg.model).eval()
        self.tree = MuZeroMCTSCtree
        self.mcts = MuZeroMCTSCtree(cfg)
        self.decode = InverseScalarTransform(
            cfg.model.support_scale, cfg.device, cfg.model.categorical_distribution
        )
        self.unpack, self.select_action = mz_network_output_unpack, select_action
        rng = np.random.default_rng(seed)
        size = CARTPOLE_MODEL["observation_shape"]
        self.obs = {
            b: torch.from_numpy(rng.normal(size=(b, size)).astype(np.float32)) for b in batches
        }
        self.masks = {b: np.ones((b, CARTPOLE_MODEL["action_space_size"])) for b in batches}

    def info(self) -> dict:
        """What was built, for the results file."""
        return {
            "side": "lightzero",
            "lightzero": version("LightZero"),
            "torch": torch.__version__,
            "numpy": np.__version__,
            "threads": torch.get_num_threads(),
            "simulations": self.cfg.num_simulations,
            "model": {**CARTPOLE_MODEL, "support_scale": self.cfg.model.support_scale},
            "value_support_size": self.model.value_support_size,
            "reward_support_size": self.model.reward_support_size,
            "parameters": sum(p.numel() for p in self.model.parameters()),
        }

    @torch.no_grad()
    def search(self, batch: int) -> list:
        """One collect search at `batch`, as `MuZeroPolicy._forward_collect` runs it."""
        cfg, mask = self.cfg, self.masks[batch]
        latent, reward, value, logits = self.unpack(self.model.initial_inference(self.obs[batch]))
        _pred_values = self.decode(value).detach().cpu().numpy()
        latent = latent.detach().cpu().numpy()
        logits = logits.detach().cpu().numpy().tolist()
        legal = [[i for i, x in enumerate(mask[j]) if x == 1] for j in range(batch)]
        noises = [
            np.random.dirichlet([cfg.root_dirichlet_alpha] * int(sum(mask[j])))
            .astype(np.float32)
            .tolist()
            for j in range(batch)
        ]
        to_play = [-1] * batch
        roots = self.tree.roots(batch, legal)
        roots.prepare(cfg.root_noise_weight, noises, reward, logits, to_play)
        self.mcts.search(roots, self.model, latent, to_play)
        distributions, _values = roots.get_distributions(), roots.get_values()
        return [self.select_action(d, temperature=1, deterministic=False)[0] for d in distributions]


def serve(channel, search: CollectSearch) -> None:
    """Answer timing requests until stdin closes."""
    for line in sys.stdin:
        request = json.loads(line)
        batch, searches = int(request["batch"]), int(request["searches"])
        start = time.monotonic()
        for _ in range(searches):
            search.search(batch)
        end = time.monotonic()
        _send(channel, {"ms": 1000 * (end - start) / searches, "start": start, "end": end})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="3,8,64")
    parser.add_argument("--simulations", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    channel = _channel()
    torch.set_num_threads(1)
    batches = [int(b) for b in args.batches.split(",")]
    try:
        search = CollectSearch(args.simulations, batches, args.seed)
    except ImportError as exc:
        _send(channel, {"missing": f"{type(exc).__name__}: {exc}"})
        return 3
    for batch in batches:
        for _ in range(WARMUP_SEARCHES):
            search.search(batch)
    _send(channel, {"ready": search.info()})
    serve(channel, search)
    return 0


if __name__ == "__main__":
    sys.exit(main())
