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
from zeropipe.config import EnvConfig, ExperimentConfig
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
    """Plays an evaluation's episodes together, one env each, with an eval-mode network copy.

    Episode k of an evaluation is played by its own env, seeded ``seed + k``, so the episodes of
    one evaluation step as one batch and its search runs at B = n_evaluator_episode: an
    evaluation costs about one episode's searches. `env.evaluator_env_num`, when set, bounds the
    batch: the episodes then play in rounds of that many (episode k still seeded ``seed + k``).
    A finished episode's env is no longer searched; it idles (stepped with a legal action, its
    outcome ignored) until the round's last episode ends.

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
        self.num_episodes = cfg.env.n_evaluator_episode
        self.envs = EnvBatch(cfg.env, eval_batch_size(cfg.env), "eval", seed)
        self.search, self.roots = actor_search(
            p, network, len(self.envs.spec.frame_shape), self.envs.num_envs, device
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

        Returns:
            The outcome; `episode_returns[k]` is episode k's (seeded ``seed + k``).
        """
        start = time.perf_counter()
        rng = np.random.default_rng(self.seed)  # the same draws in every evaluation
        returns: list[float] = []
        steps = 0
        width = self.envs.num_envs
        for first in range(0, self.num_episodes, width):
            count = min(width, self.num_episodes - first)
            round_returns, round_steps = self._play_round(first, count, rng, progress, steps)
            returns.extend(round_returns)
            steps += round_steps
        mean = float(np.mean(returns))
        return EvalOutcome(
            reward_mean=mean,
            episode_returns=returns,
            policy_version=self.policy_version,
            stop=mean >= self.cfg.env.stop_value,
            envsteps=steps,
            duration_s=time.perf_counter() - start,
        )

    def _play_round(
        self,
        first: int,
        count: int,
        rng: np.random.Generator,
        progress: Callable[[int, int, int], None] | None,
        steps_before: int,
    ) -> tuple[list[float], int]:
        """Episodes first..first+count-1 on envs 0..count-1, one each, searched as one batch
        that shrinks as they end. Returns their returns (in episode order) and env steps."""
        n_env, frame_stack = self.envs.num_envs, self.cfg.env.frame_stack
        self.envs.reseed(self.seed + first)
        frames, masks = self.envs.reset()
        for i in range(n_env):
            self.roots.reset(i)
        actions = _idle_actions(self.envs, masks)  # [n] or [n, D]
        prev_actions = np.full_like(actions, -1)  # -1: an episode start
        stacks = [deque([f] * frame_stack, maxlen=frame_stack) for f in frames]
        returns: list[float | None] = [None] * count
        live = np.arange(count)  # envs whose episode is still being played
        steps = 0
        while live.size:
            ids = live.tolist()
            obs = np.stack([np.stack(stacks[i]) for i in ids])
            root = root_inference(self.search, self.roots, obs, prev_actions[live], ids)
            result = self.search.search_from(root, masks[live], self.search_cfg, rng, _EVAL)
            actions[live] = result.output.action
            step = self.envs.step(actions)
            prev_actions[live] = result.output.action
            self.roots.tick(ids)  # the family's periodic cache clearing, as in collection
            steps += live.size
            masks = step.action_masks.copy()
            for i, reset_mask in step.reset_action_masks.items():
                masks[i] = reset_mask  # an ended env auto-reset: what is legal for its idling
            for i in ids:
                stacks[i].append(step.frames[i])
                if i in step.episode_returns:
                    returns[i] = float(step.episode_returns[i])
            live = np.array([i for i in ids if returns[i] is None], dtype=np.int64)
            idle = np.setdiff1d(np.arange(n_env), live)
            actions[idle] = _idle_actions(self.envs, masks)[idle]
            if progress is not None:
                done = first + sum(r is not None for r in returns)
                progress(done, self.num_episodes, steps_before + steps)
        return [float(r) for r in returns if r is not None], steps

    def close(self) -> None:
        """Close the envs."""
        self.envs.close()


def eval_batch_size(env: EnvConfig) -> int:
    """Envs an evaluator steps together: every episode of an evaluation at once, or
    `env.evaluator_env_num` when that is set and smaller."""
    bound = env.evaluator_env_num or env.n_evaluator_episode
    return min(env.n_evaluator_episode, bound)


def _idle_actions(envs: EnvBatch, masks: np.ndarray) -> np.ndarray:
    """An action buffer for every env, holding a legal action for envs whose episode is over
    (their steps are ignored): the first legal action, or zeros for continuous actions."""
    if envs.spec.continuous:
        return np.zeros((envs.num_envs, envs.spec.action_dim), dtype=np.float32)
    return masks.argmax(axis=1).astype(np.int64)
