"""The deterministic chain env, alone and through EnvBatch: returns, truncation, determinism."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from zeropipe.config import EnvConfig
from zeropipe.envs import CHAIN_ENV_ID, EnvBatch, EnvError


def _batch(num_envs: int = 2, mode: str = "collect", **overrides: object) -> EnvBatch:
    return EnvBatch(EnvConfig(env_id=CHAIN_ENV_ID, **overrides), num_envs, mode, seed=0)


def _one_hot(position: int, length: int = 5) -> np.ndarray:
    return np.eye(length, dtype=np.float32)[position]


def test_registered_env_walks_right_to_the_reward() -> None:
    env = gym.make(CHAIN_ENV_ID)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs, _one_hot(0))
    rewards = []
    for step in range(4):
        obs, reward, terminated, truncated, _ = env.step(1)
        rewards.append(reward)
        np.testing.assert_array_equal(obs, _one_hot(step + 1))
        assert terminated == (step == 3)
        assert not truncated
    assert rewards == [0.0, 0.0, 0.0, 1.0]
    env.close()


def test_left_end_is_a_wall() -> None:
    env = gym.make(CHAIN_ENV_ID)
    env.reset()
    obs, reward, terminated, _, _ = env.step(0)
    np.testing.assert_array_equal(obs, _one_hot(0))
    assert (reward, terminated) == (0.0, False)
    env.close()


def test_batch_returns_and_lengths_of_the_optimal_policy() -> None:
    with _batch() as batch:
        frames, masks = batch.reset()
        assert frames.shape == (2, 5) and frames.dtype == np.float32
        assert masks.shape == (2, 2) and masks.all()
        for _ in range(3):
            out = batch.step(np.ones(2, dtype=np.int64))
            assert not out.terminated.any() and not out.episode_returns
        out = batch.step(np.ones(2, dtype=np.int64))
        assert out.terminated.all() and not out.truncated.any()
        np.testing.assert_array_equal(out.rewards, [1.0, 1.0])
        np.testing.assert_array_equal(out.frames, [_one_hot(4), _one_hot(4)])
        assert out.episode_returns == {0: 1.0, 1: 1.0}
        assert out.episode_lengths == {0: 4, 1: 4}
        assert sorted(out.reset_frames) == [0, 1]
        np.testing.assert_array_equal(out.reset_frames[0], _one_hot(0))
        assert out.reset_action_masks[1].tolist() == [True, True]


def test_time_limit_is_truncation_not_termination() -> None:
    with _batch(num_envs=1) as batch:
        batch.reset()
        for _ in range(19):
            out = batch.step(np.zeros(1, dtype=np.int64))
            assert not out.truncated.any() and not out.terminated.any()
        out = batch.step(np.zeros(1, dtype=np.int64))
        assert out.truncated.tolist() == [True]
        assert out.terminated.tolist() == [False]
        assert out.episode_returns == {0: 0.0} and out.episode_lengths == {0: 20}
        assert 0 in out.reset_frames


@pytest.mark.parametrize(("mode", "limit"), [("collect", 3), ("eval", 6)])
def test_config_overrides_the_time_limit(mode: str, limit: int) -> None:
    with _batch(1, mode, max_episode_steps=3, eval_max_episode_steps=6) as batch:
        batch.reset()
        steps = 0
        out = None
        while out is None or not out.truncated[0]:
            out = batch.step(np.zeros(1, dtype=np.int64))
            steps += 1
        assert steps == limit


def test_two_batches_play_the_same_episodes() -> None:
    actions = np.random.default_rng(0).integers(0, 2, size=(60, 3))
    trajectories = []
    for _ in range(2):
        with _batch(num_envs=3) as batch:
            frames = [batch.reset()[0]]
            frames += [batch.step(step_actions).frames for step_actions in actions]
            trajectories.append(np.stack(frames))
    np.testing.assert_array_equal(trajectories[0], trajectories[1])


def test_misuse_raises_env_error() -> None:
    with _batch() as batch:
        with pytest.raises(EnvError, match="before reset"):
            batch.step(np.zeros(2, dtype=np.int64))
        batch.reset()
        with pytest.raises(EnvError, match=r"shape \(2,\)"):
            batch.step(np.zeros(3, dtype=np.int64))
        with pytest.raises(EnvError, match=r"\[0, 2\)"):
            batch.step(np.array([0, 2]))
    with pytest.raises(EnvError, match="mode"):
        EnvBatch(EnvConfig(env_id=CHAIN_ENV_ID), 1, "train", seed=0)  # type: ignore[arg-type]
