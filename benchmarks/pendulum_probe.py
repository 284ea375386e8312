"""Where a Pendulum checkpoint loses return: its eval episode, its one-step Q, its root visits,
its value against the return.

    python benchmarks/pendulum_probe.py RUN_DIR/ckpt/ckpt_best.pth.tar
    python benchmarks/pendulum_probe.py RUN_DIR

For the continuous sampled types (issue 23's Pendulum rows). It plays the run's evaluator with
the checkpoint (the run's config, seed and search) and prints, for env 0's first episode:
1. every 5th step: θ (0 upright), θ̇, the torque played (normalised to [-1, 1]) and the return
   so far: whether the swing-up or the balance costs the return;
2. at the episode's first state, the network's r + γ·v for 11 torques from -1 to 1 (less the
   best): whether the model tells the torques apart;
3. one search at that state, as the evaluator runs it: each sampled action's visits and Q:
   how the simulations spread over the K root children (the policy's training target);
4. every 10th step of that episode: the network's value of the state against the episode's
   discounted return-to-go from it (the value a perfect critic of this policy would give, up to
   the costs after the episode's 200 steps, about 0 once the pole is held upright): whether
   the value is biased, and where;
5. for each of the evaluator's starts, its return and the share of its first 60 steps (the
   swing-up) played at full torque (|u| >= 0.95), to set beside
   `python benchmarks/pendulum_optimal.py SEED [--max-torque T]`: whether the swing-ups that
   lose are a weaker motor's.
Given a run directory instead, it prints the network's value of the pole at rest at the top and
at the bottom at every `iteration_*` checkpoint of the run: how a value bias grows and drains.
Takes a few minutes (one core).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

# section 5 counts full torque as the DP does (run as a script, this folder is on sys.path)
from pendulum_optimal import FULL_TORQUE, SWING_UP_STEPS
from zeropipe.cli.evaluation import load_checkpoint_weights
from zeropipe.cli.video import FirstEpisodeRecorder
from zeropipe.config import load_config
from zeropipe.envs.registry import make_game
from zeropipe.mcts.policies import ActingParams
from zeropipe.models.support import logits_to_scalar
from zeropipe.pipeline.build import build_evaluator

TORQUES = np.linspace(-1.0, 1.0, 11, dtype=np.float32)
# (cos θ, sin θ, θ̇) of the pole at rest at the top and at the bottom
AT_REST = np.array([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]], dtype=np.float32)


def first_episode(evaluator) -> tuple[list[np.ndarray], float]:
    """(env 0's actions, its return) from one evaluation of the loaded weights."""
    recorder = FirstEpisodeRecorder(evaluator.envs)
    evaluator.envs = recorder
    evaluator.evaluate()
    return recorder.actions, recorder.episode_return


class SwingUpRecorder:
    """An `EnvBatch` stand-in that keeps every env's |torque| over the first `SWING_UP_STEPS`
    steps (Pendulum's episodes start and end together) and each env's first return."""

    def __init__(self, envs) -> None:
        self._envs = envs
        self.torques: list[np.ndarray] = []  # [n_env] each, normalised to [0, 1]
        self.returns: dict[int, float] = {}

    def __getattr__(self, name: str):
        return getattr(self._envs, name)

    def step(self, actions: np.ndarray):
        if len(self.torques) < SWING_UP_STEPS:
            self.torques.append(
                np.abs(np.asarray(actions, dtype=np.float64).reshape(len(actions), -1)[:, 0])
            )
        out = self._envs.step(actions)
        for env, episode_return in out.episode_returns.items():
            self.returns.setdefault(env, episode_return)
        return out


def print_swing_up_torque(evaluator) -> None:
    """Each eval start's return and its share of full torque over the swing-up."""
    recorder = SwingUpRecorder(evaluator.envs)
    evaluator.envs = recorder
    evaluator.evaluate()
    shares = (np.stack(recorder.torques) >= FULL_TORQUE).mean(axis=0)
    for env, share in enumerate(shares):
        print(
            f"  eval start {env}: return {recorder.returns[env]:7.1f}, full torque in "
            f"{share:.0%} of the first {SWING_UP_STEPS} steps"
        )


def print_trajectory(
    env_cfg, seed: int, actions: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Replay env 0's actions on a game made and seeded as env 0 was (`make_game` scales the
    normalised torques to the env's bounds); return its observations [T, 3] and rewards [T]."""
    game, _ = make_game(env_cfg, "eval")
    observations, rewards = [], []
    try:
        obs, _ = game.reset(seed)
        total = 0.0
        for t, action in enumerate(actions):
            observations.append(obs.astype(np.float32))
            if t % 5 == 0:
                theta = np.arctan2(obs[1], obs[0])
                state = f"θ {theta:+.2f}  θ̇ {obs[2]:+.2f}"
                print(f"  t {t:3d}  {state}  torque {float(action[0]):+.2f}  return {total:7.1f}")
            step = game.step(action)
            obs, total = step.frame, total + step.raw_reward
            rewards.append(step.raw_reward)
    finally:
        game.close()
    print(f"  replayed return {total:.1f}")
    return np.stack(observations), np.asarray(rewards, dtype=np.float64)


@torch.no_grad()
def print_one_step_q(network, obs: np.ndarray, discount: float) -> None:
    x = torch.from_numpy(np.repeat(obs[None].astype(np.float32), len(TORQUES), axis=0))
    root = network.initial_inference(x)
    step = network.recurrent_inference(root.latent, torch.from_numpy(TORQUES[:, None]))
    reward = network.transition_reward(root.latent, step).float().ravel()
    value = logits_to_scalar(step.value_logits.float(), network.value_support).ravel()
    q = (reward + discount * value).numpy()
    print("  torque   " + " ".join(f"{a:+6.1f}" for a in TORQUES))
    print("  Q - max  " + " ".join(f"{v:+6.1f}" for v in q - q.max()))


@torch.no_grad()
def network_values(network, observations: np.ndarray) -> np.ndarray:
    """The network's scalar values of observations [N, 3] -> [N]."""
    root = network.initial_inference(torch.from_numpy(observations))
    return logits_to_scalar(root.value_logits.float(), network.value_support).ravel().numpy()


def print_value_against_return(
    network, observations: np.ndarray, rewards: np.ndarray, discount: float
) -> None:
    values = network_values(network, observations)
    to_go = np.zeros(len(rewards) + 1)
    for t in range(len(rewards) - 1, -1, -1):
        to_go[t] = rewards[t] + discount * to_go[t + 1]
    for t in range(0, len(rewards), 10):
        print(f"  t {t:3d}  value {values[t]:8.1f}  return-to-go {to_go[t]:8.1f}")


def print_root_visits(evaluator, obs: np.ndarray) -> None:
    rng = np.random.default_rng(0)
    frames = obs[None, None].astype(np.float32)  # [B=1, stack=1, 3]
    mask = np.ones((1, 1), dtype=bool)
    result = evaluator.search.search(frames, mask, evaluator.search_cfg, rng, ActingParams("eval"))
    out = result.output
    actions = out.sampled_actions[0, :, 0]
    for k in np.argsort(actions):
        visits, q = out.visit_counts[0, k], out.q_values[0, k]
        print(f"  action {actions[k]:+.2f}  visits {visits}  Q {q:8.1f}")
    ones = int((out.visit_counts[0] == 1).sum())
    print(
        f"  {ones} of {len(actions)} children visited once; played {float(out.action[0, 0]):+.2f}"
    )


def _iteration(checkpoint: Path) -> int:
    return int(checkpoint.name.split("_")[1].split(".")[0])


def print_values_over_run(run_dir: Path) -> None:
    """The value of the pole at rest at the top and at the bottom, at every saved iteration."""
    cfg = load_config(run_dir / "config.yaml")
    checkpoints = sorted((run_dir / "ckpt").glob("iteration_*.pth.tar"), key=_iteration)
    evaluator = build_evaluator(cfg)
    try:
        print("learner step   top at rest   bottom at rest")
        for checkpoint in checkpoints:
            weights = load_checkpoint_weights(checkpoint)
            evaluator.load_weights(weights.state_dict, weights.policy_version)
            top, bottom = network_values(evaluator.search.network.eval(), AT_REST)
            print(f"{_iteration(checkpoint):12d}   {top:11.1f}   {bottom:14.1f}")
    finally:
        evaluator.close()


def probe_checkpoint(checkpoint: Path) -> None:
    cfg = load_config(checkpoint.parent.parent / "config.yaml")
    weights = load_checkpoint_weights(checkpoint)
    evaluator = build_evaluator(cfg)
    try:
        evaluator.load_weights(weights.state_dict, weights.policy_version)
        actions, episode_return = first_episode(evaluator)
        print(
            f"env 0's first eval episode (eval seed {evaluator.seed}): return {episode_return:.1f}"
        )
        observations, rewards = print_trajectory(cfg.env, evaluator.seed, actions)
        obs = observations[0]
        network = evaluator.search.network.eval()
        discount = cfg.policy.discount_factor
        print("one-step Q at its first state")
        print_one_step_q(network, obs, discount)
        print(f"one search at its first state ({cfg.policy.num_simulations} simulations)")
        print_root_visits(evaluator, obs)
        print(f"the network's value against the discounted (γ {discount}) return-to-go")
        print_value_against_return(network, observations, rewards, discount)
        print(f"every eval start: the torque over the swing-up (|u| >= {FULL_TORQUE} is full)")
        print_swing_up_torque(evaluator)
    finally:
        evaluator.close()


if __name__ == "__main__":
    target = Path(sys.argv[1])
    if target.is_dir():
        print_values_over_run(target)
    else:
        probe_checkpoint(target)
