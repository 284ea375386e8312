"""Env ids, spaces and specs: errors name the problem in one line."""

from __future__ import annotations

import numpy as np
import pytest

from zeropipe.config.schema import EnvConfig
from zeropipe.envs import CHAIN_ENV_ID, EnvBatch, EnvError, check_env_id, env_spec


def test_unknown_id_names_the_id() -> None:
    with pytest.raises(EnvError, match=r"^unknown env id 'Foo-v9': not registered in gymnasium"):
        check_env_id("Foo-v9")


def test_misspelled_id_suggests_the_real_one() -> None:
    with pytest.raises(EnvError, match=r"did you mean 'CartPole-v1'"):
        check_env_id("CartPol-v1")


def test_continuous_actions_are_rejected() -> None:
    with pytest.raises(EnvError, match=r"'Pendulum-v1' has action space Box.*needs Discrete"):
        check_env_id("Pendulum-v1")


def test_non_box_observations_are_rejected() -> None:
    with pytest.raises(
        EnvError, match=r"'FrozenLake-v1' has observation space Discrete.*needs Box"
    ):
        check_env_id("FrozenLake-v1")


def test_error_messages_are_one_line() -> None:
    for env_id in ("Foo-v9", "Pendulum-v1", "FrozenLake-v1"):
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


def test_a_mujoco_id_without_mujoco_names_the_extra() -> None:
    try:
        import mujoco  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("mujoco is installed here")
    with pytest.raises(
        EnvError, match=r"'HalfCheetah-v5' needs MuJoCo.*pip install -e \"\.\[mujoco\]\""
    ):
        check_env_id("HalfCheetah-v5")
