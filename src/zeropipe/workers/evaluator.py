"""Evaluator: plays `n_evaluator_episode` full games greedily and reports their mean return.

Runs in: driver (sync pipeline) or an evaluator worker process (async pipeline). Evaluation is
reproducible: the envs and the search's generator are re-seeded identically for every evaluation,
and the search policy's eval mode adds no exploration noise and acts greedily (lowest index on
ties), so two evaluations of the same weights give the same score (user_lessons: the reference's
evaluation was not reproducible).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from zeropipe.algos.network_search import load_weights, root_inference
from zeropipe.algos.registry import actor_search
from zeropipe.config import ExperimentConfig
from zeropipe.envs import EnvBatch
from zeropipe.mcts import ActingParams
from zeropipe.models import Network


@dataclass(frozen=True)
class EvalOutcome:
    """One evaluation's outcome."""

    reward_mean: float
    episode_returns: list[float]
    policy_version: int
    stop: bool  # reward_mean >= env.stop_value
    envsteps: int
    duration_s: float


_EVAL = ActingParams("eval")


class Evaluator:
    """Owns `evaluator_env_num` eval-mode envs and an eval-mode network copy.

    Args:
        cfg: the experiment config.
        network: a network of the learner's architecture.
        seed: eval env seed; the same for every evaluation.
        device: where its network runs.
    """

    def __init__(
        self, cfg: ExperimentConfig, network: Network, seed: int, device: str = "cpu"
    ) -> None:
        p = cfg.policy
        self.cfg = cfg
        self.seed = seed
        self.envs = EnvBatch(cfg.env, cfg.env.evaluator_env_num, "eval", seed)
        n_env = self.envs.num_envs
        self.search, self.roots = actor_search(
            p, network, len(self.envs.spec.frame_shape), n_env, device
        )
        self.search_cfg = p.search_config(p.eval_num_simulations or p.num_simulations)
        self.policy_version = -1

    def load_weights(self, state_dict: dict[str, torch.Tensor], version: int) -> None:
        """Replace the network weights; call only between evaluations."""
        load_weights(self.search.network, self.roots, state_dict)
        self.policy_version = version

    def evaluate(self, progress: Callable[[int, int, int], None] | None = None) -> EvalOutcome:
        """Play the configured number of episodes and score them.

        Args:
            progress: called after every step with (episodes done, episodes, env steps).
        """
        start = time.perf_counter()
        n_env = self.envs.num_envs
        quota = _quotas(self.cfg.env.n_evaluator_episode, n_env)
        self.envs.reseed(self.seed)
        frames, masks = self.envs.reset()
        for i in range(n_env):
            self.roots.reset(i)
        prev_actions = np.full(n_env, -1, dtype=np.int64)
        stacks = [
            deque([f] * self.cfg.env.frame_stack, maxlen=self.cfg.env.frame_stack) for f in frames
        ]
        returns: list[float] = []
        done_count = np.zeros(n_env, dtype=np.int64)
        rng = np.random.default_rng(self.seed)  # the same draws in every evaluation
        steps = 0
        while (done_count < quota).any():
            obs = np.stack([np.stack(s) for s in stacks])
            root = root_inference(self.search, self.roots, obs, prev_actions)
            result = self.search.search_from(root, masks, self.search_cfg, rng, _EVAL)
            actions = result.output.action
            step = self.envs.step(actions)
            prev_actions = actions.copy()
            self.roots.tick(1)  # the family's periodic cache clearing, as in collection
            steps += int((done_count < quota).sum())
            masks = step.action_masks.copy()
            for i in range(n_env):
                stacks[i].append(step.frames[i])
                if i in step.reset_frames:
                    stacks[i].extend([step.reset_frames[i]] * self.cfg.env.frame_stack)
                    masks[i] = step.reset_action_masks[i]
                    prev_actions[i] = -1
                    self.roots.reset(i)
                if i in step.episode_returns and done_count[i] < quota[i]:
                    returns.append(float(step.episode_returns[i]))
                    done_count[i] += 1
            if progress is not None:
                progress(len(returns), int(quota.sum()), steps)
        mean = float(np.mean(returns))
        return EvalOutcome(
            reward_mean=mean,
            episode_returns=returns,
            policy_version=self.policy_version,
            stop=mean >= self.cfg.env.stop_value,
            envsteps=steps,
            duration_s=time.perf_counter() - start,
        )

    def close(self) -> None:
        """Close the envs."""
        self.envs.close()


def _quotas(n_episode: int, n_env: int) -> np.ndarray:
    """Episodes per env: n // env each, the remainder to the first envs (reference balance)."""
    quota = np.full(n_env, n_episode // n_env, dtype=np.int64)
    quota[: n_episode % n_env] += 1
    return quota
