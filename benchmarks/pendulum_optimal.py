"""The best return reachable from a run's Pendulum-v1 eval starts: what `reward_mean` can be.

    python benchmarks/pendulum_optimal.py SEED [SEED ...]

A Pendulum run's evaluator replays the same starts at every eval (env i of evaluator 0 is
seeded `seed + EVAL_SEED_OFFSET + i`, `workers/factory.py`), so a run's eval curve is bounded
by what those 3 starts allow, and the bound differs per seed. This script solves the 200-step
control problem by finite-horizon dynamic programming on a (θ, θ̇) grid (bilinear interpolation,
41 torques), then plays the greedy policy of that solution in the real env from each start: an
achievable return, so a lower bound on the optimum. It prints, per seed, the three returns and
their mean. Takes a few minutes (one core).
"""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np

from zeropipe.workers.factory import EVAL_SEED_OFFSET

N_THETA, N_SPEED, N_TORQUE, STEPS, EPISODES = 361, 321, 41, 200, 3
THETAS = np.linspace(-np.pi, np.pi, N_THETA)
SPEEDS = np.linspace(-8.0, 8.0, N_SPEED)
TORQUES = np.linspace(-2.0, 2.0, N_TORQUE)


def dynamics(theta, speed, torque):
    """Pendulum-v1's step (g 10, m 1, l 1, dt 0.05): (next θ, next θ̇, cost)."""
    wrapped = (theta + np.pi) % (2 * np.pi) - np.pi
    cost = wrapped**2 + 0.1 * speed**2 + 0.001 * torque**2
    speed = np.clip(speed + (15.0 * np.sin(theta) + 3.0 * torque) * 0.05, -8.0, 8.0)
    return theta + speed * 0.05, speed, cost


def interpolate(values: np.ndarray, theta, speed):
    """Bilinear interpolation of a [θ, θ̇] grid of costs-to-go (θ wraps)."""
    x = ((theta + np.pi) % (2 * np.pi)) / (2 * np.pi) * (N_THETA - 1)
    y = (speed + 8.0) / 16.0 * (N_SPEED - 1)
    x0 = np.clip(np.floor(x).astype(int), 0, N_THETA - 2)
    y0 = np.clip(np.floor(y).astype(int), 0, N_SPEED - 2)
    fx, fy = x - x0, y - y0
    return (
        values[x0, y0] * (1 - fx) * (1 - fy)
        + values[x0 + 1, y0] * fx * (1 - fy)
        + values[x0, y0 + 1] * (1 - fx) * fy
        + values[x0 + 1, y0 + 1] * fx * fy
    )


def costs_to_go() -> list[np.ndarray]:
    """`[t]`: the grid's cost-to-go with `STEPS - t` steps left (`[STEPS]` is zero)."""
    theta, speed, torque = np.meshgrid(THETAS, SPEEDS, TORQUES, indexing="ij")
    next_theta, next_speed, cost = dynamics(theta, speed, torque)
    grids = [np.zeros((N_THETA, N_SPEED))]
    for _ in range(STEPS):
        grids.append((cost + interpolate(grids[-1], next_theta, next_speed)).min(axis=-1))
    return grids[::-1]


def play(grids: list[np.ndarray], env_seed: int) -> float:
    """The return of the greedy policy of `grids` in the real env from the start `env_seed`."""
    env = gym.make("Pendulum-v1")
    env.reset(seed=env_seed)
    total = 0.0
    for t in range(STEPS):
        theta, speed = env.unwrapped.state
        next_theta, next_speed, cost = dynamics(theta, speed, TORQUES)
        torque = TORQUES[np.argmin(cost + interpolate(grids[t + 1], next_theta, next_speed))]
        total += float(env.step([torque])[1])
    env.close()
    return total


def main(seeds: list[int]) -> None:
    grids = costs_to_go()
    for seed in seeds:
        returns = [play(grids, seed + EVAL_SEED_OFFSET + i) for i in range(EPISODES)]
        shown = ", ".join(f"{r:.0f}" for r in returns)
        print(f"seed {seed}: eval starts {shown}; mean {np.mean(returns):.0f}")


if __name__ == "__main__":
    main([int(s) for s in sys.argv[1:]] or [0, 1, 2])
