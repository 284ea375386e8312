"""Collector: plays a batch of envs with the search and returns finished GameSegments.

Runs in: driver (sync pipeline) or a collector worker process (async pipeline) — the same object
in both, which is how the two pipelines keep identical training semantics. Weights are loaded only
between `collect()` calls, so every collect call has exactly one policy version. (The async
pipeline's `collect_freshness: refresh` splits one collect into several calls, each with its own.)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from zeropipe.algos import registry
from zeropipe.algos.network_search import load_weights, root_inference
from zeropipe.buffer.segment import GameSegment
from zeropipe.config import ConfigError, ExperimentConfig
from zeropipe.envs import EnvBatch
from zeropipe.mcts import ActingParams
from zeropipe.models import Network
from zeropipe.workers.exploration import HeldExploration
from zeropipe.workers.trajectory import Trajectory


@dataclass(frozen=True)
class CollectOutcome:
    """One collect call's output."""

    segments: list[GameSegment]
    envstep_delta: int
    policy_version: int
    episode_returns: list[float] = field(default_factory=list)
    duration_s: float = 0.0


class Collector:
    """Owns `collector_env_num` envs, a collect-mode network copy and one trajectory per env.

    Args:
        cfg: the experiment config.
        network: a network of the learner's architecture (its weights are replaced by
            `load_weights`).
        seed: seed of the envs and of the search noise / action sampling.
        device: where its network runs.
    """

    def __init__(
        self, cfg: ExperimentConfig, network: Network, seed: int, device: str = "cpu"
    ) -> None:
        p = cfg.policy
        self.cfg = cfg
        self.envs = EnvBatch(cfg.env, cfg.env.collector_env_num, "collect", seed)
        _check_env_actions(cfg, self.envs)
        self.search, self.roots = registry.actor_search(
            p, network, len(self.envs.spec.frame_shape), self.envs.num_envs, device
        )
        self.search_cfg = p.search_config(p.num_simulations)
        self.rng = np.random.default_rng(seed + 7919)
        # the env's chance outcomes are stored only for the learner that reads them: a buffer
        # holds the same columns as the checkpoints written before the labels existed
        self.keep_chances = registry.algorithm(p.type).family.keeps_chance_labels(p)
        self.policy_version = -1
        self._next_episode_id = 0
        self.trajectories = [
            Trajectory(
                p.game_segment_length,
                p.num_unroll_steps + p.td_steps,
                cfg.env.frame_stack,
                p.use_priority,
            )
            for _ in range(self.envs.num_envs)
        ]
        self.prev_actions = np.full(self.envs.num_envs, -1, dtype=np.int64)  # -1: episode start
        # held random actions need per-env memory the search's ε-greedy has not: the collector
        # applies them after the search (which then runs with ε = 0)
        self.held = (
            HeldExploration(self.envs.num_envs, p.eps.hold_steps) if p.eps.hold_steps > 1 else None
        )
        frames, masks = self.envs.reset()
        for i, traj in enumerate(self.trajectories):
            traj.start_episode(frames[i], masks[i], self._new_episode_id())

    def load_weights(self, state_dict: dict[str, torch.Tensor], version: int) -> None:
        """Replace the network weights; call only between collects."""
        load_weights(self.search.network, self.roots, state_dict)
        self.policy_version = version

    def state_dict(self) -> dict[str, Any] | None:
        """Everything a later `collect` depends on besides the weights, as plain data: the envs
        mid-episode, the unemitted trajectories, the acting state and the RNG. None when an env
        cannot be captured (`EnvBatch.state_dict`); a resumed collector then starts new
        episodes."""
        envs = self.envs.state_dict()
        if envs is None:
            return None
        return {
            "envs": envs,
            "trajectories": [t.state_dict() for t in self.trajectories],
            "prev_actions": self.prev_actions.copy(),
            "rng": self.rng.bit_generator.state,
            "held": None if self.held is None else self.held.state_dict(),
            "roots": self.roots.state_dict(),
            "next_episode_id": self._next_episode_id,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a `state_dict()` of a collector built from the same config and seed."""
        self.envs.load_state_dict(state["envs"])
        for trajectory, saved in zip(self.trajectories, state["trajectories"], strict=True):
            trajectory.load_state_dict(saved)
        self.prev_actions = np.asarray(state["prev_actions"]).copy()
        self.rng.bit_generator.state = state["rng"]
        if self.held is not None and state["held"] is not None:
            self.held.load_state_dict(state["held"])
        self.roots.load_state_dict(state["roots"])
        self._next_episode_id = int(state["next_episode_id"])

    def collect(
        self,
        temperature: float,
        epsilon: float,
        num_segments: int | None = None,
        max_steps: int | None = None,
    ) -> CollectOutcome:
        """Play until at least `num_segments` segments are complete, or `max_steps` steps.

        Args:
            temperature: visit-count temperature of the action choice.
            epsilon: probability of a uniform legal action instead.
            num_segments: segments to complete (None: the config's `num_segments`).
            max_steps: return after this many steps (of every env) even with fewer segments
                complete; the envs and trajectories carry on in the next call, so calls that
                add up to a collect play what one call would with the same weights.

        Returns:
            The segments, the env steps taken (all envs) and the policy version used.
        """
        start = time.perf_counter()
        wanted = self.cfg.num_segments if num_segments is None else num_segments
        segments: list[GameSegment] = []
        returns: list[float] = []
        steps = 0
        while len(segments) < wanted and (max_steps is None or steps < max_steps):
            segments.extend(self._step(temperature, epsilon, returns))
            steps += 1
        return CollectOutcome(
            segments=segments,
            envstep_delta=steps * self.envs.num_envs,
            policy_version=self.policy_version,
            episode_returns=returns,
            duration_s=time.perf_counter() - start,
        )

    def _step(self, temperature: float, epsilon: float, returns: list[float]) -> list[GameSegment]:
        frames = np.stack([t.stacked_obs() for t in self.trajectories])
        masks = np.stack([t.action_mask() for t in self.trajectories])
        root = root_inference(self.search, self.roots, frames, self.prev_actions)
        search_epsilon = epsilon if self.held is None else 0.0
        acting = ActingParams("collect", temperature, search_epsilon)
        result = self.search.search_from(root, masks, self.search_cfg, self.rng, acting)
        out = result.output
        actions = out.action
        if self.held is not None:
            actions = self.held.apply(actions, masks, epsilon, self.rng)
        step = self.envs.step(actions)
        self.prev_actions = actions.copy()
        self.roots.tick(range(self.envs.num_envs))
        ready: list[GameSegment] = []
        sampled = out.sampled_actions  # [n, K(, D)] root sampled actions of a sampled search
        chances = step.chances if self.keep_chances else None
        for i, traj in enumerate(self.trajectories):
            ready += traj.append(
                actions[i],
                step.rewards[i],
                out.policy_target[i],
                out.root_value[i],
                result.predicted_value[i],
                step.frames[i],
                step.action_masks[i],
                None if sampled is None else sampled[i],
                None if chances is None else int(chances[i]),
            )
            if step.terminated[i] or step.truncated[i]:
                ready += traj.end_episode(bool(step.terminated[i]))
                self.prev_actions[i] = -1
                self.roots.reset(i)
                if self.held is not None:
                    self.held.reset(i)
                traj.start_episode(
                    step.reset_frames[i], step.reset_action_masks[i], self._new_episode_id()
                )
        returns.extend(step.episode_returns.values())
        return ready

    def _new_episode_id(self) -> int:
        self._next_episode_id += 1
        return self._next_episode_id - 1

    def close(self) -> None:
        """Close the envs."""
        self.envs.close()


def _check_env_actions(cfg: ExperimentConfig, envs: EnvBatch) -> None:
    """The env's action space and `policy.model.continuous_action_space` must agree.

    Raises:
        ConfigError: naming the env, its action kind and the fix (the envs are closed).
    """
    spec = envs.spec
    size = spec.action_dim if spec.continuous else spec.action_space_size
    try:
        registry.check_action_kind(cfg.policy, cfg.env.env_id, spec.continuous, size)
    except ConfigError:
        envs.close()
        raise
