"""EnvBatch on gymnasium vector envs: shapes, auto-reset, seeding, env-provided action masks."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from zeropipe.config import EnvConfig
from zeropipe.envs import EnvBatch

MASKED_ENV_ID = "zeropipe_test/Masked-v0"


class MaskedEnv(gym.Env[np.ndarray, int]):
    """Three actions; action 2 is legal only on even steps; ends after 3 steps."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(0.0, 10.0, shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(3)
        self._t = 0

    def _out(self) -> tuple[np.ndarray, dict[str, Any]]:
        mask = np.array([1, 1, self._t % 2 == 0], dtype=np.int8)
        return np.array([self._t], dtype=np.float32), {"action_mask": mask}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._t = 0
        return self._out()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._t += 1
        obs, info = self._out()
        return obs, 0.5, self._t == 3, False, info


if MASKED_ENV_ID not in gym.registry:
    gym.register(id=MASKED_ENV_ID, entry_point=MaskedEnv)


def _cartpole(num_envs: int, mode: str = "collect", seed: int = 0) -> EnvBatch:
    return EnvBatch(EnvConfig(env_id="CartPole-v1"), num_envs, mode, seed)  # type: ignore[arg-type]


def _play(batch: EnvBatch, num_steps: int, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    frames = [batch.reset()[0]]
    for _ in range(num_steps):
        frames.append(batch.step(rng.integers(0, 2, size=batch.num_envs)).frames)
    return frames


def test_cartpole_shapes() -> None:
    with _cartpole(8) as batch:
        assert batch.spec.frame_shape == (4,)
        frames, masks = batch.reset()
        assert frames.shape == (8, 4) and frames.dtype == np.float32
        assert masks.shape == (8, 2) and masks.dtype == bool and masks.all()
        out = batch.step(np.zeros(8, dtype=np.int64))
        assert out.frames.shape == (8, 4) and out.frames.dtype == np.float32
        assert out.rewards.shape == (8,) and out.rewards.dtype == np.float32
        assert out.terminated.dtype == bool and out.truncated.dtype == bool
        assert out.action_masks.shape == (8, 2)


def test_cartpole_auto_reset_reports_final_and_first_frames() -> None:
    seen_reset = 0
    with _cartpole(8) as batch:
        batch.reset()
        lengths = np.zeros(8, dtype=np.int64)
        for _ in range(60):  # always pushing left ends every pole within ~10 steps
            out = batch.step(np.zeros(8, dtype=np.int64))
            lengths += 1
            done = np.flatnonzero(out.terminated | out.truncated)
            assert sorted(out.reset_frames) == done.tolist()
            assert sorted(out.reset_action_masks) == done.tolist()
            assert sorted(out.episode_returns) == done.tolist()
            for index in done:
                # the frame is the terminal one: the pole has fallen past 12 degrees
                assert abs(out.frames[index, 2]) > 0.2094
                # the reset frame is a fresh start: every state variable within ±0.05
                assert np.abs(out.reset_frames[index]).max() <= 0.05
                assert out.episode_returns[index] == float(lengths[index])
                assert out.episode_lengths[index] == lengths[index]
                lengths[index] = 0
                seen_reset += 1
    assert seen_reset >= 8


def test_same_seed_same_episodes_different_seed_different() -> None:
    with _cartpole(3, seed=5) as first, _cartpole(3, seed=5) as second:
        np.testing.assert_array_equal(np.stack(_play(first, 40)), np.stack(_play(second, 40)))
    with _cartpole(3, seed=5) as first, _cartpole(3, seed=6) as other:
        assert not np.array_equal(first.reset()[0], other.reset()[0])


def test_env_i_is_seeded_seed_plus_i() -> None:
    with _cartpole(3, seed=10) as wide, _cartpole(1, seed=12) as single:
        np.testing.assert_array_equal(wide.reset()[0][2], single.reset()[0][0])


def test_collect_continues_the_stream_eval_repeats_it() -> None:
    with _cartpole(2, "collect") as collect:
        assert not np.array_equal(collect.reset()[0], collect.reset()[0])
        collect.reseed()
        with _cartpole(2, "collect") as fresh:
            np.testing.assert_array_equal(collect.reset()[0], fresh.reset()[0])
    with _cartpole(2, "eval") as evaluation:
        first = np.stack(_play(evaluation, 40))
        np.testing.assert_array_equal(first, np.stack(_play(evaluation, 40)))
        evaluation.reseed(seed=100)
        assert not np.array_equal(first[0], evaluation.reset()[0])


def test_action_mask_from_info() -> None:
    with EnvBatch(EnvConfig(env_id=MASKED_ENV_ID), 2, "collect", seed=0) as batch:
        _, masks = batch.reset()
        assert masks.tolist() == [[True, True, True]] * 2
        out = batch.step(np.array([0, 2]))
        assert out.action_masks.tolist() == [[True, True, False]] * 2
        batch.step(np.array([1, 1]))
        out = batch.step(np.array([2, 0]))
        assert out.terminated.all()
        assert out.action_masks.tolist() == [[True, True, False]] * 2
        assert out.reset_action_masks[0].tolist() == [True, True, True]
        assert out.episode_returns == {0: 1.5, 1: 1.5}
