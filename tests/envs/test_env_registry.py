"""Env ids, spaces and specs: errors name the problem in one line."""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np
import pytest

from zeropipe.config import EnvConfig
from zeropipe.envs import CHAIN_ENV_ID, EnvBatch, EnvError, check_env_id, env_spec
from zeropipe.envs.spec import scale_action


def test_unknown_id_names_the_id() -> None:
    with pytest.raises(EnvError, match=r"^unknown env id 'Foo-v9': not registered in gymnasium"):
        check_env_id("Foo-v9")


def test_misspelled_id_suggests_the_real_one() -> None:
    with pytest.raises(EnvError, match=r"did you mean 'CartPole-v1'"):
        check_env_id("CartPol-v1")


class _MultiDiscreteEnv(gym.Env):
    """A one-step env whose action space zeropipe does not support."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.MultiDiscrete([2, 3])

    def reset(self, *, seed=None, options=None):
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, True, False, {}


def test_unsupported_action_space_is_an_error_naming_it() -> None:
    env_id = "zeropipe_test/MultiDiscrete-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=_MultiDiscreteEnv)
    with pytest.raises(EnvError, match=r"action space MultiDiscrete .*does not support"):
        check_env_id(env_id)


def test_box_actions_are_accepted_with_their_bounds() -> None:
    spec = env_spec(EnvConfig(env_id="Pendulum-v1"))
    assert (spec.action_space_size, spec.action_dim, spec.continuous) == (1, 1, True)
    np.testing.assert_array_equal(spec.action_low, [-2.0])
    np.testing.assert_array_equal(spec.action_high, [2.0])


def test_box_actions_are_scaled_to_the_bounds() -> None:
    np.testing.assert_allclose(scale_action(np.array([-1.0, 0.0, 1.0]), -2.0, 2.0), [-2, 0, 2])
    np.testing.assert_allclose(scale_action(np.array([3.0]), np.array([0.0]), 1.0), [1.0])
    with EnvBatch(EnvConfig(env_id="Pendulum-v1"), num_envs=2, mode="collect", seed=0) as envs:
        envs.reset()
        step = envs.step(np.array([[1.0], [-0.5]], dtype=np.float32))
        assert step.frames.shape == (2, 3)
        with pytest.raises(EnvError, match=r"\[-1, 1\]"):
            envs.step(np.array([[1.5], [0.0]], dtype=np.float32))
        with pytest.raises(EnvError, match="float actions of shape"):
            envs.step(np.array([0, 1]))


def test_non_box_observations_are_rejected() -> None:
    with pytest.raises(
        EnvError, match=r"'FrozenLake-v1' has observation space Discrete.*needs Box"
    ):
        check_env_id("FrozenLake-v1")


def test_error_messages_are_one_line() -> None:
    for env_id in ("Foo-v9", "FrozenLake-v1"):
        with pytest.raises(EnvError) as info:
            check_env_id(env_id)
        assert "\n" not in str(info.value)


def test_batch_of_unknown_id_raises_env_error() -> None:
    with pytest.raises(EnvError, match="unknown env id"):
        EnvBatch(EnvConfig(env_id="Nope-v0"), num_envs=2, mode="collect", seed=0)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Acrobot-v1", CHAIN_ENV_ID, "ALE/Pong-v5"])
def test_known_ids_pass(env_id: str) -> None:
    check_env_id(env_id)


def test_vector_spec() -> None:
    spec = env_spec(EnvConfig(env_id="CartPole-v1", frame_stack=3))
    assert spec.frame_shape == (4,)
    assert spec.frame_dtype == np.float32
    assert spec.action_space_size == 2
    assert spec.frame_stack == 3


@pytest.mark.parametrize(("gray_scale", "channels"), [(True, 1), (False, 3)])
def test_atari_spec(gray_scale: bool, channels: int) -> None:
    cfg = EnvConfig(env_id="ALE/Pong-v5", gray_scale=gray_scale, obs_size=64, frame_stack=4)
    spec = env_spec(cfg)
    assert spec.frame_shape == (channels, 64, 64)
    assert spec.frame_dtype == np.uint8
    assert spec.action_space_size == 6  # minimal action set
    assert spec.frame_stack == 4


def test_a_mujoco_id_without_mujoco_names_the_extra(monkeypatch) -> None:
    # Whether or not mujoco is installed here: hide it (a None entry makes `import mujoco` fail)
    # and forget gymnasium's already imported MuJoCo env modules, so that they import afresh.
    monkeypatch.setitem(sys.modules, "mujoco", None)
    for name in [m for m in sys.modules if m.startswith("gymnasium.envs.mujoco")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(
        EnvError, match=r"'HalfCheetah-v5' needs MuJoCo.*pip install -e \"\.\[mujoco\]\""
    ):
        check_env_id("HalfCheetah-v5")
