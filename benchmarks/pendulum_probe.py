"""Where a Pendulum checkpoint loses return: its eval episode, its one-step Q, its root visits.

    python benchmarks/pendulum_probe.py RUN_DIR/ckpt/ckpt_best.pth.tar

For the continuous sampled types (issue 23's Pendulum rows). It plays the run's evaluator with
the checkpoint (the run's config, seed and search) and prints, for env 0's first episode:
1. every 5th step: θ (0 upright), θ̇, the torque played (normalised to [-1, 1]) and the return
   so far: whether the swing-up or the balance costs the return;
2. at the episode's first state, the network's r + γ·v for 11 torques from -1 to 1 (less the
   best): whether the model tells the torques apart;
3. one search at that state, as the evaluator runs it: each sampled action's visits and Q:
   how the simulations spread over the K root children (the policy's training target).
Takes about a minute (one core).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

from zeropipe.cli.evaluation import load_checkpoint_weights
from zeropipe.cli.video import FirstEpisodeRecorder
from zeropipe.config import load_config
from zeropipe.envs.registry import make_game
from zeropipe.mcts.policies import ActingParams
from zeropipe.models.support import logits_to_scalar
from zeropipe.pipeline.build import build_evaluator

TORQUES = np.linspace(-1.0, 1.0, 11, dtype=np.float32)


def first_episode(evaluator) -> tuple[list[np.ndarray], float]:
    """(env 0's actions, its return) from one evaluation of the loaded weights."""
    recorder = FirstEpisodeRecorder(evaluator.envs)
    evaluator.envs = recorder
    evaluator.evaluate()
    return recorder.actions, recorder.episode_return


def print_trajectory(env_cfg, seed: int, actions: list[np.ndarray]) -> np.ndarray:
    """Replay env 0's actions on a game made and seeded as env 0 was (`make_game` scales the
    normalised torques to the env's bounds); return its first observation."""
    game, _ = make_game(env_cfg, "eval")
    try:
        obs, _ = game.reset(seed)
        first = obs.copy()
        total = 0.0
        for t, action in enumerate(actions):
            if t % 5 == 0:
                theta = np.arctan2(obs[1], obs[0])
                state = f"θ {theta:+.2f}  θ̇ {obs[2]:+.2f}"
                print(f"  t {t:3d}  {state}  torque {float(action[0]):+.2f}  return {total:7.1f}")
            step = game.step(action)
            obs, total = step.frame, total + step.raw_reward
    finally:
        game.close()
    print(f"  replayed return {total:.1f}")
    return first


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


def main(checkpoint: Path) -> None:
    cfg = load_config(checkpoint.parent.parent / "config.yaml")
    weights = load_checkpoint_weights(checkpoint)
    evaluator = build_evaluator(cfg)
    try:
        evaluator.load_weights(weights.state_dict, weights.policy_version)
        actions, episode_return = first_episode(evaluator)
        print(
            f"env 0's first eval episode (eval seed {evaluator.seed}): return {episode_return:.1f}"
        )
        obs = print_trajectory(cfg.env, evaluator.seed, actions)
        network = evaluator.search.network.eval()
        print("one-step Q at its first state")
        print_one_step_q(network, obs, cfg.policy.discount_factor)
        print(f"one search at its first state ({cfg.policy.num_simulations} simulations)")
        print_root_visits(evaluator, obs)
    finally:
        evaluator.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
