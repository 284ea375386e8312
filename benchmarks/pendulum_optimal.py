"""The best return reachable from a run's Pendulum-v1 eval starts: what `reward_mean` can be.

    python benchmarks/pendulum_optimal.py [SEED ...] [--max-torque T]

A Pendulum run's evaluator replays the same starts at every eval (env i of evaluator 0 is
seeded `seed + EVAL_SEED_OFFSET + i`, `workers/factory.py`), so a run's eval curve is bounded
by what those 3 starts allow, and the bound differs per seed. This script solves the 200-step
control problem by finite-horizon dynamic programming on a (θ, θ̇) grid (bilinear interpolation,
41 torques), then plays the greedy policy of that solution in the real env from each start: an
achievable return, so a lower bound on the optimum. It prints, per seed, the three returns, their
mean, and the share of the first 60 steps (the swing-up) played at full torque (|u| >= 0.95 of
the bound; `pendulum_probe.py` counts an agent's the same way). Takes a few
minutes (one core).

`--max-torque T` solves it for a weaker motor, torques in [-T, T] instead of the env's [-2, 2]:
what a controller that never pushes past T could reach (a failing run's swing-up is compared
with it in the README's Pendulum section).
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np

from zeropipe.workers.factory import EVAL_SEED_OFFSET

N_THETA, N_SPEED, N_TORQUE, STEPS, EPISODES = 361, 321, 41, 200, 3
SWING_UP_STEPS = 60  # the steps over which the full-torque share is counted
FULL_TORQUE = 0.95  # |u| at or above this share of the bound counts as full torque
THETAS = np.linspace(-np.pi, np.pi, N_THETA)
SPEEDS = np.linspace(-8.0, 8.0, N_SPEED)
TORQUES = np.linspace(-2.0, 2.0, N_TORQUE)  # the env's bounds; the DP's default action grid


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


def costs_to_go(torques: np.ndarray = TORQUES) -> list[np.ndarray]:
    """`[t]`: the grid's cost-to-go with `STEPS - t` steps left (`[STEPS]` is zero), the torque
    chosen from `torques`."""
    theta, speed, torque = np.meshgrid(THETAS, SPEEDS, torques, indexing="ij")
    next_theta, next_speed, cost = dynamics(theta, speed, torque)
    grids = [np.zeros((N_THETA, N_SPEED))]
    for _ in range(STEPS):
        grids.append((cost + interpolate(grids[-1], next_theta, next_speed)).min(axis=-1))
    return grids[::-1]


def play(
    grids: list[np.ndarray], env_seed: int, torques: np.ndarray = TORQUES
) -> tuple[float, float]:
    """The greedy policy of `grids` (over `torques`) in the real env from the start `env_seed`:
    its return and the share of its first `SWING_UP_STEPS` steps at full torque."""
    env = gym.make("Pendulum-v1")
    env.reset(seed=env_seed)
    total, full = 0.0, 0
    for t in range(STEPS):
        theta, speed = env.unwrapped.state
        next_theta, next_speed, cost = dynamics(theta, speed, torques)
        torque = torques[np.argmin(cost + interpolate(grids[t + 1], next_theta, next_speed))]
        full += t < SWING_UP_STEPS and abs(torque) >= FULL_TORQUE * torques[-1]
        total += float(env.step([torque])[1])
    env.close()
    return total, full / SWING_UP_STEPS


def main(seeds: list[int], max_torque: float) -> None:
    if not 0.0 < max_torque <= 2.0:
        raise SystemExit(f"--max-torque must be in (0, 2] (the env's bound), got {max_torque}")
    torques = np.linspace(-max_torque, max_torque, N_TORQUE)
    grids = costs_to_go(torques)
    for seed in seeds:
        played = [play(grids, seed + EVAL_SEED_OFFSET + i, torques) for i in range(EPISODES)]
        returns = [r for r, _ in played]
        shown = ", ".join(f"{r:.0f}" for r in returns)
        full = np.mean([f for _, f in played])
        print(
            f"seed {seed} (torque within ±{max_torque:g}): eval starts {shown}; mean "
            f"{np.mean(returns):.0f}; full torque in {full:.0%} of the first {SWING_UP_STEPS} steps"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("seeds", nargs="*", type=int, default=[0, 1, 2])
    parser.add_argument("--max-torque", type=float, default=2.0, help="T (the env's: 2)")
    args = parser.parse_args()
    main(args.seeds, args.max_torque)
