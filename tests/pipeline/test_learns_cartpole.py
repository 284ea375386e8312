"""CI notices when learning breaks: MuZero on CartPole, fixed seed, sync pipeline, one thread.

The shipped config (`configs/cartpole_muzero.yaml`: its targets, unroll, td steps, target copies,
SSL and absorbing terminal) at a small size: a narrower network, 16 simulations, 4 collector envs,
batch 64, eval episodes cut at 200 steps, 4,000 env steps. The run is deterministic for a seed
(sync pipeline, one torch thread), so the test is not flaky on one machine; another machine's
floating point makes it another trajectory, so the thresholds were checked on seeds 0, 1 and 2
and seed 0 is pinned.

Two things must have learned within `MAX_ENV_STEPS`:
- the agent: an eval (the search, as `zeropipe eval` plays) of the second half of the run reaches
  `EVAL_THRESHOLD`. Not one of the first half: an early search can be lucky (with the value
  target zeroed, the eval at 480 env steps scored 137, and every later one about 9);
- the policy head alone: at one of the periodic checkpoints its greedy action balances the pole
  for `HEAD_THRESHOLD` steps on average. On CartPole the search hides a broken policy target:
  with uniform policy targets the search still reached 200 by 1,024 env steps (measured), as two
  actions and a learned value are all it needs. The policy head is what the policy target
  trains, so it is played on its own.

Measured with these settings (seed 0 / 1 / 2): the first eval of 100 or more at 1,040 /
1,056 / 1,116 env steps, the best of the second half 169 / 200 / 200; the policy head first at
100 or more at train_iter 400 / 600 / 300 (about 1,700 / 2,500 / 1,300 env steps), its best
141 / 200 / 200. A zeroed value target leaves the evals of the second half at 9.3 and the policy
head at 21 at best; a uniform policy target leaves the evals at 200 but the policy head at 9.4
(it pushes one way).
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from tests.runlog import events
from zeropipe.algos.registry import build_network
from zeropipe.cli.evaluation import load_checkpoint_weights
from zeropipe.config import ExperimentConfig, load_config
from zeropipe.envs import env_spec
from zeropipe.pipeline.sync import train_sync

pytestmark = [pytest.mark.timeout(600), pytest.mark.usefixtures("no_leaks")]

SHIPPED_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "cartpole_muzero.yaml"
MAX_ENV_STEPS = 4000
EVAL_THRESHOLD = 100.0  # mean of 3 eval episodes (cut at 200 steps); a random policy gets ~22
HEAD_THRESHOLD = 100.0  # mean of HEAD_EPISODES greedy episodes (cut at 200 steps)
HEAD_EPISODES = 10
EPISODE_CUT = 200


def ci_config(run_dir, seed: int) -> ExperimentConfig:
    """The shipped CartPole config at CI size (see the module docstring)."""
    overrides = {
        "exp_name": str(run_dir),
        "seed": seed,
        "max_env_step": MAX_ENV_STEPS,
        "env.collector_env_num": 4,
        "env.evaluator_env_num": 3,
        "env.n_evaluator_episode": 3,
        "env.eval_max_episode_steps": EPISODE_CUT,
        "env.stop_value": 10**6,  # never: the run goes to MAX_ENV_STEPS, then the head is checked
        "policy.learner_num_threads": 1,  # deterministic, and fair to a 2-core CI machine
        "policy.learner_autocast": "none",  # float32 on every machine (auto: bf16 on some)
        "policy.num_simulations": 16,
        "policy.batch_size": 64,
        "policy.eval_freq": 100,
        "policy.save_ckpt_freq": 100,  # the checkpoints whose policy head is played
        "policy.model.latent_dim": 32,
        "policy.model.hidden_dim": 64,
        "policy.model.head_hidden_dim": 32,
    }
    return load_config(SHIPPED_CONFIG, [f"{key}={value}" for key, value in overrides.items()])


def policy_head_returns(cfg: ExperimentConfig, checkpoint) -> list[float]:
    """Play CartPole with the greedy action of the network's policy head alone (no search),
    episodes seeded 0..HEAD_EPISODES-1 and cut at EPISODE_CUT steps."""
    network = build_network(cfg, env_spec(cfg.env))
    network.load_state_dict(load_checkpoint_weights(checkpoint).state_dict)
    network.eval()
    env = gym.make("CartPole-v1", max_episode_steps=EPISODE_CUT)
    returns = []
    try:
        for episode in range(HEAD_EPISODES):
            obs, _ = env.reset(seed=episode)
            total, done = 0.0, False
            while not done:
                with torch.no_grad():
                    out = network.initial_inference(torch.as_tensor(obs)[None])
                action = int(out.policy_logits[0].argmax())
                obs, reward, terminated, truncated, _ = env.step(action)
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
    finally:
        env.close()
    return returns


def learning_outcome(run_dir, seed: int) -> tuple[list[tuple[int, float]], dict[int, float]]:
    """Train the CI config. Returns its evals (env step, reward mean) and the mean return of the
    policy head alone at each periodic checkpoint (train_iter → mean), newest first, up to the
    first that reaches HEAD_THRESHOLD."""
    cfg = ci_config(run_dir, seed)
    torch_threads = torch.get_num_threads()
    try:
        summary = train_sync(cfg, show_progress=False)
    finally:
        torch.set_num_threads(torch_threads)  # the run set one learner thread
    assert summary.stop_reason == "max_env_step"
    evals = [(e["envstep"], e["reward_mean"]) for e in events(run_dir) if e["event"] == "eval"]
    heads: dict[int, float] = {}
    checkpoints = {int(p.name.split("_")[1].split(".")[0]): p for p in run_dir.glob("ckpt/iter*")}
    for train_iter in sorted(checkpoints, reverse=True):
        heads[train_iter] = float(np.mean(policy_head_returns(cfg, checkpoints[train_iter])))
        if heads[train_iter] >= HEAD_THRESHOLD:
            break
    return evals, heads


def test_muzero_learns_cartpole_within_a_bounded_number_of_env_steps(tmp_path):
    evals, heads = learning_outcome(tmp_path / "run", seed=0)
    assert len(evals) >= MAX_ENV_STEPS // 1000  # the evals ran (about one per 400 env steps)
    late = [reward for envstep, reward in evals if envstep >= MAX_ENV_STEPS // 2]
    assert late and max(late) >= EVAL_THRESHOLD, f"no eval of the second half reached it: {evals}"
    assert max(heads.values()) >= HEAD_THRESHOLD, f"policy head alone {heads}; evals {evals}"
