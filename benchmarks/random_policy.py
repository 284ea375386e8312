"""The uniform-random policy's game return on a config's eval game: the floor of its curves.

    python benchmarks/random_policy.py CONFIG [GAMES]

Plays GAMES (default 30) games of the config's env with zeropipe's eval preprocessing (the
game `zeropipe train` evaluates on: no episodic life, unclipped rewards, the eval time limit,
no-op starts on Atari), a uniformly random legal action at every agent step (a uniform
action in [-1, 1] per dimension for Box actions), game g seeded 1000 + g. Prints the mean,
standard deviation and range of the game returns and the agent steps per game.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from zeropipe.config import load_config
from zeropipe.envs.registry import make_game

SEED_BASE = 1000


@dataclass(frozen=True)
class RandomScores:
    returns: list[float]
    steps: list[int]


def random_policy_scores(config: str, games: int, seed: int = 0) -> RandomScores:
    """Game returns and lengths of the uniform-random policy on `config`'s eval game."""
    cfg = load_config(config, [])
    game, spec = make_game(cfg.env, "eval")
    rng = np.random.default_rng(seed)
    returns, steps = [], []
    try:
        for g in range(games):
            _, mask = game.reset(seed=SEED_BASE + g)
            total, t = 0.0, 0
            while True:
                out = game.step(_random_action(rng, spec, mask))
                total, t, mask = total + out.raw_reward, t + 1, out.action_mask
                if out.game_over or out.truncated:
                    break
            returns.append(total)
            steps.append(t)
    finally:
        game.close()
    return RandomScores(returns, steps)


def _random_action(rng: np.random.Generator, spec, mask: np.ndarray | None):
    if spec.action_dim:
        return rng.uniform(-1.0, 1.0, spec.action_dim).astype(np.float32)
    legal = np.flatnonzero(mask) if mask is not None else np.arange(spec.action_space_size)
    return int(rng.choice(legal))


def main(argv: list[str]) -> None:
    config, games = argv[0], int(argv[1]) if len(argv) > 1 else 30
    scores = random_policy_scores(config, games)
    r = np.asarray(scores.returns)
    print(
        f"{config}: uniform-random policy over {games} games: mean {r.mean():.2f} ± "
        f"{r.std():.2f} [{r.min():g}, {r.max():g}]; {np.mean(scores.steps):.0f} agent steps "
        "per game"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
