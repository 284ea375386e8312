"""An env's state mid-episode as plain data, so that a resumed run continues the same episodes.

Runs in: collector (the sync pipeline checkpoints its collector). Only envs whose whole state is
plain Python and numpy data on the env objects themselves can be captured: gymnasium's classic
control envs (CartPole, Acrobot, Pendulum, MountainCar...) and zeropipe's own (Chain, 2048). The
state of every layer of the wrapper chain is taken: its plain attributes (numbers, strings,
arrays, tuples and lists of them; a time limit's step count) and the env's random generator.
Anything else (an emulator such as the ALE, a physics engine such as MuJoCo) keeps its state
inside a native object: `env_state` returns None, and a resumed run starts new episodes there.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np

RESTORABLE_MODULES = ("gymnasium.envs.classic_control.", "zeropipe.envs.")
_PLAIN = (bool, int, float, str, type(None), np.ndarray, np.generic)
_RNG = "_np_random"


def _plain(value: Any) -> bool:
    if isinstance(value, tuple | list):
        return all(_plain(item) for item in value)
    return isinstance(value, _PLAIN)


def _layers(env: gym.Env) -> list[Any]:
    """The wrapper chain, outermost first, down to the unwrapped env."""
    layers = [env]
    while isinstance(layers[-1], gym.Wrapper):
        layers.append(layers[-1].env)
    return layers


def restorable(env: gym.Env) -> bool:
    """Whether `env_state` can capture this env (see the module docstring)."""
    return type(env.unwrapped).__module__.startswith(RESTORABLE_MODULES)


def env_state(env: gym.Env) -> list[dict[str, Any]] | None:
    """The env's state: one dict of plain attributes per layer (None: not restorable)."""
    if not restorable(env):
        return None
    state = []
    for layer in _layers(env):
        attrs = {k: copy.deepcopy(v) for k, v in vars(layer).items() if _plain(v) and k != "env"}
        rng = vars(layer).get(_RNG)
        if isinstance(rng, np.random.Generator):
            attrs[_RNG] = {"bit_generator": rng.bit_generator.state}
        state.append(attrs)
    return state


def set_env_state(env: gym.Env, state: list[dict[str, Any]]) -> None:
    """Put `env` (made from the same config) into a state `env_state` took.

    Raises:
        ValueError: the state is of another wrapper chain.
    """
    layers = _layers(env)
    if len(layers) != len(state):
        raise ValueError(f"env state of {len(state)} layers for an env of {len(layers)}")
    for layer, attrs in zip(layers, state, strict=True):
        for key, value in attrs.items():
            if key == _RNG:
                bit_generator = getattr(np.random, value["bit_generator"]["bit_generator"])()
                bit_generator.state = value["bit_generator"]
                rng = np.random.Generator(bit_generator)
                setattr(layer, key, rng)
            else:
                setattr(layer, key, copy.deepcopy(value))
